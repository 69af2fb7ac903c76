import { type BinlogPosition, formatPosition } from '../../core/position.ts';
import { formatTableRef, type TableRef } from '../../core/table-ref.ts';
import { ErrorCode, SluiceError } from '../../errors.ts';
import { type NamedEvent, named, type ReaderEvent, type RowsEvent } from './binlog/events.ts';
import { isAtomicCreateSelect } from './ddl/atomic-create-select.ts';
import type { CommentRules } from './ddl/lexer.ts';
import { writtenTables } from './ddl/written-tables.ts';
import type { BinlogHistories } from './history.ts';
import type { SqlConnection } from './server.ts';

/*
 * Per-event guards on what the binlog reader assumes, checked for every event of the stream
 * (a session can change its own settings at any time; the server's, checked by preflight, are only
 * the defaults):
 *
 *   - every rows event of a captured table carries full row images (binlog_row_image=FULL);
 *     MINIMAL and NOBLOB leave columns out, which zongji reports as NULL;
 *   - no captured rows sit in an XA transaction prepared in two phases (its outcome comes later, in
 *     another event group);
 *   - (compressed transactions, MySQL 8 TRANSACTION_PAYLOAD, are checked event by event like any
 *     other: zongji delivers their events, then the payload event, whose end is their end; partial
 *     JSON updates, PARTIAL_UPDATE_ROWS, arrive as updates with the diff applied to the before image)
 *   - no change to a captured table is logged as a statement (a session with binlog_format STATEMENT
 *     or MIXED writes DML as text, without its rows): the tables a statement writes are read from it
 *     (ddl/written-tables.ts), and one that cannot be read counts as writing every captured table
 *     (MySQL's atomic CREATE TABLE … SELECT, a DDL inside BEGIN … COMMIT, is no such statement:
 *     ddl/atomic-create-select.ts);
 *   - the stream reads the binlog history the stored position belongs to (lib/source/mysql/history.ts).
 *
 * A violation stops the stream with a fatal error before the transaction's commit item is
 * emitted, so the stored position never moves past it. To name the exact skip position and every
 * captured table the transaction changed, the rest of the transaction is read (and dropped) first.
 */

/** What the reader does with an event: handle it (undefined), drop it, or stop with the error. */
export type Verdict = undefined | 'drop' | SluiceError | Promise<SluiceError>;

/** MySQL column types whose values binlog_row_image=NOBLOB leaves out when unchanged. */
const BLOB_TYPES = new Set([245 /* JSON */, 249, 250, 251, 252 /* (TINY|MEDIUM|LONG)BLOB/TEXT */, 255 /* GEOMETRY */]);

/** Statements' executable comments are read as a MariaDB 10.0 server would (the rules matter only to DDL). */
const STATEMENT_COMMENTS: CommentRules = { version: 100000, mariadbComments: true, sixDigitVersions: true, mysqlOnlyVersions: false };

/** How long to keep reading a violating transaction to find its end before stopping without it. */
const DRAIN_MS = 10_000;

interface Group {
  /** Where the group starts: the boundary before its first event, where the stored position stays. */
  start: BinlogPosition;
  gtid?: string;
  /** A DDL statement's group (MariaDB's GTID flag); undefined until a MySQL group's first statement tells (or its second: an atomic CREATE TABLE … SELECT). */
  ddl: boolean | undefined;
  /** MariaDB GTID flag PREPARED_XA, or (MySQL) an `XA START` statement. */
  xa: boolean;
  /** Captured tables the group changes, by `groupKey` (their TABLE_MAPs: zongji drops other tables' maps). */
  tables: Map<string, TableRef>;
}

/** A violation found inside a transaction: reported once the transaction's end is known. */
interface Violation {
  code: ErrorCode;
  /** What is wrong, as the sentence's subject. */
  what: string;
  /** How to keep it from happening again. */
  fix: string;
  /** Shown instead of the tables the group changed, when they cannot be known. */
  tablesUnknown?: boolean;
  /** Tables changed without a TABLE_MAP (a statement's), added to the group's. */
  tables?: readonly TableRef[];
  since: number;
}

/**
 * A table's key in a group's map, made at every TABLE_MAP: names cannot hold U+0000, so joining
 * with it is unambiguous and cheaper than `tableKey`'s JSON.
 */
const groupKey = (ref: TableRef) => `${ref.db}\u0000${ref.table}`;

export class StreamGuard {
  private group: Group | undefined;
  private violation: Violation | undefined;
  /** The end of the last event with a position: where the next group starts (two fields: it moves at every event). */
  private lastFile: string;
  private lastPos: number;
  private stopped = false;

  constructor(
    start: BinlogPosition,
    private readonly options: {
      /** The history check, with a connection to explain a mismatch (the reader's helper connection). */
      history?: { check: BinlogHistories; sql: () => Promise<SqlConnection> };
      /** Whether a table is captured (the include/exclude filters). */
      accept?: (db: string, table: string) => boolean;
      clock?: () => number;
      /** Check the history only: a scan that reads transactions it will not write (a reset's skipped range). */
      historyOnly?: boolean;
    } = {},
  ) {
    this.lastFile = start.file;
    this.lastPos = start.pos;
  }

