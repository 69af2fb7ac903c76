import { createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { GtidSet, isMariadbGtidPosition } from '../core/gtid-set.ts';
import { type BinlogPosition, parsePosition } from '../core/position.ts';
import { NameScanner, type TableRef, tableKey } from '../core/table-ref.ts';
import { ConfigError, SluiceError } from '../errors.ts';

/** Where a source with no stored position starts reading. */
export type Startup =
  | { mode: 'initial' | 'initial-only' | 'latest' | 'earliest' }
  | { mode: 'position'; position: BinlogPosition }
  | { mode: 'gtid'; gtid: string }
  | { mode: 'timestamp'; at: number };

const STARTUP_HELP = 'expected initial, initial-only, latest, earliest, position:<file>:<pos>, gtid:<set> or timestamp:<ISO-8601>';

function parseStartup(text: string, ctx: z.RefinementCtx): Startup {
  if (text === 'initial' || text === 'initial-only' || text === 'latest' || text === 'earliest') return { mode: text };
  // A MariaDB GTID position (d-s-n per domain) or a MySQL GTID set (uuid:1-5:11-18, tagged uuid:tag:1-5).
  if (text.startsWith('gtid:') && (isMariadbGtidPosition(text.slice(5)) || GtidSet.is(text.slice(5)))) return { mode: 'gtid', gtid: text.slice(5) };
  if (text.startsWith('gtid:')) {
    ctx.addIssue({
      code: 'custom',
      message: `"${text.slice(5)}" is neither a MariaDB GTID position (d-s-n[,d-s-n…], e.g. gtid:0-1-1234) nor a MySQL GTID set (uuid:n-m[:n-m…][,…], e.g. gtid:3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5)`,
    });
    return z.NEVER;
  }
  if (text.startsWith('timestamp:')) {
    const at = Date.parse(text.slice('timestamp:'.length));
    if (Number.isFinite(at) && /[zZ]|[+-]\d\d:?\d\d$/.test(text)) return { mode: 'timestamp', at };
    ctx.addIssue({ code: 'custom', message: `"${text.slice(10)}" is not an ISO-8601 time with a zone, e.g. timestamp:2026-11-29T15:00:00Z` });
    return z.NEVER;
  }
  if (text.startsWith('position:')) {
    try {
      return { mode: 'position', position: parsePosition(text.slice('position:'.length)) };
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: (error as Error).message });
      return z.NEVER;
    }
  }
  ctx.addIssue({ code: 'custom', message: `${STARTUP_HELP}, got "${text}"` });
  return z.NEVER;
}

/** `db.table:column, ...`, names plain or backtick-quoted (`` `a.b`.`c/d`:`my col` ``); keyed by `tableKey`. */
function parseKeyColumns(text: string, ctx: z.RefinementCtx): ReadonlyMap<string, string> {
  const map = new Map<string, string>();
  const scanner = new NameScanner(text, 'db.table:column list');
  try {
    for (;;) {
      while (scanner.accept(','));
      scanner.skipSpace();
      if (scanner.done) break;
      const ref = scanner.tableRef();
      if (!scanner.accept(':')) scanner.fail(`expected ":" and the key column after the table, at position ${scanner.pos + 1}`);
      map.set(tableKey(ref), scanner.name());
      scanner.skipSpace();
      if (!scanner.done && !scanner.accept(',')) scanner.fail(`expected "," at position ${scanner.pos + 1}, found "${scanner.peek()}"`);
    }
  } catch (error) {
    if (!(error instanceof SluiceError)) throw error;
    ctx.addIssue({ code: 'custom', message: error.message });
  }
  return map;
}

function parseDdlOverrides(text: string, ctx: z.RefinementCtx): ReadonlyMap<string, 'resnapshot' | 'noop'> {
  const map = new Map<string, 'resnapshot' | 'noop'>();
  for (const part of text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const match = /^([^:=\s]+\.\d+:\d+)=(resnapshot|noop)$/.exec(part);
    if (!match?.[1] || !match[2]) {
      ctx.addIssue({ code: 'custom', message: `"${part}" is not <binlog file>:<pos>=resnapshot|noop (the position DDL_UNKNOWN names)` });
      continue;
    }
    map.set(match[1], match[2] as 'resnapshot' | 'noop');
  }
  return map;
}

function parsePatterns(text: string, ctx: z.RefinementCtx): RegExp[] {
  const patterns: RegExp[] = [];
  for (const part of text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    try {
      patterns.push(new RegExp(`^(?:${part})$`));
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: `"${part}" is not a valid regular expression: ${(error as Error).message}` });
    }
  }
  return patterns;
}

