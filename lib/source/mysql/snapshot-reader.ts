import mysql from 'mysql2';
import type { KeyValues } from '../../core/key-values.ts';
import { ErrorCode, SluiceError } from '../../errors.ts';
import { type Row, rowProperty } from '../../format/event.ts';
import { dialectOf } from './dialect/dialect.ts';
import type { RowPacket, WireColumn } from './row-lines.ts';
import { selectAs, type TableInfo } from './schema.ts';
import type { SqlConnection } from './server.ts';
import { connectionOptions, type MysqlTarget, scrub } from './target.ts';

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

/** Big integers arrive as strings and are bound as strings into their casts (schema.ts keyParam): exact. */
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
 * Where `read` hands one query's rows, as the server sends them. A returned promise pauses the
 * connection until it settles (back-pressure); a rejected one ends the read with its error.
 */
export interface RowSink {
  /**
   * The result's columns as the server describes them: a handler of the raw binary-protocol row
   * packets, or undefined to take rows as objects (`row`). `decode` is mysql2's own parse of a packet
   * into the row object `row` would get; it leaves the packet as it was.
   */
  packets?(fields: readonly WireColumn[], decode: (packet: RowPacket) => Row): ((packet: RowPacket) => Promise<void> | undefined) | undefined;
  row(row: Row): Promise<void> | undefined;
}

/** What `read` uses of a mysql2 command and connection beyond their typings (mysql2 3.x internals, lib/commands/execute.js). */
interface ExecuteInternals {
  options: unknown;
  buildParserFromFields(fields: WireColumn[], connection: PausableConnection): new () => RowParser;
  on(event: 'end', listener: () => void): void;
  on(event: 'error', listener: (error: Error) => void): void;
}
interface RowParser {
  next(packet: RowPacket, fields: unknown, options: unknown): unknown;
}
interface PausableConnection {
  pause(): void;
  resume(): void;
}

/**
 * A connection for paging: values as exact text (big numbers as strings, dates as MySQL prints
 * them), TIMESTAMP in UTC. Rows stream from the server; a page is never held whole in memory.
 */
export function pagingConnection(target: MysqlTarget): PagingConnection {
  return new PagingConnection(target);
}

export class PagingConnection {
  private readonly conn: mysql.Connection;
  private readonly promise: ReturnType<mysql.Connection['promise']>;
  // The server closing the connection during a streamed query (KILL, a restart, a failover) is
  // reported on the connection, not to the query: unheard it ends the process, and the query would
  // wait forever. It fails the query in progress instead (the next run resumes the chunk).
  private lost: SluiceError | undefined;
  private readonly losses = new Set<(error: SluiceError) => void>();
  /** Queries on the paging connection; once it is lost, they fail with why. */
  readonly sql: SqlConnection;

  constructor(private readonly target: MysqlTarget) {
    this.conn = mysql.createConnection({
      ...connectionOptions(target),
      jsonStrings: true,
      dateStrings: true,
      timezone: 'Z',
      supportBigNumbers: true,
      bigNumberStrings: true,
    });
    this.promise = this.conn.promise();
    this.conn.on('error', (error: Error) => {
      for (const fail of this.losses) fail(this.connectionLost(error));
    });
    const { promise } = this;
    this.sql = {
      query: async (sql, values) => {
        if (this.lost) throw this.lost;
        try {
          return (await promise.query(sql, values)) as [unknown, unknown];
        } catch (error) {
          throw (error as { fatal?: boolean }).fatal ? this.connectionLost(error as Error) : error;
        }
      },
      end: () => promise.end(),
    };
  }

  private connectionLost(error: Error): SluiceError {
    this.lost ??= new SluiceError(ErrorCode.MYSQL_CONNECT, `the MySQL connection reading the snapshot was lost: ${scrub(error.message, this.target.uri)}`, {
      cause: error,
      retriable: true,
    });
    return this.lost;
  }

  async init(): Promise<void> {
    await this.promise.query("SET time_zone = '+00:00'");
    // Every column in ordinal order is selected by name (tableInfo), invisible ones included.
    await (await dialectOf(this.sql)).prepareSession(this.sql);
  }

