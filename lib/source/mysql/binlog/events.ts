import type {
  AnnotateRowsEvent,
  AnonymousGtidEvent,
  BinlogCheckpointEvent,
  FormatEvent,
  GtidEvent,
  HeartbeatEvent,
  IntVarEvent,
  MariadbGtidEvent,
  MariadbGtidListEvent,
  PreviousGtidsEvent,
  QueryEvent,
  RotateEvent,
  RowsQueryEvent,
  StartEncryptionEvent,
  TableMapEntry,
  UnknownEvent,
  XaPrepareEvent,
  XidEvent,
} from '@vlasky/zongji';
import type { Row } from '../../../format/event.ts';
import type { TableMap } from './table-map.ts';
import type { TransactionPayload } from './transaction-payload.ts';

/*
 * The binlog events the reader and the per-event guards consume, as zongji delivers them: zongji's
 * own classes for the control events, sluice's for TABLE_MAP and TRANSACTION_PAYLOAD, and the rows
 * events as what is read of them (whichever class decodes them). zongji names each event by
 * `getTypeName()`, a method TypeScript cannot narrow on: `named` pairs an event with its name once,
 * so a switch on the name narrows the event.
 */

/** What the reader and the guards read of a rows event, whichever class decodes it. */
interface RowsEventFields {
  readonly timestamp: number;
  readonly nextPosition: number;
  readonly gtid?: string;
  readonly tableId: number;
  /** The stream's TABLE_MAPs by table id: the event's table, its columns among them. */
  readonly tableMap: Record<number, TableMapEntry>;
  readonly numberOfColumns: number;
  /** Bit i = column i is in the (before) image. */
  readonly columns_present_bitmap?: Buffer;
  /** Of an update: bit i = column i is in the after image. */
  readonly columns_present_bitmap2?: Buffer;
}

/** WRITE_ROWS: the inserted rows. */
export interface WriteRowsEvent extends RowsEventFields {
  getTypeName(): 'WriteRows';
  readonly rows: Row[];
}

/** DELETE_ROWS: the deleted rows. */
export interface DeleteRowsEvent extends RowsEventFields {
  getTypeName(): 'DeleteRows';
  readonly rows: Row[];
}

/** UPDATE_ROWS (and PARTIAL_UPDATE_ROWS): each row's before and after images. */
export interface UpdateRowsEvent extends RowsEventFields {
  getTypeName(): 'UpdateRows';
  readonly rows: { before: Row; after: Row }[];
}

export type RowsEvent = WriteRowsEvent | DeleteRowsEvent | UpdateRowsEvent;

/** Every event the reader is handed, by its `getTypeName()`. */
export type ReaderEvent =
  | RotateEvent
  | FormatEvent
  | GtidEvent
  | AnonymousGtidEvent
  | PreviousGtidsEvent
  | XidEvent
  | QueryEvent
  | IntVarEvent
  | TableMap
  | RowsEvent
  | TransactionPayload
  | HeartbeatEvent
  | MariadbGtidEvent
  | MariadbGtidListEvent
  | BinlogCheckpointEvent
  | AnnotateRowsEvent
  | RowsQueryEvent
  | StartEncryptionEvent
  | XaPrepareEvent
  | UnknownEvent;

export type EventName = ReturnType<ReaderEvent['getTypeName']>;

/** An event with its name beside it: a switch on `type` narrows `ev`. */
export type NamedEvent = { [N in EventName]: { readonly type: N; readonly ev: Extract<ReaderEvent, { getTypeName(): N }> } }[EventName];

/** A rows event with its name. */
export type NamedRowsEvent = Extract<NamedEvent, { type: 'WriteRows' | 'UpdateRows' | 'DeleteRows' }>;

/** Pairs an event with its name, `type` as the caller read it (`getTypeName()`, which names the event's class). */
export function named(ev: ReaderEvent, type: string): NamedEvent {
  return { type, ev } as NamedEvent;
}
