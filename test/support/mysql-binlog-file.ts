import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import ZongJi from '@vlasky/zongji';
import { registerDecoders } from '../../lib/source/mysql/binlog/decoders.ts';
import { payloadEventPackets } from '../../lib/source/mysql/binlog/transaction-payload.ts';
import { type EventHeader, eventHeader } from '../../lib/source/mysql/binlog-dump.ts';
// zongji's package exports only its entry; the test drives its packet layer directly.
// @ts-expect-error: a file of zongji's, without types
import initBinlogClass from '../../node_modules/@vlasky/zongji/lib/sequence/binlog.js';
import { readBinlogFile } from './mysql-replay/binlog-file.ts';

/**
 * Decodes a recorded MySQL binlog file with zongji's own packet layer (lib/sequence/binlog.js, the
 * path a live stream takes: the same event classes, filters, GTID bookkeeping and compressed
 * transactions' inner events) without a server: each event of the file is handed to it as the
 * packet a server would send. What zongji's connection handler does around it is kept to the
 * part decoding needs: a TABLE_MAP with FULL metadata describes its columns itself; one without is
 * answered from `columns` (as INFORMATION_SCHEMA would be), after a pause of the "connection", as
 * zongji's lookup pauses it. The file is read by the replay server's reader; test/mysql/ drives
 * the same files through that server and a real connection.
 */

/** The fixture folder: SLUICE_MYSQL_FIXTURES, else ../shared/fixtures/mysql-binlogs from the repository root. */
export function mysqlFixtures(): string {
  const dir = process.env.SLUICE_MYSQL_FIXTURES ?? resolve(process.cwd(), '../shared/fixtures/mysql-binlogs');
  if (!existsSync(dir)) throw new Error(`MySQL binlog fixtures not found at ${dir}: set SLUICE_MYSQL_FIXTURES to the folder`);
  return dir;
}

/** One INFORMATION_SCHEMA.COLUMNS row, as zongji's lookup reads it. */
export interface ColumnRow {
  COLUMN_NAME: string;
  COLUMN_TYPE: string;
  CHARACTER_SET_NAME?: string | null;
  COLLATION_NAME?: string | null;
  COLUMN_COMMENT?: string;
}

/**
 * A zongji event; `packetHeader` is the common header of the packet it was delivered from, and
 * `inPayload` says whether that packet holds one of a compressed transaction's events, as the binlog
 * reader's dump sees them (binlog-dump.ts), for feeding the reader as a stream would.
 */
// biome-ignore lint/suspicious/noExplicitAny: zongji events are untyped
export type DecodedEvent = any;

export interface DecodeOptions {
  /** Columns of tables whose TABLE_MAPs lack FULL metadata, by `db.table`. */
  columns?: Record<string, ColumnRow[]>;
  /** Called for each delivered event (after zongji's own handling), in order. */
  onEvent?: (event: DecodedEvent) => void;
  /** zongji's includeEvents / excludeEvents. */
  includeEvents?: string[];
}

