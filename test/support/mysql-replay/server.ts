/**
 * The MySQL replay source: serves recorded binlog files, in order, as the MySQL server that wrote
 * them (or as another version, `version`), to replication clients (zongji, sluice) over the real
 * client/server protocol, on mysql2's server API. Test tooling: it proves that real bytes decode and
 * that the dialect is used as the manual documents it, not how a live server behaves.
 *
 * What it fakes, and nothing else:
 * - Authentication: any user and password are accepted (mysql_native_password handshake, no TLS),
 *   on 127.0.0.1 only. SHOW GRANTS lists the grants docs/RUNBOOK.md asks for.
 * - The binlog index: the files given, in order, named as their ROTATE events name them (the file a
 *   ROTATE points to is the next file's name; the first file is one before its own ROTATE's target,
 *   or `binlog.NNNNNN` from its file name's digits). No file is ever being written: the last file is
 *   "active" only in that a blocking dump waits at its end, sending heartbeats, until the client
 *   goes away.
 * - Variables: what the files show (version and server_id from the FORMAT_DESCRIPTION, GTIDs,
 *   row metadata, compression, partial JSON, row image), documented defaults for the rest
 *   (answers.ts `serverFacts`). gtid_purged is the first file's PREVIOUS_GTIDS.
 * - Heartbeats every `@master_heartbeat_period` (nanoseconds, as the client sets it), or every
 *   `heartbeatMs` (3 s) when the client set none — a real server sends none then.
 * - Schema and table reads (information_schema, `SELECT … FROM db.t`, transactions around them) are
 *   not faked: they go to the `schemaFrom` server (the test stack's MariaDB, holding the tables the
 *   fixture's SQL leaves), whose information_schema is MariaDB's (see README.md for the differences).
 *   Without `schemaFrom` they are refused with an error naming the statement.
 *
 * The replication protocol follows MySQL's sql/rpl_binlog_sender.cc: a fake ROTATE (timestamp 0,
 * LOG_EVENT_ARTIFICIAL_F, log_pos 0, body = start position + file name) before every file; the
 * file's FORMAT_DESCRIPTION with the in-use flag cleared (and log_pos and created zeroed when
 * the dump starts past it); events with their recorded checksums; error 1236 for a missing file,
 * a position < 4, beyond the file or off an event boundary, a checksum-unaware client, a GTID dump
 * without gtid_mode=ON or of purged GTIDs; for COM_BINLOG_DUMP_GTID the transactions in the client's
 * set are skipped and a heartbeat carries the position past them; with BINLOG_DUMP_NON_BLOCK an EOF
 * packet at the end of the last file.
 */
import type { Server as NetServer, Socket } from 'node:net';
import mysql from 'mysql2';
import mysqlPromise from 'mysql2/promise';
import { type Answer, answer, type Column, type ServedFile, type ServerFacts, type Session, serverFacts, unsupported } from './answers.ts';
import {
  ARTIFICIAL_FLAG,
  type BinlogFile,
  cutBinlogFile,
  decodeGtidSet,
  defaultBinlogName,
  EVENT_HEADER_LENGTH,
  EventType,
  growBinlogFile,
  HEADER_SIZE,
  IN_USE_FLAG,
  LOG_POS_MODULUS,
  nextBinlogName,
  readBinlogFile,
  withChecksum,
} from './binlog-file.ts';
import { GtidSet } from './gtid-set.ts';

/** How to start a replay server. */
export interface ReplayOptions {
  /** Binlog files to serve, oldest first. */
  files: readonly string[];
  /** The version to present (`SELECT VERSION()`, the handshake); default the first file's. */
  version?: string;
  /** TCP port on 127.0.0.1; 0 (default) picks a free one. */
  port?: number;
  /** A mysql:// URI that schema and table reads are forwarded to. */
  schemaFrom?: string;
  /** Global variables the files cannot show, set as the recording server had them (e.g. binlog_row_metadata of a file without TABLE_MAPs). */
  variables?: Readonly<Record<string, string>>;
  /** Heartbeat interval when the client sets no @master_heartbeat_period. */
  heartbeatMs?: number;
  /**
   * Serves the file named `file` (its served name) as if a transaction had held `bytes` more rows
   * before its event at `at`: that event and every later one `bytes` further on, past 4 GiB with
   * log_pos wrapped as a server writes it (binlog-file.ts `growBinlogFile`).
   */
  grow?: { file: string; at: number; bytes: number };
  /** Serves the history as it was when the server had written up to `pos` of `file` (an event's end): later files are not there yet (`cutBinlogFile`). */
  until?: { file: string; pos: number };
  /** Called with each statement and what it got, for tests and `--verbose`. */
  onStatement?: (sql: string, outcome: string) => void;
}

