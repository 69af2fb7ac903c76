import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import mysql from 'mysql2/promise';
import { LocalStackError } from '../errors.ts';
import { startDynamoDbLocal } from './dynamodb.ts';
import { startMariaDb } from './mariadb.ts';
import { startMySql } from './mysql.ts';
import { isAlive, portOpen, stopProcess } from './process.ts';
import { startS3 } from './s3.ts';

/**
 * The embedded local stack: a private MariaDB or MySQL, DynamoDB Local and an S3 emulator, started
 * as detached processes and recorded in `<home>/stack.json` so `up` is idempotent and `down` stops
 * only what `up` started. sluice itself reaches them purely through the environment `env()`
 * returns — the same variables that point it at LocalStack or AWS.
 */
export interface StackInfo {
  /** The server sluice reads; a stack.json from before MySQL has none, and ran MariaDB. */
  server: LocalServer;
  mariadb?: ServerInfo;
  mysql?: ServerInfo;
  dynamodb: Service;
  s3: Service;
}

interface Service {
  pid: number;
  port: number;
}

/** A source server of the stack: where it listens, sluice's URL and the admin URL. */
export interface ServerInfo extends Service {
  url: string;
  adminUrl: string;
  /** The CA its certificate is verified with; set, sluice connects with SLUICE_MYSQL_TLS=verify. */
  ca?: string;
}

/** The servers the stack can run as the source. */
export const LOCAL_SERVERS = ['mariadb', 'mysql'] as const;
export type LocalServer = (typeof LOCAL_SERVERS)[number];

const SERVER_NAMES: Record<LocalServer, string> = { mariadb: 'MariaDB', mysql: 'MySQL 8.0' };

/** The server SLUICE_LOCAL_SERVER names: `mariadb` (the default) or `mysql`. */
export function localServer(env: Readonly<Record<string, string | undefined>> = process.env): LocalServer {
  const value = env.SLUICE_LOCAL_SERVER || 'mariadb';
  if (!(LOCAL_SERVERS as readonly string[]).includes(value)) {
    throw new LocalStackError(`SLUICE_LOCAL_SERVER: expected ${LOCAL_SERVERS.join(' or ')}, got ${JSON.stringify(value)}`);
  }
  return value as LocalServer;
}

/** The stack's home: SLUICE_HOME, else `.sluice` (MariaDB) or `.sluice/mysql`, so the two stacks do not share one. */
export function stackHome(env: Readonly<Record<string, string | undefined>> = process.env, server: LocalServer = localServer(env)): string {
  // Set but empty (`SLUICE_HOME=`) means the default, not the current folder.
  return resolve(env.SLUICE_HOME || (server === 'mysql' ? join('.sluice', 'mysql') : '.sluice'));
}

/** The server sluice reads in `stack`. */
export function sourceServer(stack: StackInfo): ServerInfo {
  const server = stack[stack.server];
  if (!server)
    throw new LocalStackError(`the local stack records no ${SERVER_NAMES[stack.server]}; start it with \`sluice local up --server ${stack.server}\``);
  return server;
}

/** What a stack.json records, partly started or from before MySQL. */
type Recorded = Partial<StackInfo>;

const stateFile = (home: string) => join(home, 'stack.json');

/** The stack recorded in `home`, if any; one recorded before MySQL ran MariaDB. */
export async function readStack(home: string): Promise<Recorded> {
  try {
    const recorded = JSON.parse(await readFile(stateFile(home), 'utf8')) as Recorded;
    return { ...recorded, server: recorded.server ?? 'mariadb' };
  } catch {
    return {};
  }
}

/** Whether `stack` has every service it needs running recorded (a stack that only partly started has not). */
export function complete(stack: Recorded): stack is StackInfo {
  return stack.server !== undefined && stack[stack.server] !== undefined && stack.dynamodb !== undefined && stack.s3 !== undefined;
}

async function running(service: Service | undefined): Promise<boolean> {
  return service !== undefined && isAlive(service.pid) && (await portOpen(service.port));
}

/**
 * Starts whatever is not already running; returns connection facts for all three services. `server`
 * (MariaDB unless named) is the source; a home may also hold the other server, which stays recorded
 * while it runs, so `down` stops it too.
 */