  private last(): BinlogPosition {
    return { file: this.lastFile, pos: this.lastPos };
  }

  private get now(): number {
    return (this.options.clock ?? Date.now)();
  }

  /**
   * Checks one event before the reader handles it; `file` is the binlog file the event is in, `end`
   * its true end offset (undefined for one without its own: inside a compressed transaction, a
   * ROTATE, an out-of-sequence FORMAT_DESCRIPTION; see binlog-dump.ts).
   */
  check(ev: ReaderEvent, type: string, file: string, end: number | undefined): Verdict {
    if (this.stopped) return 'drop';
    const verdict = this.inspect(ev, named(ev, type), file, end);
    if (end !== undefined && type !== 'Rotate') {
      this.lastFile = file;
      this.lastPos = end;
    }
    if (verdict && verdict !== 'drop') this.stopped = true;
    return verdict;
  }

  private inspect(ev: ReaderEvent, event: NamedEvent, file: string, end: number | undefined): Verdict {
    const history = this.options.history;
    const mismatch = history?.check.onEvent(ev, event.type, file);
    if (history && mismatch) return history.check.explain(history.sql, mismatch);
    if (this.options.historyOnly) return undefined;
    if (this.violation) return this.drain(event, file, end);
    switch (event.type) {
      case 'MariadbGtid':
        this.group = { start: this.last(), gtid: gtidOf(event.ev), ddl: event.ev.isDdl === true, xa: event.ev.preparedXa === true, tables: new Map() };
        return undefined;
      case 'Gtid':
      case 'AnonymousGtid':
        // MySQL's GTID events carry no XA flag: an `XA START` statement tells.
        this.group = { start: this.last(), gtid: gtidOf(event.ev), ddl: undefined, xa: false, tables: new Map() };
        return undefined;
      case 'Query':
        return this.statement(event.ev.query, event.ev.schema, file, end);
      case 'TableMap':
        this.mapped(event.ev);
        return undefined;
      case 'WriteRows':
      case 'UpdateRows':
      case 'DeleteRows':
        return this.rows(event, file, end);
      default:
        return undefined;
    }
  }

  /**
   * A Query event: transaction control, a DDL (the capture's to classify), or DML logged as a
   * statement, which stops the stream if it writes a captured table (or cannot be read).
   */
  private statement(text: string, schema: string | undefined, file: string, end: number | undefined): Verdict {
    const query = String(text);
    if (/^\s*(BEGIN|XA\s+START)\b/i.test(query)) {
      if (this.group) {
        this.group.ddl = false;
        if (/^\s*XA/i.test(query)) this.group.xa = true;
      }
      return undefined;
    }
    if (/^\s*(COMMIT|ROLLBACK|SAVEPOINT|RELEASE|XA)\b/i.test(query)) return undefined;
    // A MySQL group (or one with no GTID event) whose first statement is not BEGIN is that statement's: a DDL.
    if (!this.group || this.group.ddl === undefined) {
      if (this.group) this.group.ddl = true;
      return undefined;
    }
    if (this.group.ddl) return undefined;
    // MySQL's atomic CREATE TABLE … SELECT: the group is the DDL's, its rows follow (checked as any).
    if (isAtomicCreateSelect(query)) {
      this.group.ddl = true;
      return undefined;
    }
    const accept = this.options.accept;
    if (!accept) return undefined;
    const written = writtenTables(query, schema ?? '', STATEMENT_COMMENTS);
    const captured = written?.filter((t) => accept(t.db, t.table));
    if (captured && !captured.length) return undefined;
    return this.violate(file, end, {
      code: ErrorCode.STATEMENT_DML,
      what: `a change ${captured ? `to ${captured.map(formatTableRef).join(', ')} ` : 'sluice cannot read the tables of '}logged as a statement, without its rows (binlog_format=STATEMENT or MIXED in the session that wrote it)`,
      fix: "have the writer use binlog_format=ROW (SET SESSION binlog_format = 'ROW', or drop the setting from its connection options; ROW globally)",
      ...(captured ? { tables: captured } : { tablesUnknown: true }),
    });
  }

  private mapped(ev: { readonly schemaName: string; readonly tableName: string }): void {
    const ref: TableRef = { db: ev.schemaName, table: ev.tableName };
    this.group?.tables.set(groupKey(ref), ref);
  }

