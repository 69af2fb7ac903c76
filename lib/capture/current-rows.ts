import { ErrorCode, SluiceError } from '../errors.ts';
import type { Row } from '../format/event.ts';
import { type ColumnKind, encodeValue } from '../format/types.ts';
import type { BinlogItem } from '../source/mysql/binlog-reader.ts';

/*
 * A MariaDB system-versioned table's change log mirrors its current rows, what `SELECT * FROM t`
 * returns (docs/FORMAT.md, "System-versioned tables"). The binlog carries every row version, each
 * with its period (row start, row end):
 *   - INSERT logs the new row, its period ending at the end of time;
 *   - UPDATE logs an update of the current row (a new row start) and an insert of the old version,
 *     whose period now ends at the statement's time: a history row;
 *   - DELETE logs an update that ends the current row's period;
 *   - DELETE HISTORY deletes history rows; a column WITHOUT SYSTEM VERSIONING updates in place.
 * A row is current while its period ends at the end of time, the period type's maximum: TIMESTAMP's
 * (2038-01-19 03:14:07.999999 UTC, 2106-02-07 06:28:15.999999 UTC on MariaDB 11.5+) or BIGINT
 * UNSIGNED's for transaction-precise periods. So an event of a current row passes as it is, one
 * that ends the period is the row's delete, and history rows are no rows of the mirror. The change
 * log loses nothing by this: its events are themselves the table's history, each at its commit.
 * A period end that is neither the end of time nor earlier than its statement is refused: it would
 * mean an end of time sluice does not know, and reading it as history would drop current rows.
 */

/** The row end column of a rows event: its property in the row objects and how its values encode. */
export interface PeriodEnd {
  readonly property: string;
  readonly kind: ColumnKind;
  readonly fsp?: number;
}

type RowsItem = Extract<BinlogItem, { kind: 'rows' }>;

const END_OF_TIME = ['2038-01-19T03:14:07', '2106-02-07T06:28:15'];
const BIGINT_UNSIGNED_MAX = '18446744073709551615';
/** How far after its statement's time a history row's period may end (clock steps, `SET timestamp` rounding). */
const SLACK_MS = 24 * 3600 * 1000;

/** Whether the row is current (its period has not ended); throws for a period end sluice cannot place. */
function isCurrent(row: Row, end: PeriodEnd, tsMs: number): boolean {
  const encoded = encodeValue(end.kind, row[end.property], end.fsp);
  if (end.kind === 'int') return encoded === BIGINT_UNSIGNED_MAX;
  if (end.kind !== 'timestamp') throw new SluiceError(ErrorCode.VERSIONED_ROW_END, `a system-versioned table's row end is a ${end.kind} column`);
  const text = JSON.parse(encoded) as string;
  if (END_OF_TIME.some((t) => text.startsWith(t))) return true;
  if (Date.parse(text) > tsMs + SLACK_MS)
    throw new SluiceError(
      ErrorCode.VERSIONED_ROW_END,
      `a system-versioned table's row ends at ${text}, after its statement's time and not at the end of time sluice knows ` +
        `(${END_OF_TIME.join(', ')}): capture stopped before reading it as history. See docs/RUNBOOK.md, "Error codes".`,
    );
  return false;
}

/**
 * The events of a system-versioned table's rows event as the mirror of its current rows: runs of
 * one operation each, in the event's order (an empty list when it holds history only).
 */
export function currentRows(item: RowsItem, end: PeriodEnd): RowsItem[] {
  const out: RowsItem[] = [];
  const add = (op: 'insert' | 'delete', row: Row) => {
    const last = out.at(-1);
    if (last && last.op === op) (last.rows as Row[]).push(row);
    else out.push({ ...item, op, rows: [row] });
  };
  const update = (before: Row, after: Row) => {
    const last = out.at(-1);
    if (last?.op === 'update') last.rows.push({ before, after });
    else out.push({ ...item, op: 'update', rows: [{ before, after }] });
  };
  if (item.op === 'update') {
    for (const { before, after } of item.rows) {
      if (!isCurrent(before, end, item.tsMs)) continue;
      if (isCurrent(after, end, item.tsMs)) update(before, after);
      else add('delete', before);
    }
  } else for (const row of item.rows) if (isCurrent(row, end, item.tsMs)) add(item.op, row);
  return out;
}
