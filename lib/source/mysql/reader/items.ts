import type { BinlogPosition } from '../../../core/position.ts';
import type { EncodedShape, Row } from '../../../format/event.ts';
import type { TableMapColumn } from '../../../schema/column-type.ts';

/* What the binlog reader (binlog-reader.ts) hands its consumer, and what its items carry. */

/**
 * What the reader emits, strictly in binlog order. Only `commit` and `progress` carry a position,
 * and both are transaction boundaries: resuming inside a transaction silently drops rows, so no
 * other point is ever exposed.
 */
export type BinlogItem =
  | { kind: 'begin'; file: string; pos: number; gtid: string | null; serverId: number | null; tsMs: number; commitUs?: number }
  | { kind: 'rows'; op: 'insert' | 'delete'; shape: EncodedShape; map: TableMapStructure; rows: Row[]; pos: number; tsMs: number }
  | { kind: 'rows'; op: 'update'; shape: EncodedShape; map: TableMapStructure; rows: { before: Row; after: Row }[]; pos: number; tsMs: number }
  /**
   * A statement logged as text, inside the current transaction group: `ddl` when the group is a DDL
   * statement's (MariaDB flags it in the GTID event; on MySQL a statement outside BEGIN…COMMIT, or
   * the `CREATE TABLE … START TRANSACTION` that opens an atomic CREATE TABLE … SELECT's rows), else
   * DML written by a session in STATEMENT or MIXED format. Never logged: it may hold secrets.
   */
  | { kind: 'query'; ddl: boolean; db: string; query: string; sqlMode: SqlModeFlags; position: BinlogPosition; tsMs: number }
  /** A transaction (or a DDL statement) ended; `position` is right after it. */
  | { kind: 'commit'; position: BinlogPosition }
  /** A non-transactional event between transactions (rotate, checkpoint, heartbeat): the position moved. */
  | { kind: 'progress'; position: BinlogPosition; tsMs: number }
  /** Nothing arrived for `idleMs`: lets an idle consumer stop or heartbeat on time. */
  | { kind: 'idle' };

/** An item of rows. */
export type RowsItem = Extract<BinlogItem, { kind: 'rows' }>;

/** The table as its TABLE_MAP describes it (binlog_row_metadata=FULL), to check it against its schema version. */
export interface TableMapStructure {
  readonly columns: readonly TableMapColumn[];
  readonly key: readonly number[] | null;
}

/** The sql_mode flags that change how a statement's text reads, from the Query event (undefined: unknown). */
export interface SqlModeFlags {
  readonly ansiQuotes?: boolean;
  readonly noBackslashEscapes?: boolean;
  /** STRICT_TRANS_TABLES or STRICT_ALL_TABLES: an ALTER that would turn a NULL into a default fails instead (so a logged one turned none). */
  readonly strict?: boolean;
  /** REAL_AS_FLOAT: REAL is FLOAT, not DOUBLE. */
  readonly realAsFloat?: boolean;
  /**
   * ORACLE or MAXDB mode is on, or may be: type names then mean other types (DATE is DATETIME,
   * NUMBER, VARCHAR2 and CLOB exist; TIMESTAMP is DATETIME). Byte 1 of the mode holds both bits and,
   * in both modes, NO_FIELD_OPTIONS' high bit, which zongji's decoding loses: unreadable counts as on.
   */
  readonly foreignTypes?: boolean;
}