/**
 * A MySQL URL whose credentials a URL parser reads as written. A `/`, `?` or `#` in the password
 * ends the host part early (the driver would then try to reach part of the password as a host),
 * and a `%` not followed by two hex digits cannot be decoded. The messages never repeat the URL.
 */
function checkMysqlUrl(url: string, ctx: z.RefinementCtx): void {
  const at = url.lastIndexOf('@');
  const credentials = at < 0 ? '' : url.slice('mysql://'.length, at);
  const encode = 'percent-encode the user name and password (/ as %2F, ? as %3F, # as %23, @ as %40, : as %3A, % as %25)';
  if (/[/?#]/.test(credentials) || /%(?![0-9a-fA-F]{2})/.test(credentials)) {
    ctx.addIssue({ code: 'custom', message: `the credentials hold a character a URL cannot carry as written: ${encode}` });
    return;
  }
  try {
    if (!new URL(url).hostname) ctx.addIssue({ code: 'custom', message: 'expected mysql://user:password@host:port/ (no host found)' });
  } catch {
    ctx.addIssue({ code: 'custom', message: `not a URL: expected mysql://user:password@host:port/; ${encode}` });
  }
}

const PUBLIC_KEY_HELP =
  "the server's RSA public key as PEM text (-----BEGIN PUBLIC KEY-----) or a path to a PEM file: SHOW STATUS LIKE 'Caching_sha2_password_rsa_public_key' over a trusted connection prints it";

/**
 * SLUICE_MYSQL_SERVER_PUBLIC_KEY as PEM text: the value itself, or the file it names. Only a public
 * key is taken: a private key would derive one, but has no business in the configuration.
 */
function parseServerPublicKey(value: string, ctx: z.RefinementCtx): string {
  let pem = value;
  if (!value.trimStart().startsWith('-----BEGIN')) {
    try {
      pem = readFileSync(value, 'utf8');
    } catch (error) {
      ctx.addIssue({
        code: 'custom',
        message: `cannot read ${value} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); expected ${PUBLIC_KEY_HELP}`,
      });
      return z.NEVER;
    }
  }
  const where = pem === value ? 'the value' : value;
  if (!/-----BEGIN (RSA )?PUBLIC KEY-----/.test(pem)) {
    ctx.addIssue({ code: 'custom', message: `${where} holds no PEM public key; expected ${PUBLIC_KEY_HELP}` });
    return z.NEVER;
  }
  try {
    const key = createPublicKey(pem);
    if (key.asymmetricKeyType !== 'rsa') throw new Error(`a ${key.asymmetricKeyType} key, not RSA`);
    return key.export({ type: 'spki', format: 'pem' }).toString();
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: `${where} is not an RSA public key (${(error as Error).message}); expected ${PUBLIC_KEY_HELP}` });
    return z.NEVER;
  }
}

const positiveInt = (fallback: number) => z.coerce.number().int().positive().default(fallback);