/** A running replay server. */
export interface ReplayServer {
  readonly port: number;
  readonly facts: ServerFacts;
  /** A mysql:// URI for it (user `replay`, any password works). */
  readonly uri: string;
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** The names files are served under: each ROTATE's target names the next file (see the header); then `grow` and `until` (ReplayOptions). */
export function servedFiles(paths: readonly string[], change: Pick<ReplayOptions, 'grow' | 'until'> = {}): ServedFile[] {
  const files = paths.map((p) => readBinlogFile(p));
  const names: string[] = [];
  files.forEach((file, i) => {
    const previous = files[i - 1];
    if (previous?.rotateTo) names.push(previous.rotateTo.file);
    else if (i > 0) names.push(nextBinlogName(names[i - 1] as string));
    else if (file.rotateTo) names.push(nextBinlogName(file.rotateTo.file, -1));
    else names.push(defaultBinlogName(file.path));
  });
  if (new Set(names).size !== names.length) throw new Error(`mysql-replay: two files would be served under one name (${names.join(', ')})`);
  const { grow, until } = change;
  for (const named of [grow?.file, until?.file])
    if (named && !names.includes(named)) throw new Error(`mysql-replay: no file is served as ${named} (${names.join(', ')})`);
  const served = files.map((file, i) => {
    const name = names[i] as string;
    const grown = grow?.file === name ? growBinlogFile(file, grow.at, grow.bytes) : file;
    return { name, file: until?.file === name ? cutBinlogFile(grown, until.pos) : grown };
  });
  return until ? served.slice(0, names.indexOf(until.file) + 1) : served;
}

// Client/server protocol constants (https://dev.mysql.com/doc/dev/mysql-server/latest/PAGE_PROTOCOL.html).
const COM = {
  QUIT: 0x01,
  INIT_DB: 0x02,
  QUERY: 0x03,
  PING: 0x0e,
  BINLOG_DUMP: 0x12,
  REGISTER_SLAVE: 0x15,
  STMT_PREPARE: 0x16,
  STMT_EXECUTE: 0x17,
  STMT_CLOSE: 0x19,
  STMT_RESET: 0x1a,
  BINLOG_DUMP_GTID: 0x1e,
} as const;
const CLIENT = {
  LONG_PASSWORD: 1,
  FOUND_ROWS: 2,
  LONG_FLAG: 4,
  CONNECT_WITH_DB: 8,
  PROTOCOL_41: 512,
  TRANSACTIONS: 8192,
  SECURE_CONNECTION: 32768,
  MULTI_RESULTS: 1 << 17,
  PS_MULTI_RESULTS: 1 << 18,
  PLUGIN_AUTH: 1 << 19,
} as const;
const BINLOG_DUMP_NON_BLOCK = 1;
const UTF8MB4_GENERAL_CI = 45;
const BINARY_CHARSET = 63;
const TYPE = { LONGLONG: 8, VAR_STRING: 253 } as const;

/** The part of mysql2's server-side connection used here (its typings do not describe the server side). */
interface ServerConnection {
  stream: Socket;
  /** The sequence id mysql2 expects on the next packet it reads and puts on the next it writes. */
  sequenceId: number;
  serverHandshake(args: Record<string, unknown>): { next: unknown };
  writePacket(packet: { buffer: Buffer; length(): number; writeHeader(sequenceId: number): void }): void;
  clientHelloReply?: { user?: string };
  on(event: 'error' | 'end', listener: (error?: Error) => void): void;
}

/** A raw payload in the shape mysql2's writePacket takes (it fills in the 4-byte header). */
class RawPacket {
  readonly buffer: Buffer;
  constructor(payload: Buffer) {
    this.buffer = Buffer.concat([Buffer.alloc(4), payload]);
  }
  length(): number {
    return this.buffer.length;
  }
  writeHeader(sequenceId: number): void {
    this.buffer.writeUIntLE(this.buffer.length - 4, 0, 3);
    this.buffer[3] = sequenceId;
  }
}

function lenencInt(n: number): Buffer {
  if (n < 0xfb) return Buffer.from([n]);
  if (n < 0x10000) return Buffer.from([0xfc, n & 0xff, n >> 8]);
  if (n < 0x1000000) return Buffer.from([0xfd, n & 0xff, (n >> 8) & 0xff, n >> 16]);
  const b = Buffer.alloc(9);
  b[0] = 0xfe;
  b.writeBigUInt64LE(BigInt(n), 1);
  return b;
}

function lenencString(value: Buffer | string): Buffer {
  const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
  return Buffer.concat([lenencInt(bytes.length), bytes]);
}

function okPacket(): Buffer {
  // OK: header 0x00, affected rows, last insert id, status (SERVER_STATUS_AUTOCOMMIT), warnings.
  return Buffer.from([0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00]);
}

function eofPacket(): Buffer {
  return Buffer.from([0xfe, 0x00, 0x00, 0x02, 0x00]);
}

function errorPacket(errno: number, sqlState: string, message: string): Buffer {
  const head = Buffer.alloc(3);
  head[0] = 0xff;
  head.writeUInt16LE(errno, 1);
  return Buffer.concat([head, Buffer.from(`#${sqlState}`, 'latin1'), Buffer.from(message, 'utf8')]);
}

/** A column as the result set describes it: the forwarded server's definition, or a made-up one. */
interface ColumnDefinition {
  name: string;
  table?: string;
  schema?: string;
  characterSet: number;
  length: number;
  type: number;
  flags: number;
  decimals: number;
}

function columnPacket(c: ColumnDefinition): Buffer {
  const tail = Buffer.alloc(13);
  tail[0] = 0x0c;
  tail.writeUInt16LE(c.characterSet, 1);
  tail.writeUInt32LE(c.length, 3);
  tail[7] = c.type;
  tail.writeUInt16LE(c.flags, 8);
  tail[10] = c.decimals;
  return Buffer.concat([
    lenencString('def'),
    lenencString(c.schema ?? ''),
    lenencString(c.table ?? ''),
    lenencString(c.table ?? ''),
    lenencString(c.name),
    lenencString(c.name),
    tail,
  ]);
}

function madeUpColumn(c: Column): ColumnDefinition {
  return c.type === 'int'
    ? { name: c.name, characterSet: BINARY_CHARSET, length: 21, type: TYPE.LONGLONG, flags: 0, decimals: 0 }
    : { name: c.name, characterSet: UTF8MB4_GENERAL_CI, length: 1024, type: TYPE.VAR_STRING, flags: 0, decimals: 31 };
}

type Cell = Buffer | string | null;

/** The packets of a text (COM_QUERY) or binary (COM_STMT_EXECUTE) result set, with EOF markers. */
function resultSetPackets(columns: ColumnDefinition[], rows: Cell[][], binary: boolean): Buffer[] {
  // The binary protocol encodes each value by its column type; every column is sent as VAR_STRING
  // there, so values are length-encoded strings in both protocols.
  const defs = binary ? columns.map((c) => ({ ...c, type: TYPE.VAR_STRING })) : columns;
  const out = [lenencInt(columns.length), ...defs.map(columnPacket), eofPacket()];
  for (const row of rows) {
    if (binary) {
      const nulls = Buffer.alloc(Math.floor((columns.length + 7 + 2) / 8));
      const values: Buffer[] = [];
      row.forEach((cell, i) => {
        if (cell === null) nulls[(i + 2) >> 3] = (nulls[(i + 2) >> 3] as number) | (1 << ((i + 2) & 7));
        else values.push(lenencString(cell));
      });
      out.push(Buffer.concat([Buffer.from([0x00]), nulls, ...values]));
    } else {
      out.push(Buffer.concat(row.map((cell) => (cell === null ? Buffer.from([0xfb]) : lenencString(cell)))));
    }
  }
  out.push(eofPacket());
  return out;
}

/** Substitutes a prepared statement's parameters into its text (quoted, escaped), for answering it as a query. */
function substitute(sql: string, params: (string | number | null)[]): string {
  let i = 0;
  return sql.replace(/\?/g, () => {
    const p = params[i++];
    if (p === null || p === undefined) return 'NULL';
    if (typeof p === 'number') return String(p);
    return `'${p.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  });
}

/** Reads COM_STMT_EXECUTE's parameter values (the types mysql2 sends: strings, numbers, NULL). */
function executeParams(payload: Buffer, count: number): (string | number | null)[] {
  if (count === 0) return [];
  let at = 1 + 4 + 1 + 4;
  const nulls = payload.subarray(at, at + Math.ceil(count / 8));
  at += Math.ceil(count / 8);
  const bound = payload[at++] === 1;
  const types: number[] = [];
  if (bound) for (let i = 0; i < count; i += 1, at += 2) types.push(payload.readUInt16LE(at) & 0xff);
  const take = (n: number) => {
    at += n;
    return at - n;
  };
  const values: (string | number | null)[] = [];
  for (let i = 0; i < count; i += 1) {
    if (((nulls[i >> 3] as number) >> (i & 7)) & 1) {
      values.push(null);
      continue;
    }
    const type = types[i] ?? TYPE.VAR_STRING;
    if (type === 1) values.push(payload.readInt8(take(1)));
    else if (type === 2) values.push(payload.readInt16LE(take(2)));
    else if (type === 3) values.push(payload.readInt32LE(take(4)));
    else if (type === 8) values.push(Number(payload.readBigInt64LE(take(8))));
    else if (type === 5) values.push(payload.readDoubleLE(take(8)));
    else {
      const head = payload[take(1)] as number;
      const length =
        head === 0xfc
          ? payload.readUInt16LE(take(2))
          : head === 0xfd
            ? payload.readUIntLE(take(3), 3)
            : head === 0xfe
              ? Number(payload.readBigUInt64LE(take(8)))
              : head;
      values.push(payload.subarray(at, at + length).toString('utf8'));
      take(length);
    }
  }
  return values;
}

/** A dump request, decoded (sql/rpl_source.cc com_binlog_dump / com_binlog_dump_gtid). */
interface DumpRequest {
  file: string;
  position: number;
  flags: number;
  gtids?: GtidSet;
}

function decodeDump(payload: Buffer): DumpRequest {
  if (payload[0] === COM.BINLOG_DUMP) {
    // pos u32, flags u16, server_id u32, file name to the packet's end.
    // Clients differ in whether they NUL-terminate the name; the server reads it as a C string.
    return { position: payload.readUInt32LE(1), flags: payload.readUInt16LE(5), file: payload.subarray(11).toString('utf8').replace(/\0.*$/s, '') };
  }
  // flags u16, server_id u32, name length u32, name, pos u64, data size u32, encoded GTID set.
  const flags = payload.readUInt16LE(1);
  const nameLength = payload.readUInt32LE(7);
  const file = payload.subarray(11, 11 + nameLength).toString('utf8');
  const position = Number(payload.readBigUInt64LE(11 + nameLength));
  const dataAt = 19 + nameLength;
  const size = payload.length >= dataAt + 4 ? payload.readUInt32LE(dataAt) : 0;
  return { file, position, flags, gtids: new GtidSet(decodeGtidSet(payload.subarray(dataAt + 4, dataAt + 4 + size))) };
}

/** Starts a replay server; resolves once it listens. */
export async function startReplayServer(options: ReplayOptions): Promise<ReplayServer> {
  const files = servedFiles(options.files, options);
  const facts = serverFacts(files, options.version, options.variables);
  const heartbeatMs = options.heartbeatMs ?? 3000;
  const schemaFrom = options.schemaFrom;
  const connections = new Map<number, ServerConnection>();
  let nextId = 1;
  const log = options.onStatement ?? (() => {});

  const server = mysql.createServer((c) => serve(c as unknown as ServerConnection)) as unknown as { _server: NetServer };

  function serve(conn: ServerConnection): void {
    const connectionId = nextId++;
    connections.set(connectionId, conn);
    const session: Session & {
      /** This client's own connection to --schema-from (its session state must not reach other clients). */
      forward?: mysqlPromise.Connection;
      statements: Map<number, { sql: string; params: number }>;
      /** Session SETs (time_zone, names…), replayed on the forward connection so its reads see them too. */
      sets: string[];
    } = {
      user: 'replay',
      connectionId,
      userVariables: new Map(),
      statements: new Map(),
      sets: [],
    };
    let timer: NodeJS.Timeout | undefined;
    let closed = false;
    const cleanup = () => {
      closed = true;
      if (timer) clearTimeout(timer);
      connections.delete(connectionId);
      session.forward?.destroy();
      session.forward = undefined;
    };
    conn.stream.on('close', cleanup);
    conn.on('error', () => cleanup());
    const send = (payload: Buffer) => {
      if (!closed) conn.writePacket(new RawPacket(payload));
    };
    // Each response starts a new packet sequence; mysql2 continues from the request's sequence id.
    const handshake = conn.serverHandshake({
      protocolVersion: 10,
      serverVersion: facts.version,
      connectionId,
      statusFlags: 2,
      characterSet: UTF8MB4_GENERAL_CI,
      capabilityFlags:
        CLIENT.LONG_PASSWORD |
        CLIENT.FOUND_ROWS |
        CLIENT.LONG_FLAG |
        CLIENT.CONNECT_WITH_DB |
        CLIENT.PROTOCOL_41 |
        CLIENT.TRANSACTIONS |
        CLIENT.SECURE_CONNECTION |
        CLIENT.MULTI_RESULTS |
        CLIENT.PS_MULTI_RESULTS |
        CLIENT.PLUGIN_AUTH,
    });
    // mysql2's ServerHandshake answers the client's reply with OK, then hands each command to its own
    // dispatcher, which routes SET to prepared statements; commands are taken over here instead.
    const readClientReply = handshake.next as (this: unknown, packet: unknown, c: unknown) => unknown;
    const dispatch = function (this: unknown, packet: { buffer: Buffer; start: number; end: number }): unknown {
      const payload = Buffer.from(packet.buffer.subarray(packet.start + 4, packet.end));
      // A client sends its next command only after the answer (COM_STMT_CLOSE has none), so the
      // sequence restarts at 0 once the answer is written; a binlog dump's answer never ends (its
      // heartbeats continue the sequence).
      const streaming = payload[0] === COM.BINLOG_DUMP || payload[0] === COM.BINLOG_DUMP_GTID;
      void command(payload)
        .catch((error: Error) => send(errorPacket(1105, 'HY000', `mysql-replay: ${error.message}`)))
        .finally(() => {
          if (!streaming) conn.sequenceId = 0;
        });
      return dispatch;
    };
    handshake.next = function (this: unknown, packet: unknown, c: unknown) {
      readClientReply.call(this, packet, c);
      conn.sequenceId = 0;
      session.user = conn.clientHelloReply?.user || 'replay';
      return dispatch;
    };

    async function respond(sql: string, binary: boolean): Promise<void> {
      const a: Answer = answer(sql, facts, session);
      if (a.kind === 'forward') return forward(sql, binary);
      log(sql, a.kind === 'error' ? `error ${a.errno}: ${a.message}` : a.kind);
      if (a.kind === 'ok') {
        if (/^SET\s+(?!@)/i.test(sql.trim())) {
          session.sets.push(sql);
          // MariaDB may not know a MySQL session variable: the SET stays answered here either way.
          await session.forward?.query(sql).catch(() => {});
        }
        return send(okPacket());
      }
      if (a.kind === 'error') return send(errorPacket(a.errno, a.sqlState, a.message));
      if (a.kind === 'kill') {
        const victim = connections.get(a.connectionId);
        // ER_NO_SUCH_THREAD (https://dev.mysql.com/doc/mysql-errors/8.4/en/server-error-reference.html#error_er_no_such_thread)
        if (!victim) return send(errorPacket(1094, 'HY000', `Unknown thread id: ${a.connectionId}`));
        victim.stream.destroy();
        return send(okPacket());
      }
      for (const p of resultSetPackets(a.columns.map(madeUpColumn), a.rows, binary)) send(p);
    }

    async function forward(sql: string, binary: boolean): Promise<void> {
      if (!schemaFrom) {
        const a = unsupported(sql, 'schema and table reads need --schema-from');
        if (a.kind === 'error') send(errorPacket(a.errno, a.sqlState, a.message));
        log(sql, 'refused: no --schema-from');
        return;
      }
      if (!session.forward) {
        session.forward = await mysqlPromise.createConnection({ uri: schemaFrom });
        for (const set of session.sets) await session.forward.query(set).catch(() => {});
      }
      try {
        const [result, fields] = await session.forward.query({ sql, rowsAsArray: true, typeCast: (field: { buffer(): Buffer | null }) => field.buffer() });
        log(sql, 'forwarded');
        if (!Array.isArray(result)) return send(okPacket());
        const columns: ColumnDefinition[] = (
          fields as unknown as {
            name: string;
            table: string;
            schema: string;
            characterSet: number;
            columnLength: number;
            columnType: number;
            flags: number;
            decimals: number;
          }[]
        ).map((f) => ({
          name: f.name,
          table: f.table,
          schema: f.schema,
          characterSet: f.characterSet,
          length: f.columnLength,
          type: f.columnType,
          flags: f.flags,
          decimals: f.decimals,
        }));
        for (const p of resultSetPackets(columns, result as Cell[][], binary)) send(p);
      } catch (error) {
        const e = error as { errno?: number; sqlState?: string; message: string };
        log(sql, `forwarded, error ${e.errno}: ${e.message}`);
        send(errorPacket(e.errno ?? 1105, e.sqlState ?? 'HY000', e.message));
      }
    }

    async function command(payload: Buffer): Promise<void> {
      const code = payload[0];
      switch (code) {
        case COM.QUIT:
          conn.stream.end();
          return;
        case COM.INIT_DB:
        case COM.PING:
        case COM.REGISTER_SLAVE:
        case COM.STMT_RESET:
          return send(okPacket());
        case COM.QUERY:
          return respond(payload.subarray(1).toString('utf8'), false);
        case COM.STMT_PREPARE: {
          // COM_STMT_PREPARE_OK with no column definitions: mysql2 takes the columns from the execute's result.
          const sql = payload.subarray(1).toString('utf8');
          const id = session.statements.size + 1;
          const params = (sql.match(/\?/g) ?? []).length;
          session.statements.set(id, { sql, params });
          const ok = Buffer.alloc(12);
          ok.writeUInt32LE(id, 1);
          ok.writeUInt16LE(0, 5);
          ok.writeUInt16LE(params, 7);
          send(ok);
          if (params > 0) {
            for (let i = 0; i < params; i += 1)
              send(columnPacket({ name: '?', characterSet: BINARY_CHARSET, length: 0, type: TYPE.VAR_STRING, flags: 0, decimals: 0 }));
            send(eofPacket());
          }
          return;
        }
        case COM.STMT_EXECUTE: {
          const statement = session.statements.get(payload.readUInt32LE(1));
          if (!statement) return send(errorPacket(1243, 'HY000', 'Unknown prepared statement handler given to mysqld_stmt_execute'));
          return respond(substitute(statement.sql, executeParams(payload, statement.params)), true);
        }
        case COM.STMT_CLOSE:
          session.statements.delete(payload.readUInt32LE(1));
          return;
        case COM.BINLOG_DUMP:
        case COM.BINLOG_DUMP_GTID:
          return dump(decodeDump(payload));
        default:
          // ER_UNKNOWN_COM_ERROR
          return send(errorPacket(1047, '08S01', 'Unknown command'));
      }
    }

    /** Streams the files from the request's position, as sql/rpl_binlog_sender.cc Binlog_sender::run. */
    async function dump(request: DumpRequest): Promise<void> {
      const fatal = (message: string) => {
        log(`(binlog dump ${request.file}:${request.position})`, `error 1236: ${message}`);
        send(errorPacket(1236, 'HY000', message));
      };
      const clientChecksum = session.userVariables.get('master_binlog_checksum')?.toUpperCase();
      let index: number;
      let start = request.position;
      let skip: GtidSet | undefined;
      if (request.gtids) {
        if (facts.gtidMode !== 'ON') return fatal('Request to dump GTID when @@GLOBAL.GTID_MODE <> ON.');
        const missing = facts.gtidPurged.minus(request.gtids);
        if (!missing.isEmpty()) {
          return fatal(
            "Cannot replicate because the source purged required binary logs. Replicate the missing transactions from elsewhere, or provision a new replica from backup. Consider increasing the source's binary log expiration period. " +
              `The GTID set sent by the replica is '${request.gtids.toString()}', and the missing transactions are '${missing.toString()}'.`,
          );
        }
        skip = request.gtids;
        if (request.file) index = files.findIndex((f) => f.name === request.file);
        else {
          // find_first_log_not_in_gtid_set: the last file whose PREVIOUS_GTIDS the client already has.
          index = 0;
          files.forEach((f, i) => {
            if (new GtidSet(f.file.previousGtids).isSubsetOf(request.gtids as GtidSet)) index = i;
          });
          start = HEADER_SIZE;
        }
      } else index = request.file ? files.findIndex((f) => f.name === request.file) : 0;
      const first = files[index];
      if (!first) return fatal('Could not find first log file name in binary log index file');
      if (start < HEADER_SIZE) return fatal('Client requested source to start replication from position < 4');
      if (start > first.file.size) return fatal('Client requested source to start replication from position > file size');
      if (first.file.checksum === 'CRC32' && clientChecksum === undefined) {
        return fatal('Replica can not handle replication events with the checksum that source is configured to log');
      }
      log(`(binlog dump ${first.name}:${start}${skip ? ` gtid ${skip.toString()}` : ''})`, 'streaming');
      const clientCrc = clientChecksum === 'CRC32';
      for (let i = index; i < files.length && !closed; i += 1) {
        const served = files[i] as ServedFile;
        const from = i === index ? start : HEADER_SIZE;
        const file = served.file;
        const crc = file.checksum === 'CRC32';
        send(Buffer.concat([Buffer.from([0x00]), fakeRotate(served.name, from, facts.serverId, clientCrc)]));
        // COM_BINLOG_DUMP_GTID sends it as the file has it (sql/rpl_binlog_sender.cc
        // send_format_description_event: log_pos and `created` are cleared only for a position dump
        // starting past it; a GTID dump naming no file clears `created` alone, when it skips the file's first GTID).
        send(Buffer.concat([Buffer.from([0x00]), formatDescription(file, !request.gtids && from > HEADER_SIZE)]));
        const events = file.events.slice(1);
        let at = from === HEADER_SIZE ? 0 : events.findIndex((e) => e.offset === from);
        if (at < 0) {
          if (from === file.size) at = events.length;
          else {
            return fatal(
              `bogus data in log event; the first event '${first.name}' at ${start}, the last event read from '${served.name}' at ${HEADER_SIZE}, the last byte read from '${served.name}' at ${from}.`,
            );
          }
        }
        let skipping = false;
        let skippedTo = 0;
        for (const event of events.slice(at)) {
          if (skip) {
            if (event.type === EventType.GTID || event.type === EventType.GTID_TAGGED) {
              const gtid = file.gtids.find((g) => g.offset === event.offset)?.gtid;
              skipping = gtid !== undefined && skip.contains(gtid);
            } else if (event.type === EventType.ANONYMOUS_GTID || event.type === EventType.ROTATE) skipping = false;
            if (skipping) {
              skippedTo = event.offset + event.size;
              continue;
            }
            if (skippedTo) {
              send(Buffer.concat([Buffer.from([0x00]), heartbeat(served.name, skippedTo, facts.serverId, crc)]));
              skippedTo = 0;
            }
          }
          send(Buffer.concat([Buffer.from([0x00]), event.bytes]));
          // A client reading slower than this loop writes (a grown file's gigabytes): wait, as the server's socket would.
          if (conn.stream.writableNeedDrain && !closed) await drained(conn.stream);
          if (closed) return;
        }
        if (skippedTo) send(Buffer.concat([Buffer.from([0x00]), heartbeat(served.name, skippedTo, facts.serverId, crc)]));
      }
      if (closed) return;
      if (request.flags & BINLOG_DUMP_NON_BLOCK) return send(eofPacket());
      // Blocking: the last file stays "active"; the server waits for events that never come.
      const last = files[files.length - 1] as ServedFile;
      const period = Number(session.userVariables.get('master_heartbeat_period') ?? 0) / 1e6;
      const every = period > 0 ? period : heartbeatMs;
      const beat = () => {
        if (closed) return;
        send(Buffer.concat([Buffer.from([0x00]), heartbeat(last.name, last.file.size, facts.serverId, last.file.checksum === 'CRC32')]));
        timer = setTimeout(beat, every);
      };
      timer = setTimeout(beat, every);
    }
  }

  const net = server._server;
  await new Promise<void>((resolve, reject) => {
    net.once('error', reject);
    net.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const address = net.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const close = async () => {
    for (const c of connections.values()) c.stream.destroy();
    await new Promise<void>((resolve) => net.close(() => resolve()));
  };
  return { port, facts, uri: `mysql://replay:replay@127.0.0.1:${port}/`, close, [Symbol.asyncDispose]: close };
}

/** Resolves once `stream` has written what it buffered, or closed. */
function drained(stream: Socket): Promise<void> {
  return new Promise((resume) => {
    const done = () => {
      stream.off('drain', done).off('close', done);
      resume();
    };
    stream.on('drain', done).on('close', done);
  });
}

/** The ROTATE a server makes up before each file (Binlog_sender::fake_rotate_event). */
function fakeRotate(name: string, position: number, serverId: number, checksum: boolean): Buffer {
  const body = Buffer.alloc(EVENT_HEADER_LENGTH + 8 + Buffer.byteLength(name));
  const size = body.length + (checksum ? 4 : 0);
  body.writeUInt32LE(0, 0);
  body[4] = EventType.ROTATE;
  body.writeUInt32LE(serverId, 5);
  body.writeUInt32LE(size, 9);
  body.writeUInt32LE(0, 13);
  body.writeUInt16LE(ARTIFICIAL_FLAG, 17);
  body.writeBigUInt64LE(BigInt(position), EVENT_HEADER_LENGTH);
  body.write(name, EVENT_HEADER_LENGTH + 8, 'utf8');
  return withChecksum(body, checksum);
}

/**
 * A HEARTBEAT_LOG_EVENT (Binlog_sender::send_heartbeat_event_v1): log_pos = the position reached,
 * `static_cast<uint32>` of it past 4 GiB; body = file name. (v2, type 41, with the 8-byte position,
 * goes only to a replica that sets USE_HEARTBEAT_EVENT_V2 in its dump flags.)
 */
function heartbeat(name: string, position: number, serverId: number, checksum: boolean): Buffer {
  const body = Buffer.alloc(EVENT_HEADER_LENGTH + Buffer.byteLength(name));
  body[4] = EventType.HEARTBEAT;
  body.writeUInt32LE(serverId, 5);
  body.writeUInt32LE(body.length + (checksum ? 4 : 0), 9);
  body.writeUInt32LE(position % LOG_POS_MODULUS, 13);
  body.write(name, EVENT_HEADER_LENGTH, 'utf8');
  return withChecksum(body, checksum);
}

/** The file's FORMAT_DESCRIPTION as Binlog_sender::send_format_description_event sends it. */
function formatDescription(file: BinlogFile, clearLogPos: boolean): Buffer {
  const fde = file.events[0];
  if (!fde) throw new Error(`${file.path}: no FORMAT_DESCRIPTION`);
  const body = Buffer.from(fde.body);
  body.writeUInt16LE(fde.flags & ~IN_USE_FLAG, 17);
  if (clearLogPos) {
    body.writeUInt32LE(0, 13);
    // create_timestamp: after binlog_version u16 and server_version char[50].
    body.writeUInt32LE(0, EVENT_HEADER_LENGTH + 52);
  }
  return withChecksum(body, file.checksum === 'CRC32');
}
