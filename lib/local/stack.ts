import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import mysql from 'mysql2/promise';
import { startDynamoDbLocal } from './dynamodb.ts';
import { startMariaDb } from './mariadb.ts';
import { isAlive, portOpen, stopProcess } from './process.ts';
import { startS3 } from './s3.ts';

/**
 * The embedded local stack: a private MariaDB, DynamoDB Local and an S3 emulator, started as
 * detached processes and recorded in `<home>/stack.json` so `up` is idempotent and `down` stops
 * only what `up` started. sluice itself reaches them purely through the environment `env()`
 * returns — the same variables that point it at LocalStack or AWS.
 */
export interface StackInfo {
  mariadb: { pid: number; port: number; url: string; adminUrl: string };
  dynamodb: { pid: number; port: number };
  s3: { pid: number; port: number };
}

export function stackHome(env: Readonly<Record<string, string | undefined>> = process.env): string {
  // Set but empty (`SLUICE_HOME=`) means the default, not the current folder.
  return resolve(env.SLUICE_HOME || '.sluice');
}

const stateFile = (home: string) => join(home, 'stack.json');

async function readStack(home: string): Promise<Partial<StackInfo>> {
  try {
    return JSON.parse(await readFile(stateFile(home), 'utf8')) as Partial<StackInfo>;
  } catch {
    return {};
  }
}

async function running(service: { pid: number; port: number } | undefined): Promise<boolean> {
  return service !== undefined && isAlive(service.pid) && (await portOpen(service.port));
}

/** Starts whatever is not already running; returns connection facts for all three services. */
export async function up(options: { home?: string; log?: (line: string) => void } = {}): Promise<StackInfo> {
  const home = options.home ?? stackHome();
  const log = options.log ?? (() => {});
  mkdirSync(home, { recursive: true });
  const previous = await readStack(home);
  const start = async <T extends { pid: number; port: number }>(name: string, current: T | undefined, launch: () => Promise<T>): Promise<T> => {
    if (current && (await running(current))) return current;
    log(`starting ${name}…`);
    const started = await launch();
    log(`${name} ready on 127.0.0.1:${started.port}`);
    return started;
  };
  const mariadbDir = join(home, 'mariadb');
  mkdirSync(mariadbDir, { recursive: true });
  // Start the three in parallel: the JVM's start-up dominates otherwise.
  const [mariadb, dynamodb, s3] = await Promise.allSettled([
    start('MariaDB', previous.mariadb, () => startMariaDb(mariadbDir, log)),
    start('DynamoDB Local', previous.dynamodb, () => startDynamoDbLocal(home, log)),
    start('S3 emulator', previous.s3, () => startS3(home)),
  ]);
  const value = <T>(r: PromiseSettledResult<T>) => (r.status === 'fulfilled' ? r.value : undefined);
  // Record whatever did start, even if something failed, so `down` can stop it.
  await writeFile(stateFile(home), `${JSON.stringify({ mariadb: value(mariadb), dynamodb: value(dynamodb), s3: value(s3) }, null, 2)}\n`);
  for (const r of [mariadb, dynamodb, s3]) if (r.status === 'rejected') throw r.reason;
  return { mariadb: value(mariadb), dynamodb: value(dynamodb), s3: value(s3) } as StackInfo;
}

/**
 * The stack for one run of a tool (`npm run chaos`, a benchmark): `up`, and at dispose the services
 * this run started are stopped again — those it found running stay — unless SLUICE_KEEP_STACK=1.
 */
export async function runStack(options: {
  home: string;
  log?: (line: string) => void;
  env?: Readonly<Record<string, string | undefined>>;
}): Promise<StackInfo & AsyncDisposable> {
  const before = await readStack(options.home);
  const stack = await up(options);
  const keep = (options.env ?? process.env).SLUICE_KEEP_STACK === '1';
  const mine = (['mariadb', 'dynamodb', 's3'] as const).filter((name) => before[name]?.pid !== stack[name].pid);
  return {
    ...stack,
    async [Symbol.asyncDispose]() {
      if (keep || mine.length === 0) return;
      if (mine.length === 3) return down({ home: options.home });
      await Promise.all(mine.map((name) => stopProcess(stack[name].pid)));
      const left = Object.fromEntries((['mariadb', 'dynamodb', 's3'] as const).filter((name) => !mine.includes(name)).map((name) => [name, stack[name]]));
      await writeFile(stateFile(options.home), `${JSON.stringify(left, null, 2)}\n`);
    },
  };
}

/** Stops the processes recorded by `up`; with `wipe`, deletes the MariaDB data too. */
export async function down(options: { home?: string; wipe?: boolean } = {}): Promise<void> {
  const home = options.home ?? stackHome();
  const stack = await readStack(home);
  await Promise.all([stack.mariadb, stack.dynamodb, stack.s3].map((service) => stopProcess(service?.pid)));
  if (options.wipe) rmSync(home, { recursive: true, force: true });
  else if (existsSync(stateFile(home))) rmSync(stateFile(home));
}

/** The environment that points sluice (and the AWS SDK) at the local stack. */
export function env(stack: StackInfo): Record<string, string> {
  return {
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${stack.s3.port}`,
    AWS_ENDPOINT_URL_DYNAMODB: `http://127.0.0.1:${stack.dynamodb.port}`,
    SLUICE_S3_FORCE_PATH_STYLE: 'true',
    SLUICE_SOURCE_ID: 'local',
    SLUICE_MYSQL_URL: stack.mariadb.url,
    SLUICE_LOCAL_ADMIN_URL: stack.mariadb.adminUrl,
    SLUICE_STATE_TABLE: 'sluice-state',
    SLUICE_BUCKET: 'sluice-local',
  };
}

/** An admin connection to the local MariaDB, for demos and tests that write source data. */
export function adminConnection(stack: StackInfo, database?: string) {
  return mysql.createConnection({ uri: stack.mariadb.adminUrl, database, multipleStatements: true, timezone: 'Z' });
}