export async function up(options: { home?: string; server?: LocalServer; log?: (line: string) => void } = {}): Promise<StackInfo> {
  const server = options.server ?? 'mariadb';
  const home = options.home ?? stackHome(process.env, server);
  const log = options.log ?? (() => {});
  mkdirSync(home, { recursive: true });
  const previous = await readStack(home);
  const start = async <T extends Service>(name: string, current: T | undefined, launch: () => Promise<T>): Promise<T> => {
    if (current && (await running(current))) return current;
    log(`starting ${name}…`);
    const started = await launch();
    log(`${name} ready on 127.0.0.1:${started.port}`);
    return started;
  };
  const serverDir = join(home, server);
  mkdirSync(serverDir, { recursive: true });
  const launch = server === 'mysql' ? () => startMySql(serverDir, log) : () => startMariaDb(serverDir, log);
  // Start the three in parallel: the JVM's start-up dominates otherwise.
  const [source, dynamodb, s3] = await Promise.allSettled([
    start(SERVER_NAMES[server], previous[server], launch),
    start('DynamoDB Local', previous.dynamodb, () => startDynamoDbLocal(home, log)),
    start('S3 emulator', previous.s3, () => startS3(home)),
  ]);
  const value = <T>(r: PromiseSettledResult<T>) => (r.status === 'fulfilled' ? r.value : undefined);
  const other = server === 'mysql' ? 'mariadb' : 'mysql';
  const stack: Recorded = {
    server,
    ...((await running(previous[other])) ? { [other]: previous[other] } : {}),
    [server]: value(source),
    dynamodb: value(dynamodb),
    s3: value(s3),
  };
  // Record whatever did start, even if something failed, so `down` can stop it.
  await writeFile(stateFile(home), `${JSON.stringify(stack, null, 2)}\n`);
  for (const r of [source, dynamodb, s3]) if (r.status === 'rejected') throw r.reason;
  return stack as StackInfo;
}

/**
 * The stack for one run of a tool (`npm run chaos`, a benchmark): `up`, and at dispose the services
 * this run started are stopped again — those it found running stay — unless SLUICE_KEEP_STACK=1.
 */
export async function runStack(options: {
  home: string;
  server?: LocalServer;
  log?: (line: string) => void;
  env?: Readonly<Record<string, string | undefined>>;
}): Promise<StackInfo & AsyncDisposable> {
  const before = await readStack(options.home);
  const stack = await up(options);
  const keep = (options.env ?? process.env).SLUICE_KEEP_STACK === '1';
  const services = ['mariadb', 'mysql', 'dynamodb', 's3'] as const;
  const mine = services.filter((name) => stack[name] !== undefined && before[name]?.pid !== stack[name]?.pid);
  return {
    ...stack,
    async [Symbol.asyncDispose]() {
      if (keep || mine.length === 0) return;
      await Promise.all(mine.map((name) => stopProcess(stack[name]?.pid)));
      const left = Object.fromEntries(services.filter((name) => stack[name] !== undefined && !mine.includes(name)).map((name) => [name, stack[name]]));
      if (Object.keys(left).length === 0) rmSync(stateFile(options.home), { force: true });
      else await writeFile(stateFile(options.home), `${JSON.stringify({ server: stack.server, ...left }, null, 2)}\n`);
    },
  };
}

/** Stops the processes recorded by `up`; with `wipe`, deletes the server's data too. */
export async function down(options: { home?: string; wipe?: boolean } = {}): Promise<void> {
  const home = options.home ?? stackHome();
  const stack = await readStack(home);
  await Promise.all([stack.mariadb, stack.mysql, stack.dynamodb, stack.s3].map((service) => stopProcess(service?.pid)));
  if (options.wipe) rmSync(home, { recursive: true, force: true });
  else if (existsSync(stateFile(home))) rmSync(stateFile(home));
}

/** The environment that points sluice (and the AWS SDK) at the local stack. */
export function env(stack: StackInfo): Record<string, string> {
  const server = sourceServer(stack);
  return {
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${stack.s3.port}`,
    AWS_ENDPOINT_URL_DYNAMODB: `http://127.0.0.1:${stack.dynamodb.port}`,
    SLUICE_S3_FORCE_PATH_STYLE: 'true',
    SLUICE_SOURCE_ID: 'local',
    SLUICE_MYSQL_URL: server.url,
    // MySQL's account uses caching_sha2_password, whose password sluice sends only over verified TLS.
    ...(server.ca ? { SLUICE_MYSQL_TLS: 'verify', SLUICE_MYSQL_CA: server.ca } : {}),
    SLUICE_LOCAL_ADMIN_URL: server.adminUrl,
    SLUICE_STATE_TABLE: 'sluice-state',
    SLUICE_BUCKET: 'sluice-local',
  };
}

/** An admin connection to the stack's server, for demos and tests that write source data. */
export function adminConnection(stack: StackInfo, database?: string) {
  return mysql.createConnection({ uri: sourceServer(stack).adminUrl, database, multipleStatements: true, timezone: 'Z' });
}