const schema = z.object({
  SLUICE_SOURCE_ID: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'use 1-64 letters, digits, "-" or "_"'),
  SLUICE_MYSQL_URL: z
    .string()
    .regex(/^mysql:\/\//, 'expected mysql://user:password@host:port/')
    .superRefine(checkMysqlUrl)
    .optional(),
  /** AWS Secrets Manager secret holding {"username","password","host","port"}; replaces SLUICE_MYSQL_URL. */
  SLUICE_MYSQL_SECRET_ID: z.string().min(1).optional(),
  SLUICE_MYSQL_TLS: z.enum(['off', 'required', 'verify']).default('off'),
  SLUICE_MYSQL_CA: z.string().optional(),
  /** The server's RSA public key, pinned, for caching_sha2_password / sha256_password without TLS: PEM text or a file path. */
  SLUICE_MYSQL_SERVER_PUBLIC_KEY: z.string().transform(parseServerPublicKey).optional(),
  SLUICE_STATE_TABLE: z.string().min(3, 'name the DynamoDB table holding offsets and leases'),
  SLUICE_BUCKET: z.string().min(3, 'name the S3 bucket receiving the change files'),
  SLUICE_PREFIX: z
    .string()
    .default('')
    .transform((p) => p.replace(/^\/+|\/+$/g, ''))
    .transform((p) => (p ? `${p}/` : '')),
  SLUICE_INCLUDE: z.string().default('').transform(parsePatterns),
  SLUICE_EXCLUDE: z.string().default('').transform(parsePatterns),
  SLUICE_STARTUP: z.string().default('initial').transform(parseStartup),
  /** For tables without a primary key: `db.table:column,...` (names may be backtick-quoted), a unique NOT NULL column identifying rows. */
  SLUICE_KEY_COLUMNS: z.string().default('').transform(parseKeyColumns),
  /** Rows per snapshot page (one commit each) and rows per chunk (the unit parallel workers claim). */
  SLUICE_SNAPSHOT_PAGE_ROWS: positiveInt(50_000),
  SLUICE_SNAPSHOT_CHUNK_ROWS: positiveInt(1_000_000),
  /** A chunk's lease; renewed by every page commit, so a killed worker blocks its chunk this long at most. */
  SLUICE_SNAPSHOT_LEASE_SECONDS: positiveInt(60),
  /** Cut a batch once its uncompressed JSON reaches this many bytes (at the next transaction end). */
  SLUICE_BATCH_MAX_BYTES: positiveInt(64 * 1024 * 1024),
  SLUICE_BATCH_MAX_EVENTS: positiveInt(200_000),
  /** Cut a batch once its first event is this old, so data lands within a bounded delay. */
  SLUICE_BATCH_MAX_AGE_SECONDS: positiveInt(20),
  /**
   * Low latency: commit the open batch once the run is past the binlog end it saw at its start,
   * nothing decoded waits, and its first event is this old, instead of waiting for the limits above.
   * Each commit costs requests: docs/RUNBOOK.md "Latency and its cost" prices the settings.
   */
  SLUICE_TARGET_LATENCY_MS: z.coerce.number().int().positive().optional(),
  /** With no captured rows, commit the advancing position (heartbeat) at most this often. */
  SLUICE_COMMIT_INTERVAL_SECONDS: positiveInt(10),
  /** Stop reading this long before the Lambda's (or the CLI run's) time is up, to commit and hand over. */
  SLUICE_SAFETY_MARGIN_SECONDS: positiveInt(15),
  /** CLI runs without --once: how long one capture run lasts. Lambda uses its own remaining time. */
  SLUICE_RUN_SECONDS: positiveInt(60),
  /** The capture lease, renewed while the run works: a killed run blocks the source this long at most. */
  SLUICE_LEASE_SECONDS: positiveInt(20),
  SLUICE_S3_FORCE_PATH_STYLE: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true'),
  /** End each capture run once caught up instead of reading until its time is up (far cheaper when quiet; latency up to one schedule tick). `sluice capture --once` sets it. */
  SLUICE_STOP_WHEN_CAUGHT_UP: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true'),
  /**
   * When the stored position's binlog history is another one (POSITION_FOREIGN) and the server's
   * GTIDs prove it carries every transaction read and every one after them (a promoted replica, a
   * Blue/Green target): `follow` moves the position by GTID and goes on; `stop` stops and asks, as
   * when nothing proves it (docs/RUNBOOK.md, "Automatic decision: following a failover").
   */
  SLUICE_ON_HISTORY_CHANGE: z.enum(['follow', 'stop']).default('follow'),
  /** The snapshot Lambda the poller starts for `initial` and restarts when stalled (serverless.yml sets it). */
  SLUICE_SNAPSHOT_FUNCTION: z.string().min(1).optional(),
  /**
   * Operator decisions for DDL sluice cannot classify (DDL_UNKNOWN): `<file>:<pos>=resnapshot|noop`,
   * comma-separated, the position as the error names it.
   */
  SLUICE_DDL_OVERRIDES: z.string().default('').transform(parseDdlOverrides),
  /**
   * What the poller does by itself with a DDL statement it cannot classify on a captured table:
   * `resnapshot` (the default) resets and re-copies the tables it names while every other table
   * streams on; `stop` stops the source with DDL_UNKNOWN for an operator to decide. docs/RUNBOOK.md,
   * "DDL sluice cannot classify".
   */
  SLUICE_DDL_UNKNOWN: z.enum(['resnapshot', 'stop']).default('resnapshot'),
  /** The Iceberg merge compacts a table (rewrites it into key ranges or hash buckets, no delete files) once its current snapshot has more files than this. */
  SLUICE_ICEBERG_COMPACT_FILES: positiveInt(64),
  /** Iceberg snapshots older than this (other than the current one) are expired and their unreferenced files deleted. */
  SLUICE_ICEBERG_RETENTION_HOURS: z.coerce.number().positive().default(24),
  SLUICE_ICEBERG_KEEP_SNAPSHOTS: z.coerce.number().int().positive().default(1),
  /** One table's merge lease, renewed while it works; a merge that was killed blocks the table this long at most. */
  SLUICE_ICEBERG_LEASE_SECONDS: positiveInt(30),
  /** How a keyed table's merge deletes replaced rows: position deletes (every engine reads them) or equality deletes (cheaper to write; not PyIceberg, not Snowflake). */
  SLUICE_ICEBERG_DELETES: z.enum(['position', 'equality']).default('position'),
  /** Invocations a first load is written by at once (the merge and workers it invokes); 1: the merge alone. */
  SLUICE_ICEBERG_WORKERS: positiveInt(1),
  /** A first load of more change-log events than this is split into buckets of about this many rows, each written (and redone after a crash) on its own, committed as one snapshot. */
  SLUICE_ICEBERG_BUCKET_ROWS: positiveInt(4_000_000),
  /** Who compacts and expires the Iceberg tables: sluice (its own housekeeping), or the catalog's maintenance (Glue table optimizers, S3 Tables), whose compactions the merge then builds on. */
  SLUICE_ICEBERG_MAINTENANCE: z.enum(['sluice', 'catalog']).default('sluice'),
  /** Register and update each Iceberg table in this Glue database (AWS); empty: the file catalog only (version-hint.text). */
  SLUICE_GLUE_DATABASE: z
    .string()
    .regex(/^[a-z0-9_]{1,255}$/, 'use lower-case letters, digits and "_" (a Glue/Athena database name)')
    .optional(),
  /** With Glue: the role Glue's table optimizers (compaction, snapshot retention, orphan-file deletion) run as; the merge creates them for each table it registers. Needs SLUICE_ICEBERG_MAINTENANCE=catalog. */
  SLUICE_GLUE_OPTIMIZER_ROLE_ARN: z
    .string()
    .regex(/^arn:aws[a-z-]*:iam::\d{12}:role\/.+$/, 'expected an IAM role ARN (arn:aws:iam::<account>:role/<name>)')
    .optional(),
  /** Where Iceberg readers find each table besides version-hint.text: file (only that), glue (SLUICE_GLUE_DATABASE) or rest (an Iceberg REST catalog); default glue when SLUICE_GLUE_DATABASE is set, else file. */
  SLUICE_ICEBERG_CATALOG: z.enum(['file', 'glue', 'rest']).optional(),
  /** The Iceberg REST catalog's base URI, the part before `/v1` (S3 Tables: https://s3tables.<region>.amazonaws.com/iceberg). */
  SLUICE_ICEBERG_REST_URI: z
    .url({ protocol: /^https?$/, error: 'expected an http(s) URL, the part before /v1 (e.g. https://s3tables.us-east-1.amazonaws.com/iceberg)' })
    .optional(),
  /** The warehouse asked for in GET /v1/config (S3 Tables: the table bucket ARN; Glue: the catalog id). */
  SLUICE_ICEBERG_REST_WAREHOUSE: z.string().min(1).optional(),
  /** One namespace for every table (levels separated by "."), named `<db>__<table>`; default: the source database as namespace, the table's own name. */
  SLUICE_ICEBERG_REST_NAMESPACE: z
    .string()
    .regex(/^[^.]+(\.[^.]+)*$/, 'expected a namespace, its levels separated by "." (e.g. sluice or lake.sluice)')
    .optional(),
  /** Sign requests with SigV4 for this service (s3tables for S3 Tables, glue for the Glue Data Catalog), with the AWS configuration's credentials and region. */
  SLUICE_ICEBERG_REST_SIGNING_NAME: z
    .string()
    .regex(/^[a-z0-9-]+$/, 'expected an AWS signing name such as s3tables or glue')
    .optional(),
  /** The SigV4 region, when not the AWS configuration's (AWS_REGION, the profile). */
  SLUICE_ICEBERG_REST_SIGNING_REGION: z
    .string()
    .regex(/^[a-z0-9-]+$/, 'expected an AWS region such as us-east-1')
    .optional(),
  /** A bearer token for the REST catalog. */
  SLUICE_ICEBERG_REST_TOKEN: z.string().min(1).optional(),
  /** OAuth2 client credentials `<client id>:<secret>` exchanged for a token (Polaris, Lakekeeper). */
  SLUICE_ICEBERG_REST_CREDENTIAL: z
    .string()
    .regex(/^[^:]+:.+$/, 'expected <client id>:<client secret>')
    .optional(),
  /** The OAuth2 scope asked for with SLUICE_ICEBERG_REST_CREDENTIAL. */
  SLUICE_ICEBERG_REST_SCOPE: z.string().min(1).default('catalog'),
  /** The OAuth2 token endpoint, when not `<uri>/v1/oauth/tokens`. */
  SLUICE_ICEBERG_REST_OAUTH_URI: z.url({ protocol: /^https?$/ }).optional(),
  /** Who places a new table's files: sluice (under SLUICE_BUCKET, registered there) or the catalog (its create-table assigns the location: S3 Tables, managed warehouses). */
  SLUICE_ICEBERG_REST_LOCATION: z.enum(['sluice', 'catalog']).optional(),
});