  private rows({ type, ev }: Extract<NamedEvent, { type: 'WriteRows' | 'UpdateRows' | 'DeleteRows' }>, file: string, end: number | undefined): Verdict {
    if (this.group?.xa) {
      const table = rowsTable(ev);
      return this.violate(file, end, {
        code: 'XA_PREPARED',
        what: `changes to ${table} in an XA transaction prepared in two phases (XA PREPARE), whose commit or rollback comes later in the binlog`,
        fix: 'use plain transactions (or XA COMMIT … ONE PHASE) for captured tables; skip this one only after it was committed or rolled back (XA RECOVER no longer lists it)',
      });
    }
    const missing = missingColumns(ev, type);
    if (!missing.length) return undefined;
    const columns: readonly { name: string; type: number }[] = ev.tableMap?.[ev.tableId]?.columns ?? [];
    const noblob = missing.every((i) => BLOB_TYPES.has(columns[i]?.type ?? -1));
    const setting = noblob ? 'NOBLOB' : 'MINIMAL (or FULL_NODUP)';
    const names = missing.map((i) => columns[i]?.name ?? `#${i + 1}`).join(', ');
    const op = type === 'WriteRows' ? 'an insert' : type === 'UpdateRows' ? 'an update' : 'a delete';
    const table = rowsTable(ev);
    return this.violate(file, end, {
      code: 'ROW_IMAGE_PARTIAL',
      what: `${op} of ${table} logged with a partial row image, without column(s) ${names} (binlog_row_image=${setting} in the session that wrote it), which sluice would write as NULL`,
      fix: "have the writer use binlog_row_image=FULL (SET SESSION binlog_row_image = 'FULL', or drop the setting from its connection options)",
    });
  }

  private violate(file: string, end: number | undefined, violation: Omit<Violation, 'since'>): Verdict {
    this.violation = { ...violation, since: this.now };
    for (const table of violation.tables ?? []) this.group?.tables.set(groupKey(table), table);
    return this.drain(undefined, file, end);
  }

  /** Inside a violating transaction: drop its events until it ends, then stop naming its end (`event` undefined: the violating one). */
  private drain(event: NamedEvent | undefined, file: string, end: number | undefined): Verdict {
    switch (event?.type) {
      case 'TableMap':
        this.mapped(event.ev);
        break;
      case 'Xid':
      case 'XaPrepare':
        // No end of its own: inside a compressed transaction, which ends with its payload event.
        if (end === undefined) break;
        return this.stop(file, end);
      case 'Query':
        if (end !== undefined && /^\s*(COMMIT|ROLLBACK)\s*$/i.test(String(event.ev.query))) return this.stop(file, end);
        break;
      case 'TransactionPayload':
        return this.stop(file, end);
      case 'MariadbGtid':
      case 'Gtid':
      case 'AnonymousGtid':
      case 'Rotate':
        // Another group begins: this one ended without an end event we know.
        return this.stop(file, undefined);
    }
    return this.now - (this.violation?.since ?? 0) > DRAIN_MS ? this.stop(file, undefined) : 'drop';
  }

  private stop(file: string, end: number | undefined): SluiceError {
    const violation = this.violation as Violation;
    const group = this.group ?? { start: this.last(), xa: false, ddl: false, tables: new Map<string, TableRef>() };
    const at = formatPosition({ file: group.start.file, pos: group.start.pos, gtid: group.gtid });
    const tables = [...group.tables.values()].map(formatTableRef).sort();
    const copied = violation.tablesUnknown ? 'every captured table it may have changed' : `the tables it changed (${tables.join(', ')})`;
    const skip =
      end && end > 0
        ? `\`sluice state reset --to position:${file}:${end}\` (the transaction's end)`
        : `\`sluice state reset --to position:<the transaction's end: SHOW BINLOG EVENTS IN '${group.start.file}' FROM ${group.start.pos}>\``;
    return new SluiceError(
      violation.code,
      `the transaction at ${at} holds ${violation.what}. Nothing of it was written and the position stays at ${group.start.file}:${group.start.pos}. ` +
        `Fix: ${violation.fix}. Then skip the transaction: ${skip}; the next run resets ${copied} and copies them again (docs/RUNBOOK.md, ${violation.code}).`,
    );
  }
}

/** A rows event's table, as a violation's message names it (formatted only then, not for every rows event). */
function rowsTable(ev: RowsEvent): string {
  const map = ev.tableMap?.[ev.tableId];
  return map ? formatTableRef({ db: map.parentSchema, table: map.tableName }) : `table id ${ev.tableId}`;
}

/** A GTID event's GTID, when it is text. */
const gtidOf = (ev: { readonly gtid?: unknown }) => (typeof ev.gtid === 'string' ? ev.gtid : undefined);

/** Indexes of the columns a rows event leaves out of a row image (its bitmaps: bit i = column i). */
export function missingColumns(ev: { numberOfColumns?: number; columns_present_bitmap?: Buffer; columns_present_bitmap2?: Buffer }, type: string): number[] {
  const n = ev.numberOfColumns ?? 0;
  const bitmaps = [ev.columns_present_bitmap, type === 'UpdateRows' ? ev.columns_present_bitmap2 : undefined];
  const missing = new Set<number>();
  for (const bitmap of bitmaps) {
    if (!bitmap) continue;
    for (let i = 0; i < n; i++) if (((bitmap[i >> 3] ?? 0) & (1 << (i & 7))) === 0) missing.add(i);
  }
  return [...missing].sort((a, b) => a - b);
}
