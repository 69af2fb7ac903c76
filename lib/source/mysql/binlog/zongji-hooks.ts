import type ZongJi from '@vlasky/zongji';
import type { BinlogEvent } from '@vlasky/zongji';

/*
 * The one hook sluice adds to zongji (patches/@vlasky+zongji+0.9.0.patch): `setEventParser`, and
 * what zongji hands the class it registers, typed here rather than in the patch.
 */

/** zongji's packet parser (lib/reader.js) as an event class reads its event: the packet's bytes, the offset reached and the end of the event (its checksum included). */
export interface PacketParser {
  _buffer: Buffer;
  _offset: number;
  _packetEnd: number;
  parseUnsignedNumber(bytes: number): number;
  parseLengthCodedNumber(): number | null;
  parseBuffer(length?: number): Buffer;
}

/** What an event class is constructed with, besides the packet parser: the event's common header. */
export interface EventParserOptions {
  timestamp: number;
  nextPosition: number;
  size: number;
  eventType: number;
  serverId: number;
}

/** An event class zongji may be given: constructed as zongji's own are. */
export type EventParser = new (parser: PacketParser, options: EventParserOptions, zongji: ZongJi) => Omit<BinlogEvent, 'dump'>;

/**
 * Makes `zongji` parse events of `typeCode` with `EventClass` instead of its own class: constructed
 * as zongji's are, at the parser's offset after the common header; its name is the event's name.
 */
export function setEventParser(zongji: ZongJi, typeCode: number, EventClass: EventParser): void {
  (zongji as ZongJi & { setEventParser(typeCode: number, EventClass: EventParser): void }).setEventParser(typeCode, EventClass);
}