/** Every SLUICE_* variable the configuration reads. */
export const SETTING_NAMES: readonly string[] = Object.freeze(Object.keys(schema.shape));

/** The Iceberg catalog the merge publishes each table's committed version to (version-hint.text is always written). */
export type IcebergCatalogConfig =
  | Readonly<{ kind: 'file' }>
  | Readonly<{
      kind: 'glue';
      database: string;
      /** The role Glue's table optimizers run as (SLUICE_GLUE_OPTIMIZER_ROLE_ARN); undefined: the merge creates none. */
      optimizerRoleArn: string | undefined;
    }>
  | Readonly<{
      kind: 'rest';
      uri: string;
      warehouse: string | undefined;
      /** Levels of the one namespace every table goes into; undefined: the source database. */
      namespace: readonly string[] | undefined;
      /** Who places a new table's files (SLUICE_ICEBERG_REST_LOCATION): sluice, under SLUICE_BUCKET, or the catalog. */
      location: 'sluice' | 'catalog';
      auth:
        | Readonly<{ kind: 'none' }>
        | Readonly<{ kind: 'sigv4'; signingName: string; region: string | undefined }>
        | Readonly<{ kind: 'bearer'; token: string }>
        | Readonly<{ kind: 'oauth'; clientId: string; clientSecret: string; scope: string; tokenUri: string | undefined }>;
    }>;

