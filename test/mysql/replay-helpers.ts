import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ZongJi from '@vlasky/zongji';
import mysql from 'mysql2/promise';
import { inject, vi } from 'vitest';
import { createClients, initResources } from '../../lib/aws.ts';
import { loadConfig } from '../../lib/config/config.ts';
import type { Manifest } from '../../lib/format/manifest.ts';
import { eventLines, manifests } from '../../lib/materialize/change-log.ts';
import { registerDecoders } from '../../lib/source/mysql/binlog/decoders.ts';
import { mysqlTarget } from '../../lib/source/mysql/target.ts';
import { sluice } from '../support/cli.ts';
import { mysqlRows } from '../support/fold.ts';
import { type ReplayOptions, type ReplayServer, startReplayServer } from '../support/mysql-replay/server.ts';
import { type Fixture, fixturePath } from './fixtures.ts';

/** The test stack's MariaDB as root: where --schema-from reads the fixtures' tables. */
export function schemaUri(): string {
  return inject('stackEnv').SLUICE_LOCAL_ADMIN_URL as string;
}

/**
 * Creates the tables a fixture's rows were written to in the stack's MariaDB, from scratch. The
 * `mysql` database is MariaDB's own: only the fixture's tables are dropped there.
 */
export async function prepareSchema(fixture: Fixture): Promise<void> {
  const admin = await mysql.createConnection({ uri: schemaUri(), multipleStatements: false });
  try {
    for (const [db, statements] of Object.entries(fixture.schema)) {
      if (db === 'mysql') {
        for (const s of statements) {
          const table = /^CREATE TABLE (?:IF NOT EXISTS )?`?(\w+)`?/i.exec(s)?.[1];
          if (table) await admin.query(`DROP TABLE IF EXISTS mysql.\`${table}\``);
        }
      } else {
        await admin.query(`DROP DATABASE IF EXISTS \`${db}\``);
        await admin.query(`CREATE DATABASE \`${db}\` CHARACTER SET utf8mb4`);
      }
      await admin.query(`USE \`${db}\``);
      for (const s of statements) await admin.query(s);
    }
  } finally {
    await admin.end();
  }
}

/** Starts a replay server for a fixture, forwarding schema reads to the stack's MariaDB. */
export function replay(
  fixture: Fixture,
  options: Pick<ReplayOptions, 'version' | 'heartbeatMs' | 'grow' | 'until' | 'onStatement'> = {},
): Promise<ReplayServer> {
  return startReplayServer({ files: fixture.files.map(fixturePath), schemaFrom: schemaUri(), variables: fixture.variables, ...options });
}

/** One event as zongji delivered it, reduced to what the tests compare. */
export interface Delivered {
  name: string;
  /** The binlog file the event belongs to (as the last ROTATE named it). */
  file: string;
  nextPosition: number;
  timestamp: number;
  event: Record<string, unknown>;
}

/** Every event name zongji knows, so nothing it decodes is filtered out. */
const ALL_EVENTS = [
  'unknown',
  'query',
  'intvar',
  'rotate',
  'format',
  'xid',
  'heartbeat',
  'tablemap',
  'writerows',
  'updaterows',
  'deleterows',
  'gtid',
  'anonymousgtid',
  'previousgtids',
  'rowsquery',
  'xaprepare',
  'partialupdaterows',
  'transactionpayload',
];

/**
 * Streams from the replay server with zongji (a non-blocking dump unless `nonBlock: false`) until
 * the last file's last event arrived (or `until` holds) or `timeoutMs` passed, and returns what it
 * delivered and the errors it emitted.
 */
export async function streamWithZongji(
  server: ReplayServer,
  start: { filename?: string; position?: number; gtidSet?: string; nonBlock?: boolean } = {},
  timeoutMs = 8000,
  until?: (events: Delivered[]) => boolean,
): Promise<{ events: Delivered[]; errors: Error[] }> {
  const zongji = new ZongJi({ host: '127.0.0.1', port: server.port, user: 'replay', password: 'any' });
  registerDecoders(zongji);
  const events: Delivered[] = [];
  const errors: Error[] = [];
  const last = server.facts.files[server.facts.files.length - 1];
  const end = last ? { file: last.name, pos: last.file.size } : undefined;
  let file = '';
  // mysql2 reports a broken packet sequence only on the console: make it an error the tests see.
  const console_ = vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => {
    errors.push(new Error(args.map(String).join(' ')));
  });
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    let finished = false;
    const finish = () => {
      clearTimeout(timer);
      // Errors about the last events arrive right after them.
      if (!finished) setTimeout(resolve, 200);
      finished = true;
    };
    zongji.on('binlog', (raw: unknown) => {
      const ev = raw as Record<string, unknown> & { getEventName(): string; nextPosition: number; timestamp: number };
      const name = ev.getEventName();
      // A file's own ROTATE ends that file (its end offset is the old file's); the artificial one opens the next.
      const own = name === 'rotate' && ev.nextPosition > 0 ? file : undefined;
      if (name === 'rotate') file = ev.binlogName as string;
      events.push({ name, file: own ?? file, nextPosition: ev.nextPosition, timestamp: ev.timestamp, event: ev });
      if (until ? until(events) : end && (own ?? file) === end.file && ev.nextPosition === end.pos) finish();
    });
    zongji.on('error', (raw: unknown) => {
      const error = raw as Error;
      errors.push(error);
      if ((error as { errno?: number }).errno === 1236) finish();
    });
    zongji.start({ includeEvents: ALL_EVENTS, nonBlock: true, ...start } as Record<string, unknown>);
  });
  await new Promise<void>((resolve) => {
    zongji.once('stopped', () => resolve());
    zongji.stop();
    setTimeout(resolve, 2000);
  });
  console_.mockRestore();
  return { events, errors };
}

