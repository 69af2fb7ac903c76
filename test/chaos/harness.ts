import { spawn } from 'node:child_process';
import { appendFileSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DynamoDBClient, paginateScan } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import mysql from 'mysql2/promise';
import { initResources } from '../../lib/aws.ts';
import { type CaptureDeps, runCapture } from '../../lib/capture/run.ts';
import { type FaultPoint, type Faults, InjectedFault } from '../../lib/commit/faults.ts';
import { type Config, loadConfig } from '../../lib/config/config.ts';
import { compareEpochPositions, type EpochPosition, formatPosition } from '../../lib/core/position.ts';
import { runIcebergMerge } from '../../lib/iceberg/merge/merge.ts';
import { loadVersion } from '../../lib/iceberg/table/table.ts';
import { stopProcess } from '../../lib/local/process.ts';
import type { LocalServer } from '../../lib/local/stack.ts';
import { type Log, silentLog } from '../../lib/log.ts';
import { eventLines } from '../../lib/materialize/change-log.ts';
import { resetState } from '../../lib/ops/state-admin.ts';
import { stagingRoot } from '../../lib/sink/s3/keys.ts';
import { s3ObjectStore } from '../../lib/sink/s3/object-store.ts';
import { listKeys } from '../../lib/sink/s3/objects.ts';
import { snapshotsToRun } from '../../lib/snapshot/plan.ts';
import { runSnapshotWorker } from '../../lib/snapshot/worker.ts';
import { DynamoDbStateStore } from '../../lib/state/dynamodb.ts';
import { DynamoDbSnapshotStore } from '../../lib/state/dynamodb-snapshots.ts';
import { DynamoDbMergeStore } from '../../lib/state/iceberg-store.ts';
import type { SourceState } from '../../lib/state/store.ts';
import { verify } from '../../lib/verify/verify.ts';
import { icebergRowsAt, mysqlTextOf } from '../support/iceberg-merge.ts';
import { type PrivateServer, startPrivateServer } from '../support/private-server.ts';
import { caughtUp, promote, type ReplicationNode, reseedReplica, stopReplication } from '../support/replication.ts';
import { withSequences } from '../support/sequences.ts';
import { switchingProxy } from '../support/stalling-proxy.ts';
import { FaultyHttpHandler } from './faulty-http.ts';

/**
 * The chaos suite: rounds of a random workload under random faults, each round followed by a
 * clean recovery and the checks that define exactly-once (docs/VERIFY.md).
 */
export interface ChaosReport {
  rounds: number;
  mutations: number;
  faults: Record<string, number>;
  eventsChecked: number;
  differences: number;
  /**
   * What the runs after a failover did: followed the transactions by GTID, or stopped
   * (POSITION_FOREIGN) and were reset; `rotatedFirst`: MySQL failovers that needed a binlog rotation
   * first, for the stored position to carry a GTID set; `rebuiltFirst`: failovers whose replica
   * had come to differ from its primary and was built again first.
   */
  failovers: { followed: number; stopped: number; rotatedFirst: number; rebuiltFirst: number };
  seconds: number;
}

/** mulberry32: a small seeded generator, so a failing round can be replayed with its seed. */
function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The schema changes a round draws from (`drop column` joins them once a column was added). */
const DDL_KINDS = ['add column', 'truncate', 'rename', 'key', 'scratch', 'widen'];
const POINTS: FaultPoint[] = ['after-staging', 'after-commit', 'mid-rename', 'before-clear'];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** What a replica holds of its primary: the captured database, and the sequence tables MySQL keeps for the workload. */
const DATABASES = ['shop', 'sluice_test_fixtures'];

/** One of the two servers: the primary the workload writes to, or its replica, which a failover promotes. */
interface Member {
  server: PrivateServer;
  admin: mysql.Connection;
  node: ReplicationNode;
}

/**
 * Holds the workload between two of its changes, as a switchover holds writes while it moves the
 * primary: `close` waits for the change under way, `through` does not start one while closed.
 */
class WriteGate {
  private held: Promise<void> | undefined;
  private release = () => {};
  private current: Promise<unknown> = Promise.resolve();

  async through<T>(step: () => Promise<T>): Promise<T> {
    while (this.held) await this.held;
    const running = step();
    this.current = running.catch(() => {});
    return running;
  }

  async close(): Promise<void> {
    this.held = new Promise((resolve) => {
      this.release = resolve;
    });
    await this.current;
  }

  open(): void {
    this.held = undefined;
    this.release();
  }
}