export type Config = Readonly<{
  sourceId: string;
  mysqlUrl: string | undefined;
  mysqlSecretId: string | undefined;
  mysqlTls: 'off' | 'required' | 'verify';
  mysqlCa: string | undefined;
  /** SLUICE_MYSQL_SERVER_PUBLIC_KEY as SPKI PEM text, read and checked. */
  mysqlServerPublicKey: string | undefined;
  stateTable: string;
  bucket: string;
  prefix: string;
  include: readonly RegExp[];
  exclude: readonly RegExp[];
  startup: Startup;
  /** `SLUICE_KEY_COLUMNS`: the key column by table, keyed by `tableKey` (see `keyColumn`). */
  keyColumns: ReadonlyMap<string, string>;
  snapshot: Readonly<{ pageRows: number; chunkRows: number; leaseMs: number }>;
  /** When to cut a batch; `targetLatencyMs` (optional) cuts it once caught up and that old. */
  batch: Readonly<{ maxBytes: number; maxEvents: number; maxAgeMs: number; targetLatencyMs?: number }>;
  commitIntervalMs: number;
  safetyMarginMs: number;
  runMs: number;
  leaseMs: number;
  s3ForcePathStyle: boolean;
  stopWhenCaughtUp: boolean;
  /** SLUICE_ON_HISTORY_CHANGE: whether a capture run follows the transactions to another binlog history by itself. */
  onHistoryChange: 'follow' | 'stop';
  snapshotFunction: string | undefined;
  ddlOverrides: ReadonlyMap<string, 'resnapshot' | 'noop'>;
  /** A DDL statement sluice cannot classify: re-copy the tables it touches, or stop (SLUICE_DDL_UNKNOWN). */
  ddlUnknown: 'resnapshot' | 'stop';
  iceberg: Readonly<{
    compactFiles: number;
    retentionMs: number;
    keepSnapshots: number;
    leaseMs: number;
    glueDatabase: string | undefined;
    deletes: 'position' | 'equality';
    catalog: IcebergCatalogConfig;
    workers: number;
    bucketRows: number;
    maintenance: 'sluice' | 'catalog';
  }>;
}>;