/**
 * A sluice source over a replay server: its own source id and S3 prefix on the test stack (or
 * `id`'s: the same source read again, e.g. from another server presenting the same history).
 */
export async function captureSource(fixture: Fixture, server: ReplayServer, startup = 'earliest', id = `replay_${randomBytes(4).toString('hex')}`) {
  const dbs = Object.keys(fixture.schema);
  const env: Record<string, string | undefined> = {
    ...process.env,
    ...inject('stackEnv'),
    SLUICE_MYSQL_URL: server.uri,
    SLUICE_SOURCE_ID: id,
    SLUICE_PREFIX: `${id}/`,
    SLUICE_INCLUDE: dbs.length ? dbs.map((d) => `${d}\\..*`).join(',') : 'none\\..*',
    SLUICE_STARTUP: startup,
    SLUICE_HOME: '/nonexistent',
    // A raw error's stack then points into lib/, for the report of what fails.
    NODE_OPTIONS: '--enable-source-maps',
  };
  const config = loadConfig(env);
  const clients = createClients(config);
  await initResources(config, clients);
  return {
    env,
    config,
    /** `sluice capture --once`, as a user runs it (`args`: more flags, e.g. `--seconds`). */
    capture: (...args: string[]) => sluice(['capture', '--once', ...args], env),
    /** The manifests of the source's commits, in commit order. */
    async manifests(): Promise<Manifest[]> {
      const out: Manifest[] = [];
      for await (const manifest of manifests(clients.s3, config.bucket, config.prefix, config.sourceId)) out.push(manifest);
      return out;
    },
    /** The change log's events, as JSON. */
    async events(): Promise<Record<string, unknown>[]> {
      const out: Record<string, unknown>[] = [];
      for await (const { line } of eventLines(clients.s3, config.bucket, config.prefix, config.sourceId)) out.push(JSON.parse(line) as Record<string, unknown>);
      return out;
    },
    /** `sluice materialize` of one table, its rows as sorted JSON text. */
    async materialized(db: string, table: string): Promise<string[]> {
      const out = join(mkdtempSync(join(tmpdir(), 'sluice-replay-')), `${table}.jsonl`);
      const run = await sluice(['materialize', '--table', `${db}.${table}`, '--out', out], env);
      if (run.code !== 0) throw new Error(`sluice materialize ${db}.${table} failed: ${run.stderr}`);
      return readFileSync(out, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.stringify(JSON.parse(l)))
        .sort();
    },
  };
}

/** The error code a failed sluice run printed (lib/cli/main.ts prints `sluice: CODE: message`), or `uncoded` for a raw error. */
export function errorCode(run: { stdout: string; stderr: string }): string {
  return /^sluice: ([A-Z][A-Z0-9_]+): /m.exec(run.stderr)?.[1] ?? 'uncoded';
}

/**
 * The rows the producing SQL leaves, computed by running it on the stack's MariaDB in a scratch
 * database at the recorded server's clock (`SET timestamp`, for CURRENT_TIMESTAMP defaults), and
 * read back as sluice encodes rows.
 */
export async function rowsTheSqlLeaves(sqlFiles: string[], timestamp: number, tables: string[]): Promise<Map<string, string[]>> {
  const db = `expected_${randomBytes(3).toString('hex')}`;
  const admin = await mysql.createConnection({ uri: schemaUri(), multipleStatements: true });
  try {
    await admin.query(`CREATE DATABASE \`${db}\` CHARACTER SET utf8mb4`);
    await admin.query(`USE \`${db}\``);
    await admin.query(`SET time_zone = '+00:00', timestamp = ${timestamp}`);
    for (const f of sqlFiles) await admin.query(readFileSync(fixturePath(f), 'utf8'));
    const target = await mysqlTarget(loadConfig({ ...inject('stackEnv') }));
    const out = new Map<string, string[]>();
    for (const t of tables) out.set(t, await mysqlRows(target, db, t));
    return out;
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS \`${db}\``);
    await admin.end();
  }
}
