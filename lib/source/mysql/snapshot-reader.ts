import mysql from 'mysql2';
import type { KeyValues } from '../../core/key-values.ts';
import { type Row, rowProperty } from '../../format/event.ts';
import { selectAs, type TableInfo } from './schema.ts';
import type { SqlConnection } from './server.ts';
import type { MysqlTarget } from './target.ts';

const id = (name: string) => `\`${name.replaceAll('`', '``')}\``;

/**
 * `(k1, k2, …) > (v1, v2, …)` as an OR-chain, which index range scans handle on every MySQL and
 * MariaDB version (row constructors are not always optimized). `orEqual` makes the last step ≥/≤.
 */
function tupleCompare(info: TableInfo, op: '>' | '<', orEqual: boolean): string {
  const keys = info.key.map(id);
  const parts: string[] = [];
  for (let i = 0; i < keys.length; i++) {
    const equal = keys.slice(0, i).map((k, j) => `${k} = ${info.keyParams[j]}`);
    const last = i === keys.length - 1 && orEqual ? `${op}=` : op;
    parts.push(`(${[...equal, `${keys[i]} ${last} ${info.keyParams[i]}`].join(' AND ')})`);
  }
  return `(${parts.join(' OR ')})`;
}

/** The values a tupleCompare binds, in placeholder order. */
function tupleValues(values: KeyValues): unknown[] {
  const out: unknown[] = [];
  for (let i = 0; i < values.length; i++) out.push(...values.slice(0, i), values[i]);
  return out.map(bindable);
}

/** Big integers arrive as strings and are bound as strings into CAST(? AS UNSIGNED|SIGNED): exact. */
const bindable = (v: unknown) => (typeof v === 'bigint' ? v.toString() : v);

function pageQuery(info: TableInfo, after: KeyValues | null, upTo: KeyValues | null, limit: number): { sql: string; values: unknown[] } {
  const where: string[] = [];
  const values: unknown[] = [];
  if (after) {
    where.push(tupleCompare(info, '>', false));
    values.push(...tupleValues(after));
  }
  if (upTo) {
    where.push(tupleCompare(info, '<', true));
    values.push(...tupleValues(upTo));
  }
  // A table without a key is read whole, in no particular order (inside one consistent snapshot).
  const order = info.key.length ? ` ORDER BY ${info.key.map(id).join(', ')} LIMIT ${limit}` : '';
  const sql = `SELECT ${info.selects.join(', ')} FROM ${id(info.db)}.${id(info.table)}${where.length ? ` WHERE ${where.join(' AND ')}` : ''}${order}`;
  return { sql, values };
}

/** The first key at or beyond `step` rows after `after` (a chunk boundary), or null past the end. */
export async function keyAtOffset(conn: SqlConnection, info: TableInfo, after: KeyValues | null, step: number): Promise<KeyValues | null> {
  const { sql, values } = pageQuery({ ...info, selects: info.key.map((k) => selectAs(id(k), k)) }, after, null, 1);
  const [rows] = await conn.query(`${sql} OFFSET ${step - 1}`, values);
  const row = (rows as Row[])[0];
  return row ? info.key.map((k) => row[rowProperty(k)]) : null;
}

export async function lastKey(conn: SqlConnection, info: TableInfo): Promise<KeyValues | null> {
  const order = info.key.map((k) => `${id(k)} DESC`).join(', ');
  const [rows] = await conn.query(
    `SELECT ${info.key.map((k) => selectAs(id(k), k)).join(', ')} FROM ${id(info.db)}.${id(info.table)} ORDER BY ${order} LIMIT 1`,
  );
  const row = (rows as Row[])[0];
  return row ? info.key.map((k) => row[rowProperty(k)]) : null;
}

/**
 * A connection for paging: values as exact text (big numbers as strings, dates as MySQL prints
 * them), TIMESTAMP in UTC. Rows stream from the server; a page is never held whole in memory.
 */
export function pagingConnection(target: MysqlTarget) {
  const conn = mysql.createConnection({
    uri: target.uri,
    ssl: target.ssl,
    jsonStrings: true,
    dateStrings: true,
    timezone: 'Z',
    supportBigNumbers: true,
    bigNumberStrings: true,
  });
  const promise = conn.promise();
  return {
    sql: promise as unknown as SqlConnection,
    async init() {
      await promise.query("SET time_zone = '+00:00'");
    },
    /** Streams one page's rows in key order, in batches of whatever has arrived (one await per batch, not per row). */
    async *page(info: TableInfo, after: KeyValues | null, upTo: KeyValues | null, limit: number): AsyncGenerator<Row[]> {
      const { sql, values } = pageQuery(info, after, upTo, limit);
      // The binary protocol (a prepared statement): DOUBLE and FLOAT arrive as their exact IEEE bytes.
      // MariaDB's text protocol prints DOUBLE with too few digits to round-trip, so a snapshot row
      // would differ from the binlog's value in the last digit (found by the chaos suite).
      const stream = conn.execute({ sql, values }).stream({ highWaterMark: 4000 });
      let ended = false;
      let failed: Error | undefined;
      let wake: (() => void) | undefined;
      stream.on('readable', () => wake?.());
      stream.on('end', () => {
        ended = true;
        wake?.();
      });
      stream.on('error', (error: Error) => {
        failed = error;
        wake?.();
      });
      while (true) {
        const rows: Row[] = [];
        for (let row = stream.read(); row !== null; row = stream.read()) rows.push(row as Row);
        if (failed) throw failed;
        if (rows.length) yield rows;
        else if (ended) return;
        else
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
      }
    },
    end: () => promise.end(),
  };
}