/** Parses and validates the environment once; a bad value names the variable and what it accepts. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const result = schema.safeParse(present);
  const lines = (result.success ? [] : result.error.issues).map((issue) => {
    const variable = String(issue.path[0]);
    const message = issue.code === 'invalid_type' && env[variable] === undefined ? 'is required' : issue.message;
    return `  ${variable}: ${message}`;
  });
  if (!present.SLUICE_MYSQL_URL && !present.SLUICE_MYSQL_SECRET_ID)
    lines.push('  SLUICE_MYSQL_URL: is required (or SLUICE_MYSQL_SECRET_ID, a Secrets Manager secret)');
  // Over TLS the server takes the password inside TLS and never RSA-encrypted: a pinned key would protect nothing there.
  if (present.SLUICE_MYSQL_SERVER_PUBLIC_KEY && (present.SLUICE_MYSQL_TLS ?? 'off') !== 'off')
    lines.push(
      `  SLUICE_MYSQL_SERVER_PUBLIC_KEY: is used only with SLUICE_MYSQL_TLS=off (over TLS the server reads the password inside TLS, never RSA-encrypted, so the key protects nothing there): unset it and use SLUICE_MYSQL_TLS=verify, whose certificate check protects the password, or keep it with SLUICE_MYSQL_TLS=off`,
    );
  lines.push(...catalogProblems(present));
  if (present.SLUICE_ICEBERG_MAINTENANCE === 'catalog' && (present.SLUICE_ICEBERG_CATALOG ?? (present.SLUICE_GLUE_DATABASE ? 'glue' : 'file')) === 'file')
    lines.push(
      '  SLUICE_ICEBERG_MAINTENANCE: is catalog, but the tables are in no catalog that maintains them (SLUICE_ICEBERG_CATALOG is file): set SLUICE_ICEBERG_CATALOG=glue or rest, or SLUICE_ICEBERG_MAINTENANCE=sluice',
    );
  if (present.SLUICE_GLUE_OPTIMIZER_ROLE_ARN) {
    if ((present.SLUICE_ICEBERG_CATALOG ?? (present.SLUICE_GLUE_DATABASE ? 'glue' : 'file')) !== 'glue')
      lines.push(
        '  SLUICE_GLUE_OPTIMIZER_ROLE_ARN: Glue table optimizers need the Glue catalog: set SLUICE_GLUE_DATABASE (SLUICE_ICEBERG_CATALOG=glue), or unset this',
      );
    else if (present.SLUICE_ICEBERG_MAINTENANCE !== 'catalog')
      lines.push(
        "  SLUICE_GLUE_OPTIMIZER_ROLE_ARN: Glue's optimizers commit compactions and expiries to the tables, which sluice's own maintenance does not build on: set SLUICE_ICEBERG_MAINTENANCE=catalog, or unset this",
      );
  }
  if (!result.success || lines.length) {
    throw new ConfigError(`invalid configuration:\n${lines.join('\n')}\nSet these environment variables (or flags) and retry; see README "Configuration".`);
  }
  const e = result.data;
  return Object.freeze({
    sourceId: e.SLUICE_SOURCE_ID,
    mysqlUrl: e.SLUICE_MYSQL_URL,
    mysqlSecretId: e.SLUICE_MYSQL_SECRET_ID,
    mysqlTls: e.SLUICE_MYSQL_TLS,
    mysqlCa: e.SLUICE_MYSQL_CA,
    mysqlServerPublicKey: e.SLUICE_MYSQL_SERVER_PUBLIC_KEY,
    stateTable: e.SLUICE_STATE_TABLE,
    bucket: e.SLUICE_BUCKET,
    prefix: e.SLUICE_PREFIX,
    include: Object.freeze(e.SLUICE_INCLUDE),
    exclude: Object.freeze(e.SLUICE_EXCLUDE),
    startup: e.SLUICE_STARTUP,
    keyColumns: e.SLUICE_KEY_COLUMNS,
    snapshot: Object.freeze({
      pageRows: e.SLUICE_SNAPSHOT_PAGE_ROWS,
      chunkRows: e.SLUICE_SNAPSHOT_CHUNK_ROWS,
      leaseMs: e.SLUICE_SNAPSHOT_LEASE_SECONDS * 1000,
    }),
    batch: Object.freeze({
      maxBytes: e.SLUICE_BATCH_MAX_BYTES,
      maxEvents: e.SLUICE_BATCH_MAX_EVENTS,
      maxAgeMs: e.SLUICE_BATCH_MAX_AGE_SECONDS * 1000,
      ...(e.SLUICE_TARGET_LATENCY_MS === undefined ? {} : { targetLatencyMs: e.SLUICE_TARGET_LATENCY_MS }),
    }),
    commitIntervalMs: e.SLUICE_COMMIT_INTERVAL_SECONDS * 1000,
    safetyMarginMs: e.SLUICE_SAFETY_MARGIN_SECONDS * 1000,
    runMs: e.SLUICE_RUN_SECONDS * 1000,
    leaseMs: e.SLUICE_LEASE_SECONDS * 1000,
    s3ForcePathStyle: e.SLUICE_S3_FORCE_PATH_STYLE,
    stopWhenCaughtUp: e.SLUICE_STOP_WHEN_CAUGHT_UP,
    onHistoryChange: e.SLUICE_ON_HISTORY_CHANGE,
    snapshotFunction: e.SLUICE_SNAPSHOT_FUNCTION,
    ddlOverrides: e.SLUICE_DDL_OVERRIDES,
    ddlUnknown: e.SLUICE_DDL_UNKNOWN,
    iceberg: Object.freeze({
      compactFiles: e.SLUICE_ICEBERG_COMPACT_FILES,
      retentionMs: e.SLUICE_ICEBERG_RETENTION_HOURS * 3600 * 1000,
      keepSnapshots: e.SLUICE_ICEBERG_KEEP_SNAPSHOTS,
      leaseMs: e.SLUICE_ICEBERG_LEASE_SECONDS * 1000,
      glueDatabase: e.SLUICE_GLUE_DATABASE,
      deletes: e.SLUICE_ICEBERG_DELETES,
      catalog: icebergCatalog(e),
      workers: e.SLUICE_ICEBERG_WORKERS,
      bucketRows: e.SLUICE_ICEBERG_BUCKET_ROWS,
      maintenance: e.SLUICE_ICEBERG_MAINTENANCE,
    }),
  });
}

export const REST_SETTINGS = [
  'SLUICE_ICEBERG_REST_URI',
  'SLUICE_ICEBERG_REST_WAREHOUSE',
  'SLUICE_ICEBERG_REST_NAMESPACE',
  'SLUICE_ICEBERG_REST_SIGNING_NAME',
  'SLUICE_ICEBERG_REST_SIGNING_REGION',
  'SLUICE_ICEBERG_REST_TOKEN',
  'SLUICE_ICEBERG_REST_CREDENTIAL',
  'SLUICE_ICEBERG_REST_OAUTH_URI',
  'SLUICE_ICEBERG_REST_LOCATION',
] as const;

/** The catalog settings that contradict each other or are missing, one line each. */
function catalogProblems(env: Record<string, string | undefined>): string[] {
  const kind = env.SLUICE_ICEBERG_CATALOG ?? (env.SLUICE_GLUE_DATABASE ? 'glue' : 'file');
  const problems: string[] = [];
  if (kind === 'glue' && !env.SLUICE_GLUE_DATABASE)
    problems.push('  SLUICE_GLUE_DATABASE: is required with SLUICE_ICEBERG_CATALOG=glue (the Glue database the tables go into)');
  if (kind !== 'glue' && env.SLUICE_ICEBERG_CATALOG && env.SLUICE_GLUE_DATABASE)
    problems.push(`  SLUICE_GLUE_DATABASE: is set but SLUICE_ICEBERG_CATALOG=${kind}: unset one of them`);
  if (kind === 'rest') {
    if (!env.SLUICE_ICEBERG_REST_URI)
      problems.push(
        '  SLUICE_ICEBERG_REST_URI: is required with SLUICE_ICEBERG_CATALOG=rest (the catalog URI before /v1, e.g. https://s3tables.us-east-1.amazonaws.com/iceberg)',
      );
    const auths = ['SLUICE_ICEBERG_REST_SIGNING_NAME', 'SLUICE_ICEBERG_REST_TOKEN', 'SLUICE_ICEBERG_REST_CREDENTIAL'].filter((v) => env[v]);
    if (auths.length > 1) problems.push(`  ${auths.join(', ')}: choose one way to authenticate to the REST catalog (SigV4, a token or client credentials)`);
  } else {
    const stray = REST_SETTINGS.filter((v) => env[v]);
    if (stray.length) problems.push(`  ${stray.join(', ')}: only used with SLUICE_ICEBERG_CATALOG=rest (it is ${kind}): set that, or unset these`);
  }
  return problems;
}

