/**
 * The statements the replay server answers itself, as the presented MySQL version documents them.
 * Each answer cites the reference-manual page it follows; the values come from the served files
 * (see `serverFacts`) or are the documented defaults of a server started as the files' server was.
 * Anything not listed here is either forwarded to the `--schema-from` server (information_schema
 * and table reads, see server.ts) or refused with an error naming the statement.
 */
import { type BinlogFile, EVENT_HEADER_LENGTH, EventType } from './binlog-file.ts';
import { GtidSet } from './gtid-set.ts';

/** One served file: the name it is served under and its contents. */
export interface ServedFile {
  readonly name: string;
  readonly file: BinlogFile;
}

/** What the served files say about the server that wrote them, and the version presented. */
export interface ServerFacts {
  readonly version: string;
  /** major·10000 + minor·100 + patch. */
  readonly versionNumber: number;
  readonly serverId: number;
  readonly serverUuid: string;
  readonly gtidMode: 'ON' | 'OFF';
  readonly gtidExecuted: GtidSet;
  readonly gtidPurged: GtidSet;
  readonly files: readonly ServedFile[];
  /** Global variables by lowercase name, as `SHOW GLOBAL VARIABLES` prints them. */
  readonly variables: ReadonlyMap<string, string>;
}

/** Per-connection state the answers read and write. */
export interface Session {
  user: string;
  readonly connectionId: number;
  /** User variables (`@name`), lowercase names. */
  readonly userVariables: Map<string, string | null>;
}

/** A column of a result set the server makes up. `int` columns are sent as BIGINT, the rest as VARCHAR. */
export interface Column {
  name: string;
  type?: 'int' | 'string';
}

/** What a statement gets. `forward` means: not a statement the server fakes; ask `--schema-from`. */
export type Answer =
  | { kind: 'ok' }
  | { kind: 'rows'; columns: Column[]; rows: (string | null)[][] }
  | { kind: 'error'; errno: number; sqlState: string; message: string }
  | { kind: 'forward' }
  | { kind: 'kill'; connectionId: number };

/** ER_PARSE_ERROR exactly as the server words it (https://dev.mysql.com/doc/mysql-errors/8.4/en/server-error-reference.html#error_er_parse_error). */
export function parseError(near: string): Answer {
  return {
    kind: 'error',
    errno: 1064,
    sqlState: '42000',
    message: `You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near '${near}' at line 1`,
  };
}

/** The replay server's own refusal of a statement it neither fakes nor can forward: loud, naming the statement. */
export function unsupported(sql: string, why: string): Answer {
  return {
    kind: 'error',
    errno: 1235, // ER_NOT_SUPPORTED_YET: "This version of MySQL doesn't yet support '%s'"
    sqlState: '42000',
    message: `This version of MySQL doesn't yet support '${sql.slice(0, 200)}' (mysql-replay: ${why}; see test/support/mysql-replay/README.md)`,
  };
}

function versionNumber(version: string): number {
  const m = /^(\d+)\.(\d+)\.(\d+)/.exec(version);
  return m ? Number(m[1]) * 10000 + Number(m[2]) * 100 + Number(m[3]) : 0;
}

/** A stable made-up uuid for files that hold no GTID at all (their server's uuid is not recorded). */
const UNKNOWN_UUID = '00000000-0000-0000-0000-00000000feed';

/**
 * Reads the facts from the files: gtid_executed = the first file's PREVIOUS_GTIDS ∪ every GTID in the
 * files (as a server that still has all of them); gtid_purged = the first file's PREVIOUS_GTIDS (the
 * transactions before the oldest served file, as if its predecessors were purged); server_uuid = the
 * uuid of the files' GTIDs, else of the PREVIOUS_GTIDS. Row-format variables are what the files show.
 */