/** Every event of `file` (a fixture name or path) that zongji delivers, in order. */
export async function decodeBinlogFile(file: string, options: DecodeOptions = {}): Promise<DecodedEvent[]> {
  const recorded = readBinlogFile(file.includes('/') ? file : join(mysqlFixtures(), file));
  const events: DecodedEvent[] = [];
  const errors: Error[] = [];
  // A ZongJi with the constructor's state and none of its connections.
  const zongji = Object.create(ZongJi.prototype);
  Object.assign(zongji, {
    _events: {},
    _eventsCount: 0,
    tableMap: {},
    _warnedUnsupported: new Set(),
    _currentGtid: undefined,
    _executedGtids: null,
    _pendingGtid: undefined,
    _positionFrozen: false,
    _seedGtidsFromStream: false,
    useChecksum: recorded.checksum === 'CRC32',
    isMariaDb: false,
    stopped: false,
    options: {},
  });
  zongji._filters({ includeEvents: options.includeEvents });
  registerDecoders(zongji);
  zongji.on('error', (error: Error) => errors.push(error));
  const pending: Promise<void>[] = [];
  let resumed: () => void = () => undefined;
  // Methods on the prototype, as mysql2's are: zongji may shadow resume() for a while.
  class Connection {
    config = { dateStrings: true, timezone: 'Z', jsonStrings: true, supportBigNumbers: true, bigNumberStrings: true };
    _paused = false;
    pause() {
      this._paused = true;
    }
    resume() {
      this._paused = false;
      resumed();
    }
  }
  const connection = new Connection();
  zongji.connection = connection;
  let header: EventHeader | undefined;
  let inPayload = false;
  const deliver = (event: DecodedEvent) => {
    event.packetHeader = header;
    event.inPayload = inPayload;
    options.onEvent?.(event);
    events.push(event);
  };
  const handler = (error: Error | undefined, event: DecodedEvent) => {
    if (error) {
      errors.push(error);
      return;
    }
    if (!event || event._filtered) return;
    if (event.getTypeName() === 'TableMap') {
      if (event.hasSelfDescribingMetadata()) {
        zongji.tableMap[event.tableId] = { columnSchemas: event.buildColumnSchemas(), parentSchema: event.schemaName, tableName: event.tableName };
        event.updateColumnInfo();
      } else {
        const name = `${event.schemaName}.${event.tableName}`;
        const rows = options.columns?.[name];
        if (!rows) throw new Error(`${file}: ${name} has no FULL metadata; give its columns`);
        connection.pause();
        pending.push(
          new Promise((done) =>
            setImmediate(() => {
              zongji.tableMap[event.tableId] = { columnSchemas: rows.map((r) => ({ ...r })), parentSchema: event.schemaName, tableName: event.tableName };
              event.updateColumnInfo();
              deliver(event);
              connection.resume();
              done();
            }),
          ),
        );
        return;
      }
    }
    deliver(event);
  };
  const binlog = new (initBinlogClass(zongji))(handler);
  // As a server sends each event: after the packet's OK byte; a compressed transaction's events as
  // the stream's connection hands them over (transaction-payload.ts `deliverPayloadEvents`).
  const packets = recorded.events.flatMap((event) => {
    const packet = Buffer.concat([Buffer.alloc(1), event.bytes]);
    const inner = payloadEventPackets(packet, 0, packet.length, zongji.useChecksum);
    return inner ? inner.map((buffer, i) => ({ buffer, inPayload: i < inner.length - 1 })) : [{ buffer: packet, inPayload: false }];
  });
  // Packets arriving while the connection is paused wait, as mysql2 queues them.
  for (const next of packets) {
    while (connection._paused) await new Promise<void>((resume) => (resumed = resume));
    const { buffer } = next;
    const packet = { buffer, offset: 0, end: buffer.length, isEOF: () => false, isError: () => false };
    header = eventHeader(buffer, 0, buffer.length);
    inPayload = next.inPayload;
    binlog.binlogData(packet, connection);
  }
  while (connection._paused) await new Promise<void>((resume) => (resumed = resume));
  await Promise.all(pending);
  if (errors.length) throw errors[0];
  return events;
}

/**
 * The eight documents of the json-opaque fixture as MySQL prints them: DECIMAL as a number with its
 * scale, temporal values as quoted text with 6 fraction digits (json_dom.cc, wrapper_to_string). The
 * fixture README lists rust_mysql_common's own conversion, with DECIMAL quoted.
 */
export const JSON_OPAQUE_DOCUMENTS = [
  '{"a": "base64:type15:VQ=="}',
  '{"b": "2012-03-18"}',
  '{"c": "2012-03-18 11:30:45.000000"}',
  '{"c": "87:31:46.654321"}',
  '{"d": 123.456}',
  '{"e": 9.00}',
  '{"e": [0, 1, true, false]}',
  '{"e": null}',
];