function icebergCatalog(e: z.infer<typeof schema>): IcebergCatalogConfig {
  const kind = e.SLUICE_ICEBERG_CATALOG ?? (e.SLUICE_GLUE_DATABASE ? 'glue' : 'file');
  if (kind === 'file') return Object.freeze({ kind });
  // catalogProblems has made sure what each kind needs is there.
  if (kind === 'glue') return Object.freeze({ kind, database: e.SLUICE_GLUE_DATABASE ?? '', optimizerRoleArn: e.SLUICE_GLUE_OPTIMIZER_ROLE_ARN });
  const credential = e.SLUICE_ICEBERG_REST_CREDENTIAL;
  const split = credential?.indexOf(':') ?? -1;
  const auth = e.SLUICE_ICEBERG_REST_SIGNING_NAME
    ? { kind: 'sigv4' as const, signingName: e.SLUICE_ICEBERG_REST_SIGNING_NAME, region: e.SLUICE_ICEBERG_REST_SIGNING_REGION }
    : e.SLUICE_ICEBERG_REST_TOKEN
      ? { kind: 'bearer' as const, token: e.SLUICE_ICEBERG_REST_TOKEN }
      : credential
        ? {
            kind: 'oauth' as const,
            clientId: credential.slice(0, split),
            clientSecret: credential.slice(split + 1),
            scope: e.SLUICE_ICEBERG_REST_SCOPE,
            tokenUri: e.SLUICE_ICEBERG_REST_OAUTH_URI,
          }
        : { kind: 'none' as const };
  return Object.freeze({
    kind,
    uri: e.SLUICE_ICEBERG_REST_URI ?? '',
    warehouse: e.SLUICE_ICEBERG_REST_WAREHOUSE,
    namespace: e.SLUICE_ICEBERG_REST_NAMESPACE?.split('.'),
    location: e.SLUICE_ICEBERG_REST_LOCATION ?? 'sluice',
    auth: Object.freeze(auth),
  });
}