export function serverFacts(files: readonly ServedFile[], presentVersion?: string, overrides: Readonly<Record<string, string>> = {}): ServerFacts {
  const first = files[0]?.file;
  if (!first) throw new Error('mysql-replay: no binlog file to serve');
  const version = presentVersion ?? first.serverVersion;
  const n = versionNumber(version);
  const purged = new GtidSet(first.previousGtids);
  const executed = new GtidSet(first.previousGtids);
  for (const { file } of files) for (const { gtid } of file.gtids) executed.add(gtid);
  const uuids = files.flatMap(({ file }) => file.gtids.map((g) => g.gtid.uuid));
  const serverUuid = uuids[uuids.length - 1] ?? executed.list()[0]?.uuid ?? UNKNOWN_UUID;
  const has = (type: number) => files.some(({ file }) => file.events.some((e) => e.type === type));
  const gtidMode = has(EventType.GTID) || has(EventType.GTID_TAGGED) ? 'ON' : 'OFF';
  const on = (b: boolean) => (b ? 'ON' : 'OFF');
  // https://dev.mysql.com/doc/refman/8.4/en/replication-options-binary-log.html and
  // .../replication-options-gtids.html: names and value spellings as SHOW VARIABLES prints them.
  const variables = new Map<string, string>([
    ['version', version],
    ['version_comment', 'MySQL Community Server - GPL'],
    ['server_id', String(first.serverId)],
    ['server_uuid', serverUuid],
    ['log_bin', 'ON'],
    ['log_bin_basename', `/var/lib/mysql/${(files[0]?.name ?? 'binlog').replace(/\.\d+$/, '')}`],
    ['binlog_format', 'ROW'],
    ['binlog_row_image', files.some(({ file }) => file.partialImages) ? 'MINIMAL' : 'FULL'],
    ['binlog_row_metadata', files.some(({ file }) => file.columnNames) ? 'FULL' : 'MINIMAL'],
    ['binlog_transaction_compression', on(has(EventType.TRANSACTION_PAYLOAD))],
    ['binlog_row_value_options', has(EventType.PARTIAL_UPDATE_ROWS) ? 'PARTIAL_JSON' : ''],
    ['binlog_rows_query_log_events', on(has(EventType.ROWS_QUERY))],
    ['binlog_checksum', first.checksum],
    ['binlog_expire_logs_seconds', '2592000'],
    ['binlog_encryption', 'OFF'],
    ['gtid_mode', gtidMode],
    ['enforce_gtid_consistency', gtidMode],
    ['gtid_executed', executed.toString()],
    ['gtid_purged', purged.toString()],
    ['lower_case_table_names', '0'],
    ['explicit_defaults_for_timestamp', 'ON'],
    ['character_set_server', 'utf8mb4'],
    ['collation_server', 'utf8mb4_0900_ai_ci'],
    ['character_set_database', 'utf8mb4'],
    ['collation_database', 'utf8mb4_0900_ai_ci'],
    ['time_zone', 'SYSTEM'],
    ['system_time_zone', 'UTC'],
    ['max_allowed_packet', '67108864'],
    ['read_only', 'OFF'],
    ['transaction_isolation', 'REPEATABLE-READ'],
    ['sql_mode', 'ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION'],
  ]);
  // What the files cannot show (a history without TABLE_MAPs shows no binlog_row_metadata), the caller says.
  for (const [name, value] of Object.entries(overrides)) variables.set(name.toLowerCase(), value);
  // expire_logs_days: deprecated in 8.0, removed in 8.4 (https://dev.mysql.com/doc/refman/8.4/en/mysql-nutshell.html).
  if (n < 80400) variables.set('expire_logs_days', '0');
  return { version, versionNumber: n, serverId: first.serverId, serverUuid, gtidMode, gtidExecuted: executed, gtidPurged: purged, files, variables };
}

/** Variables whose `SELECT @@x` value is a number although SHOW VARIABLES prints ON/OFF (boolean system variables). */
const BOOLEAN_VARIABLES = new Set([
  'log_bin',
  'binlog_transaction_compression',
  'binlog_rows_query_log_events',
  'binlog_encryption',
  'explicit_defaults_for_timestamp',
  'read_only',
]);
const INTEGER_VARIABLES = new Set(['server_id', 'lower_case_table_names', 'binlog_expire_logs_seconds', 'expire_logs_days', 'max_allowed_packet']);

/** `SELECT @@x`'s value: booleans as 1/0 (https://dev.mysql.com/doc/refman/8.4/en/using-system-variables.html). */
function selectValue(name: string, facts: ServerFacts): { value: string; type: 'int' | 'string' } | undefined {
  const value = facts.variables.get(name);
  if (value === undefined) return undefined;
  if (BOOLEAN_VARIABLES.has(name)) return { value: value === 'ON' ? '1' : '0', type: 'int' };
  return { value, type: INTEGER_VARIABLES.has(name) ? 'int' : 'string' };
}