export async function runChaos(options: {
  rounds: number;
  mutationsPerRound: number;
  seed: number;
  /** The AWS side (DynamoDB Local + S3 emulator) and where to keep the private server. */
  env: Record<string, string>;
  /** The kind of private server to run the workload on (the stack's); MariaDB unless named. */
  server?: LocalServer;
  log?: (line: string) => void;
}): Promise<ChaosReport> {
  const say = options.log ?? (() => {});
  // CHAOS_TRACE=<file>: every line sluice logs, and each fault as it starts, with the time (docs/VERIFY.md).
  const log = process.env.CHAOS_TRACE ? traceLog(process.env.CHAOS_TRACE) : silentLog;
  const random = rng(options.seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
  const started = Date.now();
  const faults: Record<string, number> = {};
  const count = (kind: string, n = 1) => {
    faults[kind] = (faults[kind] ?? 0) + n;
  };

  // Servers of its own: the suite kills replication connections and must not hit anyone else's.
  // Two, replicating by GTID (each logs what it applies): the primary, and a replica a failover
  // promotes. sluice reaches the primary through one endpoint that stays the same while the server
  // behind it changes (a TCP proxy), as a DNS name moved by a failover or a Blue/Green switchover.
  const dir = mkdtempSync(join(tmpdir(), 'sluice-chaos-'));
  const kind = options.server ?? 'mariadb';
  const serverArgs = (id: number) => [`--server-id=${id}`, ...(kind === 'mariadb' ? ['--log-slave-updates=ON'] : [])];
  const servers = await Promise.all([1, 2].map((id) => startPrivateServer(join(dir, `db${id}`), kind, serverArgs(id))));
  const member = async (server: PrivateServer): Promise<Member> => {
    const admin = await mysql.createConnection({ uri: server.adminUrl, multipleStatements: true });
    return { server, admin, node: { kind, admin, port: server.port, adminUrl: server.adminUrl } };
  };
  let primary = await member(servers[0] as PrivateServer);
  let standby = await member(servers[1] as PrivateServer);
  await reseedReplica(standby.node, primary.node, DATABASES);
  const proxy = await switchingProxy(new URL(primary.server.url));
  const endpoint: Record<string, string> = { ...primary.server.env, SLUICE_MYSQL_URL: proxy.url };
  if (kind === 'mysql') {
    // Each MySQL signs its certificate with a CA of its own (of the same name): the second takes the
    // first's CA and certificate, as servers behind one endpoint share the name it is verified by.
    const datadir = (server: PrivateServer) => dirname(server.env.SLUICE_MYSQL_CA as string);
    for (const file of ['ca.pem', 'server-cert.pem', 'server-key.pem'])
      copyFileSync(join(datadir(servers[0] as PrivateServer), file), join(datadir(servers[1] as PrivateServer), file));
    await standby.admin.query('ALTER INSTANCE RELOAD TLS');
  }
  /** A statement with MariaDB's seq_1_to_N tables, which exist on MySQL only as fixtures (on the primary). */
  const sequenced = (sql: string) => withSequences(sql, kind, primary.server.adminUrl);
  const sourceId = `chaos-${options.seed}-${Date.now()}`;
  const env: Record<string, string> = {
    ...options.env,
    SLUICE_SOURCE_ID: sourceId,
    SLUICE_PREFIX: sourceId,
    ...endpoint,
    SLUICE_INCLUDE: 'shop\\..*',
    SLUICE_STARTUP: 'initial',
    SLUICE_BATCH_MAX_EVENTS: '1000',
    SLUICE_SAFETY_MARGIN_SECONDS: '1',
    SLUICE_RUN_SECONDS: '4',
    SLUICE_SNAPSHOT_PAGE_ROWS: '300',
    SLUICE_SNAPSHOT_CHUNK_ROWS: '1000',
    SLUICE_SNAPSHOT_LEASE_SECONDS: '2',
    SLUICE_ICEBERG_LEASE_SECONDS: '3',
    SLUICE_ICEBERG_COMPACT_FILES: '6',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
  const config: Config = loadConfig(env);
  // Clients whose HTTP layer fails on demand.
  const s3Http = new FaultyHttpHandler(random, 0.15);
  const dynamoHttp = new FaultyHttpHandler(random, 0.15);
  const s3 = new S3Client({ forcePathStyle: true, maxAttempts: 5, requestHandler: s3Http, endpoint: env.AWS_ENDPOINT_URL_S3 });
  const dynamo = new DynamoDBClient({ maxAttempts: 5, requestHandler: dynamoHttp, endpoint: env.AWS_ENDPOINT_URL_DYNAMODB });
  const store = new DynamoDbStateStore(dynamo, config.stateTable);
  const snapshots = new DynamoDbSnapshotStore(dynamo, config.stateTable);
  await initResources(config, { s3, dynamo, store, snapshots });
  const merges = new DynamoDbMergeStore(dynamo, config.stateTable);
  const merge = (faults?: Faults, waitForLeaseMs = 0) =>
    runIcebergMerge({ config, s3, store, snapshots, merges, log, faults }, { owner: `chaos-${Date.now()}-${random()}`, waitForLeaseMs });
  const gate = new WriteGate();
  // What tells two histories of one server apart when nothing was read in between is the binlog
  // file's creation time, to the second (docs/RUNBOOK.md): one RESET MASTER a second at most, the
  // replica's rebuilds included (it may be promoted).
  let lastReset = Date.now();
  const reseed = async () => {
    await reseedReplica(standby.node, primary.node, DATABASES);
    lastReset = Date.now();
  };
  const failovers = { followed: 0, stopped: 0, rotatedFirst: 0, rebuiltFirst: 0 };
  const deps = (faults?: Faults, budgetMs = 4_000, stopWhenCaughtUp = true): [CaptureDeps, { budgetMs: number; stopWhenCaughtUp: boolean }] => [
    { config, s3, store, snapshots, log, faults },
    { budgetMs, stopWhenCaughtUp },
  ];

  let mutations = 0;
  let nextId = 1;
  const ids: number[] = [];
  const blobIds: number[] = [];
  // The schema moves under the workload (ddl() below); what the DML needs to know of it.
  const extraColumns: string[] = [];
  let itemsTable = 'items';
  let auditKeyed = false;
  let scratch = false;

  /** A new order with its lines, in one transaction; returns the rows it wrote. */
  async function newOrder(conn: mysql.Connection): Promise<number> {
    const id = nextId++;
    ids.push(id);
    const items = 1 + Math.floor(random() * 3);
    const values = Array.from(
      { length: items },
      (_, line) => `(${id}, ${line}, 'sku-${Math.floor(random() * 1000)}', ${1 + line}, ${(random() * 100).toFixed(3)})`,
    );
    const extra = extraColumns.map((column) => (random() < 0.3 ? 'DEFAULT' : column.startsWith('s') ? `'${column}-${id}'` : String(id % 97)));
    await conn.query(
      `BEGIN; INSERT INTO orders (id, customer, total, status, note, ts${extraColumns.map((c) => `, ${c}`).join('')}) VALUES (${id}, ${Math.floor(random() * 100)}, ${(random() * 999).toFixed(2)}, 'new', 'n${id}', NOW(6)${extra.map((v) => `, ${v}`).join('')});
         INSERT INTO ${itemsTable} VALUES ${values.join(',')}; COMMIT;`,
    );
    return 1 + items;
  }

  /** One random business change; returns the rows it changed. */
  async function mutate(conn: mysql.Connection): Promise<number> {
    const r = random();
    if (r < 0.3 || ids.length < 20) return newOrder(conn);
    if (r < 0.5) {
      const [result] = (await conn.query(
        `UPDATE orders SET status = '${pick(['paid', 'shipped', 'cancelled'])}', total = total + 1 WHERE id = ${pick(ids)}`,
      )) as unknown as [{ affectedRows: number }];
      return result.affectedRows;
    }
    if (r < 0.6) {
      const [result] = (await conn.query(`UPDATE ${itemsTable} SET qty = qty + 1, price = price * 1.1 WHERE order_id = ${pick(ids)}`)) as unknown as [
        { affectedRows: number },
      ];
      return result.affectedRows;
    }
    if (r < 0.7) {
      const id = ids.splice(Math.floor(random() * ids.length), 1)[0];
      // Multiple statements: one result header each (BEGIN, DELETE, DELETE, COMMIT).
      const [results] = (await conn.query(
        `BEGIN; DELETE FROM ${itemsTable} WHERE order_id = ${id}; DELETE FROM orders WHERE id = ${id}; COMMIT;`,
      )) as unknown as [{ affectedRows: number }[]];
      return (results[1]?.affectedRows ?? 0) + (results[2]?.affectedRows ?? 0);
    }
    if (r < 0.8) {
      // A table that is keyless for part of the run (ddl() gives it a key and takes it away):
      // duplicate rows, updates and deletes of rows that only their values identify.
      const at = 1 + Math.floor(random() * 40);
      const statement = pick([
        `INSERT INTO audit (at_id, what, n) VALUES (${at}, '${pick(['login', 'logout', 'view'])}', ${Math.floor(random() * 3)})`,
        `UPDATE audit SET n = n + 1 WHERE at_id = ${at}`,
        `DELETE FROM audit WHERE at_id = ${at} LIMIT 1`,
      ]);
      const [result] = (await conn.query(statement)) as unknown as [{ affectedRows: number }];
      return Math.max(1, result.affectedRows);
    }
    if (r < 0.9 || blobIds.length < 5) {
      const id = 1_000_000 + nextId++;
      blobIds.push(id);
      await conn.query(
        `INSERT INTO blobs VALUES (${id}, RANDOM_BYTES(${1 + Math.floor(random() * 32)}), b'${Math.floor(random() * 256).toString(2)}', '2024-0${1 + Math.floor(random() * 9)}-1${Math.floor(random() * 9)}')`,
      );
      return 1;
    }
    // A primary-key change.
    const index = Math.floor(random() * blobIds.length);
    const id = blobIds[index] as number;
    const moved = 1_000_000 + nextId++;
    blobIds[index] = moved;
    await conn.query(`UPDATE blobs SET id = ${moved} WHERE id = ${id}`);
    return 1;
  }

  // CHAOS_DDL=rename,truncate: only those kinds (see docs/VERIFY.md); a misspelt kind stops the run.
  const chosenDdl = process.env.CHAOS_DDL?.split(',').map((k) => k.trim());
  const unknown = chosenDdl?.filter((k) => !DDL_KINDS.includes(k) && k !== 'drop column');
  if (unknown?.length) throw new Error(`CHAOS_DDL: unknown kind(s) ${unknown.join(', ')}; known: ${[...DDL_KINDS, 'drop column'].join(', ')}`);

  /**
   * One random change of the table set or a table's shape, run between the DML of the workload
   * (and so under whatever fault the round injects): columns added with and without defaults and
   * dropped, a type widened, TRUNCATE, RENAME, a key given and taken away, a table dropped and
   * created again. Returns its name for the round's log line.
   */
  async function ddl(conn: mysql.Connection): Promise<string> {
    const kinds = (chosenDdl ?? DDL_KINDS).filter((k) => k !== 'drop column' || extraColumns.length);
    if (extraColumns.length && !chosenDdl) kinds.push('drop column', 'drop column');
    if (!kinds.length) kinds.push('add column'); // only `drop column` chosen, and nothing to drop yet
    const kind = pick(kinds);
    switch (kind) {
      case 'add column': {
        const column = `${pick(['s', 'n'])}${nextId++}`;
        const type = column.startsWith('s') ? `VARCHAR(12) ${pick(['NULL', "NOT NULL DEFAULT 'dflt'"])}` : `INT ${pick(['NULL', 'NOT NULL DEFAULT 7'])}`;
        await conn.query(`ALTER TABLE orders ADD COLUMN ${column} ${type}`);
        extraColumns.push(column);
        break;
      }
      case 'drop column': {
        const [column] = extraColumns.splice(Math.floor(random() * extraColumns.length), 1);
        await conn.query(`ALTER TABLE orders DROP COLUMN ${column}`);
        break;
      }
      case 'widen':
        await conn.query(`ALTER TABLE blobs MODIFY data VARBINARY(${pick([64, 96, 128])})`);
        break;
      case 'truncate':
        await conn.query('TRUNCATE TABLE blobs');
        blobIds.length = 0;
        break;
      case 'rename': {
        const next = itemsTable === 'items' ? `items_${nextId++}` : 'items';
        await conn.query(`RENAME TABLE ${itemsTable} TO ${next}`);
        itemsTable = next;
        break;
      }
      case 'key':
        // Keyless → keyed copies the table (new values); keyed → keyless drops the key column.
        await conn.query(auditKeyed ? 'ALTER TABLE audit DROP COLUMN k' : 'ALTER TABLE audit ADD COLUMN k INT AUTO_INCREMENT PRIMARY KEY FIRST');
        auditKeyed = !auditKeyed;
        break;
      case 'scratch':
        await conn.query(
          scratch
            ? 'DROP TABLE scratch'
            : await sequenced(
                `CREATE TABLE scratch (id INT PRIMARY KEY, v VARCHAR(10)); INSERT INTO scratch SELECT seq, CONCAT('v', seq) FROM seq_1_to_${1 + Math.floor(random() * 50)}`,
              ),
        );
        scratch = !scratch;
        break;
    }
    return kind;
  }

  /** A capture or snapshot run that is expected to fail sometimes: failures are the point. */
  const tolerate = async (run: () => Promise<unknown>) => {
    try {
      await run();
    } catch (error) {
      if (!(error instanceof InjectedFault)) count(`failed run (${(error as { code?: string }).code ?? (error as Error).name})`);
    }
  };

  function killed(args: string[]): Promise<void> {
    const child = spawn(process.execPath, ['bin/sluice.js', ...args], { env: { ...process.env, ...env }, stdio: 'ignore' });
    const delay = 50 + random() * 600;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        count(`SIGKILL ${args[0]}`);
      }, delay);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  const scenarios: Record<string, () => Promise<void>> = {
    'crash in the poller commit': () => tolerate(() => runCapture(...deps({ hit: crashOnce(pick(POINTS)) }))),
    'HTTP errors on S3 and DynamoDB': async () => {
      const before = s3Http.injected.http503 + s3Http.injected.lostResponse + dynamoHttp.injected.http503 + dynamoHttp.injected.lostResponse;
      s3Http.enabled = true;
      dynamoHttp.enabled = true;
      try {
        await tolerate(() => runCapture(...deps()));
      } finally {
        s3Http.enabled = false;
        dynamoHttp.enabled = false;
      }
      const after = s3Http.injected.http503 + s3Http.injected.lostResponse + dynamoHttp.injected.http503 + dynamoHttp.injected.lostResponse;
      count('HTTP error (503 or lost response)', after - before);
    },
    'SIGKILL of sluice capture': () => killed(['capture', '--once']),
    'two pollers at once': async () => {
      count('overlapping poller');
      await Promise.all([tolerate(() => runCapture(...deps())), tolerate(() => runCapture(...deps()))]);
    },
    'lease expires mid-run': async () => {
      count('lease expired mid-run');
      const stall: Faults = {
        async hit(point) {
          if (point === 'after-staging') await sleep(1_600);
        },
      };
      await Promise.all([tolerate(() => runCapture(...deps(stall, 1_500))), sleep(1_550).then(() => tolerate(() => runCapture(...deps())))]);
    },
    'replication connection killed': async () => {
      // A budget-mode run keeps its binlog connection open; kill it from another session.
      const run = tolerate(() => runCapture(...deps(undefined, 2_500, false)));
      await sleep(random() * 300);
      for (let tries = 0; tries < 30; tries++) {
        // sluice's (user sluice), not the replica's (sluice_admin, and `Binlog Dump GTID` on MySQL).
        const [threads] = (await primary.admin.query(
          "SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND = 'Binlog Dump' AND USER = 'sluice'",
        )) as unknown as [{ ID: number }[]];
        if (threads.length) {
          for (const { ID } of threads) {
            await primary.admin.query(`KILL ${ID}`).catch(() => {});
            count('replication connection KILLed');
          }
          break;
        }
        await sleep(50);
      }
      await run;
    },
    'crash in a snapshot page commit': () =>
      tolerate(async () => {
        const deps0 = { config, s3, store, snapshots, log, faults: { hit: crashOnce(pick(POINTS)) } };
        const running = await snapshots.activeJobs(sourceId);
        const [job] = running.length
          ? running
          : await snapshotsToRun(deps0, { tables: [{ db: 'shop', table: pick(['orders', itemsTable, 'blobs', 'audit']) }] });
        if (job) await runSnapshotWorker(deps0, { budgetMs: 4_000, snapshotId: job.id });
      }),
    'crash in the Iceberg merge commit': async () => {
      await merge({ hit: crashOnce(pick(['after-staging', 'after-commit', 'before-clear'] as FaultPoint[])) });
    },
    'SIGKILL of sluice iceberg': () => killed(['iceberg']),
    'binlog history reset (RESET MASTER, then the recovery sluice offers)': async () => {
      // The server's binlog starts again under the stored position: the next run stops with
      // POSITION_FOREIGN (or LOST), and `state reset --to latest` moves the source to a new
      // history epoch whose first run resets and copies every table again.
      while (Math.floor(Date.now() / 1000) <= Math.floor(lastReset / 1000)) await sleep(50);
      await primary.admin.query('RESET MASTER');
      lastReset = Date.now();
      count('RESET MASTER');
      await tolerate(() => runCapture(...deps()));
      await resetToLatest();
      // The replica's GTID state is now ahead of its primary's: it is built again from a copy.
      await gate.close();
      try {
        await reseed();
      } finally {
        gate.open();
      }
    },
    'failover to the replica behind the unchanged endpoint': () => failover(random() < 0.3 ? 'replica lacking transactions read' : 'replica caught up'),
    'SIGKILL of sluice snapshot': async () => {
      const request = (await snapshots.activeJobs(sourceId)).length ? [] : ['--tables', `shop.${pick(['orders', itemsTable, 'audit'])}`];
      await killed(['snapshot', ...request, '--workers', '2']);
    },
  };

  /**
   * `state reset --to latest`, retried as a person would while a killed run's lease (STATE_BUSY) or
   * a crashed commit's renames (STATE_PENDING) are in the way.
   */
  async function resetToLatest(): Promise<void> {
    for (let tries = 0; tries < 20; tries++) {
      const reset = await resetState(config, store, { mode: 'latest' }, log).then(
        () => true,
        (error: { code?: string }) => {
          if (error.code !== 'STATE_BUSY' && error.code !== 'STATE_PENDING') throw error;
          return false;
        },
      );
      if (reset) return;
      if ((await store.get(sourceId))?.pending) await tolerate(() => runCapture(...deps()));
      await sleep(500);
    }
    throw new Error('chaos: state reset --to latest was refused 20 times');
  }

  /**
   * A failover while the workload runs. Writes pause (as a switchover holds them), the replica is
   * promoted, the endpoint sluice uses leads to it, and writes go on there. Caught up, the replica
   * holds every transaction sluice read and the next run must follow them by itself: exactly once,
   * the next history epoch, nothing copied again. Lacking the last transactions read (the
   * asynchronous replication gap), the run must stop with POSITION_FOREIGN naming them; chaos then
   * applies the documented recovery, `state reset --to latest`, which copies every table again from
   * the promoted server. Either way the old primary is retired and made a fresh replica of the new.
   */
  async function failover(variant: 'replica caught up' | 'replica lacking transactions read'): Promise<void> {
    const gap = variant !== 'replica caught up';
    await gate.close();
    try {
      if (await diverged()) {
        // Row-based replication does not promise the same data for a keyless table: with duplicate
        // rows the replica may change another of the equal ones, and the `key` DDL then numbers the
        // rows in another order (MySQL calls ADD … AUTO_INCREMENT unsafe for replication). A
        // replica that differs is not one to fail over to: it is built again first.
        await reseed();
        failovers.rebuiltFirst++;
      }
      // The last transaction read before the switch must be one the replica logged (a rebuilt
      // replica's binlog starts at its copy): a change, replicated, and every run's work finished.
      await primary.admin.query('USE shop');
      mutations += await newOrder(primary.admin);
      await caughtUp(primary.node, standby.node);
      await recover();
      if (kind === 'mysql' && !(await store.get(sourceId))?.position?.gtidSet) {
        // A MySQL position learns the set executed only from a binlog file read from its start
        // (Previous_gtids): one stored since a reset to `latest` has none until the next rotation,
        // and cannot be followed (docs/RUNBOOK.md, what stays POSITION_FOREIGN). Rotate first, as
        // the server does at max_binlog_size.
        await primary.admin.query('FLUSH BINARY LOGS');
        mutations += await newOrder(primary.admin);
        await caughtUp(primary.node, standby.node);
        await recover();
        failovers.rotatedFirst++;
      }
      if (gap) await stopReplication(standby.node);
      // The tail: unread and replicated, or read by sluice and lost with the old primary.
      for (let i = 0; i < 3; i++) mutations += await newOrder(primary.admin);
      if (gap) await recover();
      else await caughtUp(primary.node, standby.node);
      const before = (await store.get(sourceId)) as SourceState;
      await promote(standby.node);
      [primary, standby] = [standby, primary];
      proxy.switchTo(new URL(primary.server.url));
      count(`failover, ${variant}`);
      const failure = await runCapture(...deps()).then(
        () => undefined,
        (error: Error & { code?: string }) => error,
      );
      const after = (await store.get(sourceId)) as SourceState;
      const moved = `epoch ${before.epoch} → ${after.epoch}, ${before.position && formatPosition(before.position)} → ${after.position && formatPosition(after.position)}`;
      if (!gap) {
        if (failure || after.epoch !== before.epoch + 1 || after.lastReposition?.epoch !== after.epoch)
          throw new Error(`chaos: the run did not follow the failover to a caught-up replica (${moved}): ${failure?.stack ?? 'no reposition recorded'}`);
        if ((await snapshots.activeJobs(sourceId)).length) throw new Error('chaos: following a failover asked for tables to be copied again');
        failovers.followed++;
      } else {
        // It names what the promoted server lacks: GTIDs of the old primary's, up to the last one read.
        const last = before.position?.gtid ?? '';
        const origin = last.slice(0, last.lastIndexOf(kind === 'mysql' ? ':' : '-') + 1);
        if (failure?.code !== 'POSITION_FOREIGN' || !failure.message.includes('lacks') || !failure.message.includes(origin) || after.epoch !== before.epoch)
          throw new Error(`chaos: a replica lacking transactions read was not refused with POSITION_FOREIGN naming them (${moved}): ${failure?.message}`);
        failovers.stopped++;
        await resetToLatest();
      }
      await recover();
      await reseed();
    } finally {
      gate.open();
    }
  }

  /** Whether the replica, once caught up, holds other rows than the primary (CHECKSUM TABLE), or cannot catch up. */
  async function diverged(): Promise<boolean> {
    try {
      await caughtUp(primary.node, standby.node);
    } catch {
      return true;
    }
    const [tables] = (await primary.admin.query(
      "SELECT TABLE_NAME AS t FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'shop' AND TABLE_TYPE = 'BASE TABLE'",
    )) as unknown as [{ t: string }[]];
    if (!tables.length) return false;
    const sql = `CHECKSUM TABLE ${tables.map(({ t }) => `shop.\`${t}\``).join(', ')}`;
    const sums = async (m: Member) => JSON.stringify(((await m.admin.query(sql)) as unknown as [{ Checksum: unknown }[]])[0].map((r) => String(r.Checksum)));
    return (await sums(primary)) !== (await sums(standby));
  }

  function crashOnce(point: FaultPoint): Faults['hit'] {
    let armed = true;
    return (p) => {
      if (armed && p === point) {
        armed = false;
        count(`crash at ${point}`);
        throw new InjectedFault(`chaos crash at ${point}`);
      }
    };
  }

  /**
   * With CHAOS_DUMP=<dir>, a failed round leaves its evidence there: every event line of the source
   * and every item of the state table (position, pending commits, snapshot jobs and chunks).
   */
  async function dumpEvidence(round: number) {
    const to = process.env.CHAOS_DUMP;
    if (!to) return;
    const out = join(to, `${sourceId}-round-${round}`);
    mkdirSync(out, { recursive: true });
    s3Http.enabled = false;
    dynamoHttp.enabled = false;
    const lines: string[] = [];
    for await (const { line } of eventLines(s3, config.bucket, config.prefix, sourceId)) lines.push(line);
    writeFileSync(join(out, 'events.jsonl'), `${lines.join('\n')}\n`);
    const items: unknown[] = [];
    for await (const page of paginateScan({ client: dynamo }, { TableName: config.stateTable })) items.push(...(page.Items ?? []));
    writeFileSync(join(out, 'state.json'), JSON.stringify(items, null, 1));
    say(`evidence of round ${round}: ${out}`);
  }

  /** Clean runs until the poller is caught up and every snapshot is complete (leases of killed runs expire first). */
  async function recover(): Promise<EpochPosition> {
    let last: unknown;
    const noted = (error: unknown) => {
      last = error;
      return undefined;
    };
    for (let attempt = 0; attempt < 40; attempt++) {
      const [job] = await snapshots.activeJobs(sourceId);
      if (job) {
        const result = await runSnapshotWorker({ config, s3, store, snapshots, log }, { budgetMs: 30_000, snapshotId: job.id }).catch(noted);
        if (!result?.complete) await sleep(500);
        continue;
      }
      const result = await runCapture(...deps(undefined, 30_000)).catch(noted);
      // A capture may have asked for snapshots (DDL): caught up means nothing is left to copy either.
      if (result?.status === 'captured' && result.caughtUp && !(await snapshots.activeJobs(sourceId)).length) {
        const state = await store.get(sourceId);
        if (state?.position) return { epoch: state.epoch, position: state.position };
      }
      await sleep(500);
    }
    throw new Error(`chaos: the source did not recover within 40 clean runs; the last error: ${(last as Error)?.stack ?? last}`);
  }

  let report: ChaosReport | undefined;
  try {
    await primary.admin.query(`CREATE DATABASE shop; USE shop;
      CREATE TABLE orders (id BIGINT UNSIGNED PRIMARY KEY, customer INT, total DECIMAL(12,2), status ENUM('new','paid','shipped','cancelled'), note VARCHAR(50), ts DATETIME(6));
      CREATE TABLE items (order_id BIGINT UNSIGNED, line INT, sku VARCHAR(20), qty INT, price DOUBLE, PRIMARY KEY (order_id, line));
      CREATE TABLE blobs (id INT PRIMARY KEY, data VARBINARY(64), flag BIT(8), d DATE);
      CREATE TABLE audit (at_id INT, what VARCHAR(20), n INT);`);
    for (let i = 0; i < 200; i++) mutations += await mutate(primary.admin);
    // First run: `initial` requests the snapshot of the 200 orders; everything else streams.
    await runCapture(...deps());
    // One transaction larger than a batch (SLUICE_BATCH_MAX_EVENTS=1000).
    const big = nextId;
    nextId += 1500;
    await primary.admin.query(await sequenced(`INSERT INTO items SELECT ${big}, seq, 'bulk', 1, 1.5 FROM seq_1_to_1500`));
    mutations += 1500;

    // CHAOS_FAULTS=failover,RESET: only the faults whose names hold one of those words (docs/VERIFY.md).
    const wanted = process.env.CHAOS_FAULTS?.split(',').map((k) => k.trim().toLowerCase());
    const faultKinds = Object.keys(scenarios).filter((name) => !wanted || wanted.some((k) => name.toLowerCase().includes(k)));
    if (!faultKinds.length) throw new Error(`CHAOS_FAULTS: no fault matches ${wanted?.join(', ')}; known: ${Object.keys(scenarios).join('; ')}`);
    let previous: EpochPosition | undefined;
    let eventsChecked = 0;
    let differences = 0;
    for (let round = 1; round <= options.rounds; round++) {
      const chosen = Array.from({ length: 3 + Math.floor(random() * 4) }, () => pick(faultKinds));
      // Up to two DDL statements at random points of the round's workload.
      const ddlAt = Array.from({ length: process.env.CHAOS_DDL ? 4 : Math.floor(random() * 3) }, () => Math.floor(random() * options.mutationsPerRound)).sort(
        (a, b) => a - b,
      );
      const ddlDone: string[] = [];
      const workload = (async () => {
        // Writes go to the primary; after a failover, to the new one (a new connection, as an application reconnects).
        let on: Member | undefined;
        let conn: mysql.Connection | undefined;
        let done = 0;
        while (done < options.mutationsPerRound) {
          done += await gate.through(async () => {
            if (on !== primary || !conn) {
              await conn?.end().catch(() => {});
              on = primary;
              conn = await mysql.createConnection({ uri: primary.server.adminUrl, database: 'shop', multipleStatements: true });
            }
            while (ddlAt.length && (ddlAt[0] as number) <= done) {
              ddlAt.shift();
              ddlDone.push(await ddl(conn));
            }
            return mutate(conn);
          });
        }
        await conn?.end();
        return done;
      })();
      for (const name of chosen) {
        log.info(`chaos: round ${round}: ${name}`);
        await (scenarios[name] as () => Promise<void>)();
      }
      mutations += await workload;
      for (const kind of ddlDone) count(`DDL ${kind}`);

      const position = await recover();
      if (previous && compareEpochPositions(position, previous) < 0)
        throw new Error(
          `chaos: the stored position moved backwards: ${formatPosition(previous.position)} (epoch ${previous.epoch}) → ${formatPosition(position.position)} (epoch ${position.epoch})`,
        );
      previous = position;
      const verdict = await verify({ config, s3, store, snapshots });
      // The Iceberg tables, merged cleanly up to the recovered position (killed merges' leases expire first).
      const merged = await merge(undefined, 10_000);
      const objects = s3ObjectStore(s3, config.bucket);
      let icebergDifferences = merged.tables.filter((t) => t.status !== 'merged' && t.status !== 'up-to-date').length;
      // Every table verify compared: the current names (renamed items), the keyless audit table, scratch while it exists.
      for (const table of verdict.tables.map((t) => t.ref.table)) {
        const ledger = await merges.get(sourceId, { db: 'shop', table });
        const iceberg = await icebergRowsAt(objects, ledger?.metadataKey ? (await loadVersion(objects, ledger.metadataKey)).metadata : undefined);
        const mysqlRows = await mysqlTextOf(async (query, values) => (await primary.admin.query(query, values))[0] as Record<string, unknown>[], 'shop', table);
        if (JSON.stringify(iceberg) !== JSON.stringify(mysqlRows)) {
          icebergDifferences++;
          const extra = iceberg.filter((r) => !mysqlRows.includes(r)).slice(0, 2);
          const missing = mysqlRows.filter((r) => !iceberg.includes(r)).slice(0, 2);
          say(`round ${round}: Iceberg shop.${table} differs: extra ${JSON.stringify(extra)}, missing ${JSON.stringify(missing)}`);
        }
      }
      differences += icebergDifferences;
      const seqs = new Set<string>();
      let events = 0;
      for await (const { line } of eventLines(s3, config.bucket, config.prefix, sourceId)) {
        events++;
        seqs.add(/"seq":"([^"]+)"/.exec(line)?.[1] ?? '');
      }
      const staging: string[] = [];
      for await (const key of listKeys(s3, config.bucket, stagingRoot(config.prefix, sourceId))) staging.push(key);
      const roundDifferences =
        verdict.tables.reduce((a, t) => a + t.missing + t.extra + t.differing + t.missingColumns.length + t.extraColumns.length, 0) + verdict.orphans.length;
      differences += roundDifferences + (events - seqs.size) + staging.length;
      eventsChecked = events;
      say(
        `round ${round}/${options.rounds}: ${chosen.join(', ')}${ddlDone.length ? ` + DDL ${ddlDone.join(', ')}` : ''} → ${events} events, ${events - seqs.size} duplicate seqs, ${staging.length} staging left, ${roundDifferences} differences, Iceberg ${icebergDifferences} tables differ (${verdict.tables.map((t) => `${t.ref.table} ${t.compared}`).join(', ')} rows compared)`,
      );
      if (roundDifferences || events !== seqs.size || staging.length || icebergDifferences) {
        await dumpEvidence(round);
        throw new Error(
          `chaos round ${round} (seed ${options.seed}) failed (${icebergDifferences} Iceberg tables differ or failed: ${JSON.stringify(merged.tables.map((t) => [t.table.table, t.status, t.reason]))}): ${JSON.stringify(verdict.tables.map((t) => ({ table: t.table, missing: t.examples.missing, extra: t.examples.extra, differing: t.examples.differing, columns: [t.missingColumns, t.extraColumns] })))}, orphans ${JSON.stringify(verdict.orphans)}; duplicates ${events - seqs.size}; staging ${staging.slice(0, 3)}`,
        );
      }
    }
    report = { rounds: options.rounds, mutations, faults, eventsChecked, differences, failovers, seconds: Math.round((Date.now() - started) / 1000) };
    return report;
  } finally {
    gate.open();
    await proxy.close();
    for (const { admin } of [primary, standby]) await admin.end().catch(() => {});
    s3.destroy();
    dynamo.destroy();
    for (const server of servers) await stopProcess(server.pid);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** A log that appends each line, with its time and fields, as JSON to `file`. */
function traceLog(file: string): Log {
  const write =
    (level: string) =>
    (message: unknown, ...extra: unknown[]) =>
      appendFileSync(
        file,
        `${JSON.stringify({ at: new Date().toISOString(), level, message, extra }, (_, v) =>
          typeof v === 'bigint' ? String(v) : v instanceof Error ? { error: v.message, code: (v as { code?: string }).code } : v,
        )}\n`,
      );
  return { debug() {}, info: write('info'), warn: write('warn'), error: write('error') } as Log;
}