  /** Streams one page's rows in key order, in batches of whatever has arrived (one await per batch, not per row). */
  async *page(info: TableInfo, after: KeyValues | null, upTo: KeyValues | null, limit: number): AsyncGenerator<Row[]> {
    const { sql, values } = pageQuery(info, after, upTo, limit);
    // The binary protocol (a prepared statement): DOUBLE and FLOAT arrive as their exact IEEE bytes.
    // MariaDB's text protocol prints DOUBLE with too few digits to round-trip, so a snapshot row
    // would differ from the binlog's value in the last digit (found by the chaos suite).
    const stream = this.conn.execute({ sql, values }).stream({ highWaterMark: 4000 });
    let ended = false;
    let failed: Error | undefined;
    let wake: (() => void) | undefined;
    stream.on('readable', () => wake?.());
    stream.on('end', () => {
      ended = true;
      wake?.();
    });
    const fail = (error: Error) => {
      failed ??= error;
      wake?.();
    };
    stream.on('error', fail);
    if (this.lost) throw this.lost;
    this.losses.add(fail);
    try {
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
    } finally {
      this.losses.delete(fail);
    }
  }

  /**
   * Reads one page (as `page`) into `sink`, row by row as the packets arrive: nothing is buffered
   * beyond the socket's chunk, and the connection pauses while `sink` pushes back.
   *
   * mysql2 has no public hook for raw rows: its Execute command builds a row parser once the
   * columns are known (`buildParserFromFields`, then `parser.next(packet)` per row packet). The
   * override (`sinkParser`) wraps that parser: each packet goes to `sink` (raw, or parsed by mysql2's
   * own parser), and the parser returns nothing for mysql2 to collect. A sink's error is kept (mysql2
   * would end the command with rows still arriving) and reported once the result has been read.
   */
  read(info: TableInfo, after: KeyValues | null, upTo: KeyValues | null, limit: number, sink: RowSink): Promise<void> {
    const { sql, values } = pageQuery(info, after, upTo, limit);
    if (this.lost) return Promise.reject(this.lost);
    return new Promise<void>((resolve, reject) => {
      const read: SinkRead = { pushing: undefined, failed: undefined, connection: undefined };
      const onLost = (error: SluiceError) => {
        const end = () => reject(error);
        (read.pushing ?? Promise.resolve()).then(end, end);
      };
      this.losses.add(onLost);
      const command = this.conn.execute({ sql, values }) as unknown as ExecuteInternals;
      command.buildParserFromFields = sinkParser(command.buildParserFromFields, sink, read);
      command.on('error', (error) => fail(read, error));
      command.on('end', () => {
        this.losses.delete(onLost);
        if (read.failed === undefined) resolve();
        else reject(read.failed);
      });
    });
  }

  end(): Promise<void> {
    return this.promise.end();
  }
}

/** One `read` in progress. */
interface SinkRead {
  /** The sink's push-back in progress (a keyless copy's page commit): the read ends only after it. */
  pushing: Promise<void> | undefined;
  /** The first error of the sink or the command. */
  failed: unknown;
  connection: PausableConnection | undefined;
}

function fail(read: SinkRead, error: unknown): void {
  read.failed ??= error;
  read.connection?.resume();
}

/** The `buildParserFromFields` of one `read`: mysql2's own (`build`) wrapped to hand each row packet to `sink`. */
function sinkParser(build: ExecuteInternals['buildParserFromFields'], sink: RowSink, read: SinkRead): ExecuteInternals['buildParserFromFields'] {
  return function (this: ExecuteInternals, fields, connection) {
    read.connection = connection;
    const reference = new (build.call(this, fields, connection))();
    const options = this.options;
    // mysql2's parser reads through Packet's methods, and the packet object it hands over is
    // reused for the next one: `decode` parses any packet's bytes in a Packet of its own.
    let own: (RowPacket & { clone(): RowPacket }) | undefined;
    const decode = (packet: RowPacket): Row => {
      const copy = own as { buffer: Buffer; offset: number; end: number };
      copy.buffer = packet.buffer;
      copy.offset = packet.offset;
      copy.end = packet.end;
      return reference.next(copy, fields, options) as Row;
    };
    const handle = sink.packets?.(fields, decode) ?? ((packet: RowPacket) => sink.row(decode(packet)));
    return class {
      next(packet: RowPacket & { clone(): RowPacket }): undefined {
        own ??= packet.clone() as RowPacket & { clone(): RowPacket };
        if (read.failed !== undefined) return;
        try {
          const wait = handle(packet);
          if (wait) {
            connection.pause();
            read.pushing = wait.then(
              () => connection.resume(),
              (error) => fail(read, error),
            );
          }
        } catch (error) {
          fail(read, error);
        }
      }
    };
  };
}