/** Splits on top-level commas (not inside quotes or parentheses). */
function splitTop(text: string, separator = ','): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quote = '';
  let start = 0;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i] as string;
    if (quote) {
      if (c === '\\') i += 1;
      else if (c === quote) quote = '';
    } else if (c === "'" || c === '"' || c === '`') quote = c;
    else if (c === '(') depth += 1;
    else if (c === ')') depth -= 1;
    else if (c === separator && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts.map((p) => p.trim()).filter((p) => p !== '');
}

function unquote(text: string): string {
  const t = text.trim();
  if ((t.startsWith("'") && t.endsWith("'")) || (t.startsWith('"') && t.endsWith('"')) || (t.startsWith('`') && t.endsWith('`'))) {
    return t.slice(1, -1).replace(/\\(.)/g, '$1').replace(/''/g, "'");
  }
  return t;
}

/** A value expression in SELECT or SET: literals, @@variables, @user variables, VERSION(), CONNECTION_ID(). */
function evaluate(expr: string, facts: ServerFacts, session: Session): { value: string | null; type: 'int' | 'string' } | Answer {
  const e = expr.trim();
  if (/^-?\d+$/.test(e)) return { value: e, type: 'int' };
  if (/^'.*'$|^".*"$/s.test(e)) return { value: unquote(e), type: 'string' };
  if (/^null$/i.test(e)) return { value: null, type: 'string' };
  // https://dev.mysql.com/doc/refman/8.4/en/information-functions.html#function_version
  if (/^version\(\)$/i.test(e)) return { value: facts.version, type: 'string' };
  // https://dev.mysql.com/doc/refman/8.4/en/information-functions.html#function_connection-id
  if (/^connection_id\(\)$/i.test(e)) return { value: String(session.connectionId), type: 'int' };
  const system = /^@@(?:(global|session|local)\.)?([a-z_0-9]+)$/i.exec(e);
  if (system) {
    const name = (system[2] as string).toLowerCase();
    const found = selectValue(name, facts);
    // ER_UNKNOWN_SYSTEM_VARIABLE (https://dev.mysql.com/doc/mysql-errors/8.4/en/server-error-reference.html#error_er_unknown_system_variable)
    if (!found) return { kind: 'error', errno: 1193, sqlState: 'HY000', message: `Unknown system variable '${name}'` };
    return found;
  }
  const user = /^@([a-z_0-9$.]+)$/i.exec(e);
  // https://dev.mysql.com/doc/refman/8.4/en/user-variables.html: an unset user variable is NULL.
  if (user) return { value: session.userVariables.get((user[1] as string).toLowerCase()) ?? null, type: 'string' };
  const fn = /^([a-z_0-9]+)\s*\(/i.exec(e);
  // ER_SP_DOES_NOT_EXIST, as MySQL answers a function it lacks (MariaDB's BINLOG_GTID_POS, for one).
  if (fn && !['version', 'connection_id', 'database', 'now'].includes((fn[1] as string).toLowerCase())) {
    return { kind: 'error', errno: 1305, sqlState: '42000', message: `FUNCTION ${(fn[1] as string).toUpperCase()} does not exist` };
  }
  return unsupported(expr, 'an expression the replay server does not evaluate');
}

function isAnswer(x: unknown): x is Answer {
  return typeof x === 'object' && x !== null && 'kind' in x;
}

/** The `Info` column SHOW BINLOG EVENTS prints, for the event types whose info is cheap to produce. */
function eventInfo(file: BinlogFile, index: number): string {
  const event = file.events[index];
  if (!event) return '';
  const data = event.body.subarray(EVENT_HEADER_LENGTH);
  switch (event.type) {
    case EventType.FORMAT_DESCRIPTION:
      return `Server ver: ${file.serverVersion}, Binlog ver: ${data.readUInt16LE(0)}`;
    case EventType.ROTATE:
      return `${data.subarray(8).toString('utf8')};pos=${data.readBigUInt64LE(0)}`;
    case EventType.PREVIOUS_GTIDS:
      return new GtidSet(file.previousGtids).toString();
    case EventType.ANONYMOUS_GTID:
      return "SET @@SESSION.GTID_NEXT= 'ANONYMOUS'";
    case EventType.GTID:
    case EventType.GTID_TAGGED: {
      const g = file.gtids.find((x) => x.offset === event.offset)?.gtid;
      return g ? `SET @@SESSION.GTID_NEXT= '${g.uuid}:${g.tag ? `${g.tag}:` : ''}${g.gno}'` : '';
    }
    case EventType.XID:
      return `COMMIT /* xid=${data.readBigUInt64LE(0)} */`;
    case EventType.QUERY: {
      // Post-header: thread_id u32, exec_time u32, db_len u8, error u16, status_vars_len u16.
      const dbLength = data[8] as number;
      const statusLength = data.readUInt16LE(11);
      const db = data.subarray(13 + statusLength, 13 + statusLength + dbLength).toString('utf8');
      const query = data.subarray(13 + statusLength + dbLength + 1).toString('utf8');
      return db && query !== 'BEGIN' ? `use \`${db}\`; ${query}` : query;
    }
    case EventType.TABLE_MAP: {
      const tableId = data.readUIntLE(0, 6);
      const schemaLength = data[8] as number;
      const schema = data.subarray(9, 9 + schemaLength).toString('utf8');
      const tableLength = data[10 + schemaLength] as number;
      const table = data.subarray(11 + schemaLength, 11 + schemaLength + tableLength).toString('utf8');
      return `table_id: ${tableId} (${schema}.${table})`;
    }
    case EventType.WRITE_ROWS_V2:
    case EventType.UPDATE_ROWS_V2:
    case EventType.DELETE_ROWS_V2:
    case EventType.PARTIAL_UPDATE_ROWS:
      return `table_id: ${data.readUIntLE(0, 6)}${data.readUInt16LE(6) & 1 ? ' flags: STMT_END_F' : ''}`;
    case EventType.ROWS_QUERY:
      return `# ${data.subarray(1).toString('utf8')}`;
    default:
      return '';
  }
}

/** SHOW BINLOG EVENTS' Event_type names (sql/log_event.cc `Log_event::get_type_str`). */
const SHOW_TYPE: Record<number, string> = {
  2: 'Query',
  3: 'Stop',
  4: 'Rotate',
  15: 'Format_desc',
  16: 'Xid',
  19: 'Table_map',
  29: 'Rows_query',
  30: 'Write_rows',
  31: 'Update_rows',
  32: 'Delete_rows',
  33: 'Gtid',
  34: 'Anonymous_Gtid',
  35: 'Previous_gtids',
  39: 'Update_rows_partial',
  40: 'Transaction_payload',
  42: 'Gtid_tagged_log_event',
};

/** Answers one COM_QUERY statement (or a prepared statement with its parameters substituted). */
export function answer(sqlText: string, facts: ServerFacts, session: Session): Answer {
  const sql = sqlText
    .trim()
    .replace(/;\s*$/, '')
    .replace(/^\/\*.*?\*\/\s*/s, '');
  const upper = sql.replace(/\s+/g, ' ').toUpperCase();
  const last = facts.files[facts.files.length - 1];
  const status = () => ({
    kind: 'rows' as const,
    columns: [
      { name: 'File' },
      { name: 'Position', type: 'int' as const },
      { name: 'Binlog_Do_DB' },
      { name: 'Binlog_Ignore_DB' },
      { name: 'Executed_Gtid_Set' },
    ],
    rows: last ? [[last.name, String(last.file.size), '', '', facts.gtidExecuted.toString()]] : [],
  });

  // SET: https://dev.mysql.com/doc/refman/8.4/en/set-variable.html. User variables are kept (the
  // binlog sender reads @master_binlog_checksum and @master_heartbeat_period, as sql/rpl_binlog_sender.cc
  // does); session system variables are accepted and ignored (nothing here depends on them);
  // SET GLOBAL is refused: a replay cannot change how the files were written.
  if (/^SET\b/i.test(sql)) {
    if (/^SET\s+(GLOBAL|PERSIST|PERSIST_ONLY)\b|^SET\s+@@(GLOBAL|PERSIST)\./i.test(sql)) return unsupported(sql, 'a replayed binlog cannot change its server');
    for (const item of splitTop(sql.replace(/^SET\s+/i, ''))) {
      const user = /^@([a-z_0-9$.]+)\s*:?=\s*(.+)$/is.exec(item);
      if (!user) continue;
      const value = evaluate(user[2] as string, facts, session);
      if (isAnswer(value)) return value;
      session.userVariables.set((user[1] as string).toLowerCase(), value.value);
    }
    return { kind: 'ok' };
  }

  // SHOW [GLOBAL|SESSION] VARIABLES [LIKE 'p' | WHERE Variable_name IN (...) | WHERE Variable_name = 'x']:
  // https://dev.mysql.com/doc/refman/8.4/en/show-variables.html
  const vars = /^SHOW (?:GLOBAL |SESSION )?VARIABLES(?: (LIKE|WHERE) (.+))?$/is.exec(sql.replace(/\s+/g, ' '));
  if (vars) {
    let names = [...facts.variables.keys()];
    if (vars[1]?.toUpperCase() === 'LIKE') {
      const pattern = new RegExp(
        `^${unquote(vars[2] as string)
          .replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
          .replace(/%/g, '.*')
          .replace(/_/g, '.')}$`,
        'i',
      );
      names = names.filter((n) => pattern.test(n));
    } else if (vars[1]) {
      const cond = /^`?variable_name`?\s*(?:IN\s*\((.*)\)|=\s*(.+))$/is.exec((vars[2] as string).trim());
      if (!cond) return unsupported(sql, 'a WHERE the replay server does not evaluate');
      const wanted = new Set(splitTop(cond[1] ?? (cond[2] as string)).map((v) => unquote(v).toLowerCase()));
      names = names.filter((n) => wanted.has(n));
    }
    names.sort();
    return { kind: 'rows', columns: [{ name: 'Variable_name' }, { name: 'Value' }], rows: names.map((n) => [n, facts.variables.get(n) ?? '']) };
  }

  // SHOW STATUS: MySQL has none of MariaDB's binlog_snapshot_* status variables; a LIKE that matches
  // nothing is an empty set (https://dev.mysql.com/doc/refman/8.4/en/show-status.html).
  if (/^SHOW (GLOBAL |SESSION )?STATUS LIKE 'binlog_snapshot_%'$/i.test(upper))
    return { kind: 'rows', columns: [{ name: 'Variable_name' }, { name: 'Value' }], rows: [] };

  // SHOW BINARY LOGS (and its synonym SHOW MASTER LOGS, which 8.4 still accepts):
  // https://dev.mysql.com/doc/refman/8.4/en/show-binary-logs.html — Log_name, File_size, Encrypted.
  if (upper === 'SHOW BINARY LOGS' || upper === 'SHOW MASTER LOGS') {
    return {
      kind: 'rows',
      columns: [{ name: 'Log_name' }, { name: 'File_size', type: 'int' }, { name: 'Encrypted' }],
      rows: facts.files.map((f) => [f.name, String(f.file.size), 'No']),
    };
  }

  // SHOW MASTER STATUS: https://dev.mysql.com/doc/refman/8.0/en/show-master-status.html; removed in
  // 8.4 (https://dev.mysql.com/doc/refman/8.4/en/mysql-nutshell.html#mysql-nutshell-removals): 8.4
  // and 9.x answer it with ER_PARSE_ERROR at MASTER.
  if (upper === 'SHOW MASTER STATUS') return facts.versionNumber >= 80400 ? parseError(sql.replace(/^SHOW\s+/i, '')) : status();

  // SHOW BINARY LOG STATUS: added in 8.2.0 (https://dev.mysql.com/doc/refman/8.4/en/show-binary-log-status.html);
  // before that the parser stops at LOG (it knows only SHOW BINARY LOGS).
  if (upper === 'SHOW BINARY LOG STATUS') return facts.versionNumber >= 80200 ? status() : parseError(sql.replace(/^SHOW\s+BINARY\s+/i, ''));

  // SHOW BINLOG EVENTS [IN 'f'] [FROM pos] [LIMIT [offset,] n]: https://dev.mysql.com/doc/refman/8.4/en/show-binlog-events.html
  const events = /^SHOW BINLOG EVENTS(?:\s+IN\s+('[^']*'|"[^"]*"))?(?:\s+FROM\s+(\d+))?(?:\s+LIMIT\s+(?:(\d+)\s*,\s*)?(\d+))?$/is.exec(
    sql.replace(/\s+/g, ' '),
  );
  if (events) {
    const name = events[1] ? unquote(events[1]) : facts.files[0]?.name;
    const served = facts.files.find((f) => f.name === name);
    // ER_ERROR_WHEN_EXECUTING_COMMAND as sql/rpl_source.cc show_binlog_events words it.
    const fail = (why: string): Answer => ({
      kind: 'error',
      errno: 1220,
      sqlState: 'HY000',
      message: `Error when executing command SHOW BINLOG EVENTS: ${why}`,
    });
    if (!served) return fail('Could not find target log');
    const from = events[2] ? Number(events[2]) : 4;
    const start = served.file.events.findIndex((e) => e.offset === from);
    if (start < 0 && from < served.file.size) return fail('Wrong offset or I/O error');
    const offset = events[3] ? Number(events[3]) : 0;
    const limit = events[4] ? Number(events[4]) : Number.POSITIVE_INFINITY;
    const rows: (string | null)[][] = [];
    if (start >= 0) {
      for (let i = start + offset; i < served.file.events.length && rows.length < limit; i += 1) {
        const e = served.file.events[i];
        if (!e) break;
        rows.push([served.name, String(e.offset), SHOW_TYPE[e.type] ?? `Unknown_${e.type}`, String(e.serverId), String(e.logPos), eventInfo(served.file, i)]);
      }
    }
    return {
      kind: 'rows',
      columns: [
        { name: 'Log_name' },
        { name: 'Pos', type: 'int' },
        { name: 'Event_type' },
        { name: 'Server_id', type: 'int' },
        { name: 'End_log_pos', type: 'int' },
        { name: 'Info' },
      ],
      rows,
    };
  }

  // SHOW GRANTS [FOR CURRENT_USER[()]]: https://dev.mysql.com/doc/refman/8.4/en/show-grants.html. The
  // replay user holds what docs/RUNBOOK.md asks for, granted directly (no roles).
  if (/^SHOW GRANTS(?: FOR CURRENT_USER(?:\(\))?)?$/i.test(upper)) {
    const who = `\`${session.user}\`@\`%\``;
    return {
      kind: 'rows',
      columns: [{ name: `Grants for ${session.user}@%` }],
      rows: [[`GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO ${who}`]],
    };
  }

  // CURRENT_ROLE(): https://dev.mysql.com/doc/refman/8.4/en/information-functions.html#function_current-role
  // — the active roles, `NONE` when there are none (the replay user's grants are direct).
  const role = /^SELECT CURRENT_ROLE\(\)(?: AS `?(\w+)`?)?$/i.exec(sql.replace(/\s+/g, ' ').trim());
  if (role) return { kind: 'rows', columns: [{ name: role[1] ?? 'CURRENT_ROLE()' }], rows: [['NONE']] };

  // KILL [CONNECTION | QUERY] id: https://dev.mysql.com/doc/refman/8.4/en/kill.html
  const kill = /^KILL(?: CONNECTION| QUERY)? (\d+)$/i.exec(upper);
  if (kill) return { kind: 'kill', connectionId: Number(kill[1]) };

  // Session statements a client library sends; nothing here depends on them.
  if (/^(COMMIT|ROLLBACK|BEGIN|START TRANSACTION|USE)\b/i.test(upper)) return { kind: 'forward' };

  // SELECT of values only (no FROM): @@variables, VERSION(), literals, each named as the server names
  // it (its alias, else its text: https://dev.mysql.com/doc/refman/8.4/en/select.html).
  const select = /^SELECT\s+(.+)$/is.exec(sql);
  if (select && !/\bFROM\b/i.test(select[1] as string)) {
    const columns: Column[] = [];
    const row: (string | null)[] = [];
    for (const item of splitTop(select[1] as string)) {
      const aliased = /^(.*?)\s+(?:AS\s+)?(`[^`]+`|'[^']+'|[a-z_0-9]+)$/is.exec(item);
      const expr = aliased && !/^@@?[a-z_.0-9]+$/i.test(item) ? (aliased[1] as string) : item;
      const name = aliased && expr !== item ? unquote(aliased[2] as string) : item;
      const value = evaluate(expr, facts, session);
      if (isAnswer(value)) return value;
      columns.push({ name, type: value.type });
      row.push(value.value);
    }
    return { kind: 'rows', columns, rows: [row] };
  }

  // performance_schema.log_status is a live server's consistent snapshot point: a replay has none.
  if (/performance_schema/i.test(sql)) return unsupported(sql, 'performance_schema belongs to a live server');
  // Reads of schemas and tables (information_schema, SELECT … FROM db.t): the forward server's.
  if (/^(SELECT|SHOW (FULL )?(COLUMNS|FIELDS|INDEX|INDEXES|KEYS|CREATE TABLE|TABLES|DATABASES))\b/i.test(upper)) return { kind: 'forward' };
  return unsupported(sql, 'not a statement the replay server answers or forwards');
}