/** The server's own schemas are never captured. */
const SYSTEM_SCHEMAS = new Set(['mysql', 'sys', 'information_schema', 'performance_schema']);

/** Parses a startup setting on its own (e.g. `sluice state reset --to …`). */
export function parseStartupSetting(text: string): Startup {
  const result = z.string().transform(parseStartup).safeParse(text);
  if (!result.success) throw new ConfigError(result.error.issues.map((i) => i.message).join('; '));
  return result.data;
}

/** The column `SLUICE_KEY_COLUMNS` names for a table without a primary key, if any. */
export function keyColumn(config: Pick<Config, 'keyColumns'>, table: TableRef): string | undefined {
  return config.keyColumns.get(tableKey(table));
}

/**
 * False only when no table of the database can pass the include filter: the literal start of every
 * include pattern rules the database out (`shop\..*` rules out `crm`). Anything the patterns leave
 * open (no include, an alternation, a class at the start) counts as possible. A CREATE/ALTER DATABASE
 * elsewhere on the server then costs the source no catalog commit.
 */
export function databaseFilter(config: Pick<Config, 'include'>): (db: string) => boolean {
  const prefixes = config.include.map((r) => literalPrefix(r.source.slice('^(?:'.length, -')$'.length)));
  return (db) => {
    if (SYSTEM_SCHEMAS.has(db)) return false;
    const name = `${db}.`;
    return prefixes.length === 0 || prefixes.some((p) => name.startsWith(p) || p.startsWith(name));
  };
}

/** The text every match of a pattern starts with: its literal characters up to the first operator. */
function literalPrefix(pattern: string): string {
  // An alternation, or a `)` that may close the `^(?:…)$` around the pattern, can make any start possible.
  if (/[|)]/.test(pattern.replace(/\\./g, ''))) return '';
  let prefix = '';
  for (let i = 0; i < pattern.length; ) {
    const escaped = pattern[i] === '\\';
    const char = escaped ? pattern[i + 1] : pattern[i];
    if (char === undefined || (escaped ? /[0-9A-Za-z]/.test(char) : /[.*+?()[\]{}^$]/.test(char))) break;
    i += escaped ? 2 : 1;
    // A character a quantifier may repeat zero times is not part of every match.
    if (/[?*{]/.test(pattern[i] ?? '')) break;
    prefix += char;
  }
  return prefix;
}

/**
 * True when the table passes the include/exclude filters (include empty = every user table). The
 * regexes match the text `db.table`, the raw names joined by a dot (never split again): a dot inside
 * a name makes that text ambiguous: `x`.`dot.ted` and `x.dot`.`ted` are both `x.dot.ted`, so a pattern
 * matches both or neither. That is matching, not naming: everything else keeps the two names apart.
 */
export function tableFilter(config: Pick<Config, 'include' | 'exclude'>): (db: string, table: string) => boolean {
  return (db, table) => {
    if (SYSTEM_SCHEMAS.has(db)) return false;
    const name = `${db}.${table}`;
    if (config.exclude.some((r) => r.test(name))) return false;
    return config.include.length === 0 || config.include.some((r) => r.test(name));
  };
}
