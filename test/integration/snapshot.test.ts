import { spawn } from 'node:child_process';
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import mysql from 'mysql2/promise';
import { describe, expect, inject, it } from 'vitest';
import { runCapture } from '../../lib/capture/run.ts';
import { crashAt, type FaultPoint, InjectedFault } from '../../lib/commit/faults.ts';
import { loadConfig } from '../../lib/config/config.ts';
import { comparePositions } from '../../lib/core/position.ts';
import { SluiceError } from '../../lib/errors.ts';
import { silentLog } from '../../lib/log.ts';
import { type SnapshotEvent, snapshotInvocation } from '../../lib/snapshot/invocation.ts';
import { planSnapshot, requestSnapshot } from '../../lib/snapshot/plan.ts';
import { restartStalledSnapshots } from '../../lib/snapshot/progress.ts';
import { runSnapshotWorker } from '../../lib/snapshot/worker.ts';
import { startupPosition } from '../../lib/source/mysql/binlog-scan.ts';
import { connect } from '../../lib/source/mysql/server.ts';
import type { SnapshotStore } from '../../lib/state/snapshot-store.ts';
import { type ChangeEvent, expectExactlyOnce, materialize, type TestSource, testSource } from '../support/source.ts';
import { stallingProxy } from '../support/stalling-proxy.ts';

/** Random inserts/updates/deletes on `table` (int id, v, n) until `stop()`; returns how many it made. */
function writer(source: TestSource, table: string, ids: number) {
  let running = true;
  let changes = 0;
  const done = (async () => {
    const conn = await mysql.createConnection({ uri: process.env.SLUICE_LOCAL_ADMIN_URL, database: source.db });
    while (running) {
      const id = 1 + Math.floor(Math.random() * ids);
      const r = Math.random();
      if (r < 0.4) await conn.query(`INSERT INTO ${table} VALUES (?, 'new', 0) ON DUPLICATE KEY UPDATE n = n + 1`, [id]);
      else if (r < 0.8) await conn.query(`UPDATE ${table} SET v = 'upd', n = n + 1 WHERE id = ?`, [id]);
      else await conn.query(`DELETE FROM ${table} WHERE id = ?`, [id]);
      changes++;
    }
    await conn.end();
  })();
  return {
    async stop() {
      running = false;
      await done;
      return changes;
    },
  };
}

/** A clock `ms` ahead of the wall clock: a lease left by a worker that died just now has run out by it. */
const ahead = (ms: number) => () => Date.now() + ms;

const snapshotRows = (events: ChangeEvent[], table: string) => events.filter((e) => e.op === 'r' && e.table === table);

async function seed(source: TestSource, table: string, rows: number) {
  await source.sql(`CREATE TABLE ${table} (id INT PRIMARY KEY, v VARCHAR(20), n INT)`);
  await source.sql(`INSERT INTO ${table} SELECT seq, CONCAT('v', seq), seq FROM seq_1_to_${rows}`);
}

describe('snapshot (real stack)', () => {
  it('initial hand-off: writes before, during and after the snapshot materialize to exactly the table', async () => {
    await using source = await testSource('handoff', { SLUICE_STARTUP: 'initial', SLUICE_SNAPSHOT_PAGE_ROWS: '150', SLUICE_SNAPSHOT_CHUNK_ROWS: '700' });
    await seed(source, 'a', 2000);
    const first = await source.capture(); // requests the snapshot and records the position read before it
    expect(first.snapshotRequested).toBeDefined();
    const load = writer(source, 'a', 2400);
    const snapshot = await source.snapshot({ workers: 2 });
    const during = await load.stop();
    await source.sql("INSERT INTO a VALUES (5000, 'after', 1); UPDATE a SET v = 'after' WHERE id < 50; DELETE FROM a WHERE id BETWEEN 100 AND 120");
    await source.capture();

    expect(snapshot.complete).toBe(true);
    expect(during).toBeGreaterThan(50);
    const { events, duplicates, differences } = await expectExactlyOnce(source, ['a']);
    expect(duplicates).toBe(0);
    expect(differences).toEqual([]);
    expect(snapshotRows(events, 'a').every((e) => e.source.snapshot === true && e.before === null)).toBe(true);
  });

  it('two planners racing on one job keep one plan: no key range falls between their boundaries', async () => {
    await using source = await testSource('planrace', { SLUICE_STARTUP: 'latest', SLUICE_SNAPSHOT_CHUNK_ROWS: '700' });
    await seed(source, 'a', 2000);
    await source.capture();
    const deps = { ...source.clients, config: source.config, log: silentLog };
    const job = await requestSnapshot(deps, [{ db: source.db, table: 'a' }]);
    // Planner A has written two chunks when planner B plans the whole job after rows moved the boundaries.
    let raced = false;
    const racing = Object.create(source.clients.snapshots, {
      putChunk: {
        value: async (...args: Parameters<SnapshotStore['putChunk']>) => {
          if (args[2].n === 2 && !raced) {
            raced = true;
            await source.sql('DELETE FROM a WHERE id <= 50');
            await planSnapshot(deps, job);
          }
          return source.clients.snapshots.putChunk(...args);
        },
      },
    }) as SnapshotStore;
    const planned = await planSnapshot({ ...deps, snapshots: racing }, job);
    expect(raced).toBe(true);
    expect(planned.tables?.[0]?.chunks).toBeGreaterThan(2);
    expect((await runSnapshotWorker(deps, { budgetMs: 30_000, snapshotId: job.id })).complete).toBe(true);
    await source.capture();
    const { duplicates, differences } = await expectExactlyOnce(source, ['a']);
    expect(duplicates).toBe(0);
    expect(differences).toEqual([]);
  });

  it.each(['after-staging', 'after-commit', 'mid-rename', 'before-clear'] as FaultPoint[])(
    'a crash at %s during a page commit, then a rerun: every row exactly once',
    async (point) => {
      await using source = await testSource('snapcrash', { SLUICE_SNAPSHOT_PAGE_ROWS: '100', SLUICE_SNAPSHOT_LEASE_SECONDS: '1' });
      await seed(source, 'a', 450);
      await expect(source.snapshot({ faults: crashAt(point) })).rejects.toBeInstanceOf(InjectedFault);
      const rerun = await source.snapshot({ clock: ahead(1100) }); // the dead worker's chunk lease has run out by then
      expect(rerun.complete).toBe(true);
      const events = await source.events();
      const rows = snapshotRows(events, 'a');
      expect(rows).toHaveLength(450);
      expect(new Set(rows.map((e) => JSON.stringify(e.key))).size).toBe(450);
      expect(new Set(events.map((e) => e.seq)).size).toBe(events.length);
      expect(await source.stagingKeys()).toEqual([]);
    },
  );

  it('a page commit stored by the previous release (pending.commitSeq = the page) still rolls forward', async () => {
    await using source = await testSource('snaplegacy', { SLUICE_SNAPSHOT_PAGE_ROWS: '100', SLUICE_SNAPSHOT_LEASE_SECONDS: '1' });
    await seed(source, 'a', 250);
    await expect(source.snapshot({ faults: crashAt('after-commit') })).rejects.toBeInstanceOf(InjectedFault);
    const job = await source.clients.snapshots.latestJob(source.db);
    const chunk = await source.clients.snapshots.chunk(source.db, job?.id ?? '', job?.tables?.[0]?.id ?? '', 0);
    expect(chunk?.pending?.copies.length).toBeGreaterThan(0);
    await source.clients.dynamo.send(
      new UpdateItemCommand({
        TableName: source.config.stateTable,
        Key: { pk: { S: `chunk#${source.db}#${job?.id}#${job?.tables?.[0]?.id}#0` } },
        UpdateExpression: 'SET #pending.#seq = :page',
        ExpressionAttributeNames: { '#pending': 'pending', '#seq': 'commitSeq' },
        ExpressionAttributeValues: { ':page': { N: String(chunk?.pages) } },
      }),
    );
    expect((await source.snapshot({ clock: ahead(1100) })).complete).toBe(true); // the dead worker's chunk lease has run out by then
    const rows = snapshotRows(await source.events(), 'a');
    expect(rows).toHaveLength(250);
    expect(new Set(rows.map((e) => e.seq)).size).toBe(250);
    expect(await source.stagingKeys()).toEqual([]);
  });

  it('a SIGKILLed `sluice snapshot` resumes where it stopped and copies every row once', async () => {
    await using source = await testSource('snapkill', { SLUICE_SNAPSHOT_PAGE_ROWS: '500', SLUICE_SNAPSHOT_LEASE_SECONDS: '2' });
    await seed(source, 'a', 20000);
    const env = {
      ...process.env,
      SLUICE_SOURCE_ID: source.db,
      SLUICE_PREFIX: source.db,
      SLUICE_INCLUDE: `${source.db}\\..*`,
      SLUICE_SNAPSHOT_PAGE_ROWS: '500',
      SLUICE_SNAPSHOT_LEASE_SECONDS: '2',
    };
    const child = spawn(process.execPath, ['bin/sluice.js', 'snapshot', '--all', '--workers', '1'], { env, stdio: 'ignore' });
    // Kill it once some pages are committed, i.e. mid-run.
    for (let i = 0; i < 300; i++) {
      const job = await source.clients.snapshots.latestJob(source.db);
      const chunk = job?.status === 'planned' ? await source.clients.snapshots.chunk(source.db, job.id, job.tables?.[0]?.id ?? '', 0) : undefined;
      if ((chunk?.pages ?? 0) >= 3) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    const job = await source.clients.snapshots.latestJob(source.db);
    const killedAt = await source.clients.snapshots.chunk(source.db, job?.id ?? '', job?.tables?.[0]?.id ?? '', 0);
    expect(killedAt?.done).toBe(false);
    expect(killedAt?.rows).toBeGreaterThan(0);

    const rerun = await source.snapshot({ clock: ahead(2100) }); // the killed worker's lease has run out by then
    expect(rerun.complete).toBe(true);
    expect(rerun.rows).toBe(20000 - (killedAt?.rows ?? 0)); // resumed at the cursor, not from zero
    const rows = snapshotRows(await source.events(), 'a');
    expect(rows).toHaveLength(20000);
    expect(new Set(rows.map((e) => e.seq)).size).toBe(20000);
  });

  it('a paging connection the server kills mid-page fails the run with a retriable error (no crash, no hang); the next run copies every row once', async () => {
    await using source = await testSource('snaplost', { SLUICE_SNAPSHOT_PAGE_ROWS: '300000', SLUICE_SNAPSHOT_LEASE_SECONDS: '2' });
    await seed(source, 'a', 200000);
    const running = source.snapshot().then(
      () => undefined,
      (error: unknown) => error,
    );
    let killed = false;
    for (let i = 0; i < 3000 && !killed; i++) {
      const [query] = await source.sql(
        "SELECT ID AS id FROM information_schema.PROCESSLIST WHERE COMMAND = 'Execute' AND ID <> CONNECTION_ID() AND INFO LIKE ?",
        [`SELECT %FROM \`${source.db}\`.\`a\`%`],
      );
      if (query) {
        await source.sql(`KILL CONNECTION ${Number(query.id)}`);
        killed = true;
      }
    }
    expect(killed).toBe(true);
    const error = await running;
    expect(error).toBeInstanceOf(SluiceError);
    expect((error as SluiceError).message).toMatch(/connection reading the snapshot was lost/);
    expect((error as SluiceError).retriable).toBe(true);

    expect((await source.snapshot({ clock: ahead(2100) })).complete).toBe(true); // the failed worker's chunk lease has run out by then
    const rows = snapshotRows(await source.events(), 'a');
    expect(rows).toHaveLength(200000);
    expect(new Set(rows.map((e) => e.seq)).size).toBe(200000);
  });

  it('pages composite keys, unsigned BIGINT keys near 2^64 and case-insensitive string keys exactly', async () => {
    await using source = await testSource('keys', { SLUICE_SNAPSHOT_PAGE_ROWS: '7', SLUICE_SNAPSHOT_CHUNK_ROWS: '20' });
    await source.sql(`CREATE TABLE comp (a INT, b VARCHAR(10), v INT, PRIMARY KEY (a, b));
      INSERT INTO comp SELECT seq % 5, CONCAT('k', seq), seq FROM seq_1_to_60;
      CREATE TABLE big (id BIGINT UNSIGNED PRIMARY KEY, v INT);
      INSERT INTO big SELECT 18446744073709551615 - seq, seq FROM seq_0_to_49;
      INSERT INTO big SELECT seq, seq FROM seq_1_to_10;
      CREATE TABLE txt (k VARCHAR(10) COLLATE utf8mb4_unicode_ci PRIMARY KEY, v INT);
      INSERT INTO txt VALUES ('a',1),('B',2),('c',3),('D',4),('e',5),('F',6),('g',7),('H',8),('ñ',9),('Z',10),('y',11),('X',12),('w',13),('V',14),('u',15);`);
    const snapshot = await source.snapshot({ workers: 2 });
    expect(snapshot.complete).toBe(true);
    const events = await source.events();
    const keys = (table: string) => snapshotRows(events, table).map((e) => e.raw.match(/"key":(\{[^}]*\})/)?.[1]);
    expect(new Set(keys('comp')).size).toBe(60);
    expect(keys('comp')).toHaveLength(60);
    const big = keys('big');
    expect(big).toHaveLength(60);
    expect(new Set(big).size).toBe(60);
    expect(big).toContain('{"id":18446744073709551615}');
    expect(big).toContain('{"id":18446744073709551566}');
    expect(keys('txt')).toHaveLength(15);
    expect(new Set(keys('txt')).size).toBe(15);
  });

  it('copies an empty table (nothing to copy, done) and a table without a key whole, duplicates included, in pages behind one reset', async () => {
    await using source = await testSource('nokey', { SLUICE_SNAPSHOT_PAGE_ROWS: '10' });
    await source.sql(
      "CREATE TABLE `empty` (id INT PRIMARY KEY); CREATE TABLE nokey (v VARCHAR(5), n INT); INSERT INTO nokey SELECT 'dup', 1 FROM seq_1_to_12; INSERT INTO nokey SELECT CONCAT('r', seq), seq FROM seq_1_to_13",
    );
    const first = await source.snapshot();
    expect(first.complete).toBe(true);
    expect(first.rows).toBe(25);
    const rows = (await source.events()).filter((e) => e.table === 'nokey');
    // One reset at the attempt's watermark, sorting before all 25 rows, which come in 3 pages.
    expect(rows.filter((e) => e.op === 't').map((e) => e.ddl?.kind)).toEqual(['snapshot']);
    const reset = rows.find((e) => e.op === 't');
    expect(rows.filter((e) => e.op === 'r').every((e) => reset && e.seq > reset.seq && e.key === null)).toBe(true);
    expect(new Set(rows.filter((e) => e.op === 'r').map((e) => e.seq.split('.').slice(0, -1).join('.'))).size).toBe(3);
    expect(rows.filter((e) => e.after?.v === 'dup')).toHaveLength(12);

    // A second attempt at the table supersedes the first: its reset sorts after every earlier row.
    await source.sql("DELETE FROM nokey WHERE v = 'dup' LIMIT 5");
    const again = await source.snapshot({ tables: [`${source.db}.nokey`] });
    expect(again.rows).toBe(20);
    // (in seq order: events() lists manifests by key, and two job ids of one second sort at random)
    const resets = (await source.events())
      .filter((e) => e.table === 'nokey' && e.op === 't')
      .map((e) => e.seq)
      .sort();
    expect(resets).toHaveLength(2);
    expect(rows.every((e) => e.seq < (resets[1] as string))).toBe(true);
  });

  it('pages a table without a primary key by a configured unique NOT NULL column, and refuses a nullable one', async () => {
    await using source = await testSource('keycol', { SLUICE_SNAPSHOT_PAGE_ROWS: '10' });
    await source.sql('CREATE TABLE t (code VARCHAR(10) NOT NULL, v INT, UNIQUE KEY (code)); INSERT INTO t SELECT CONCAT("c", seq), seq FROM seq_1_to_35');
    const base = { ...process.env, SLUICE_SOURCE_ID: source.db, SLUICE_PREFIX: source.db, SLUICE_INCLUDE: `${source.db}\\..*` };
    const snapshot = await source.snapshot({ config: loadConfig({ ...base, SLUICE_KEY_COLUMNS: `${source.db}.t:code` }) });
    expect(snapshot.rows).toBe(35);
    await source.sql('ALTER TABLE t ADD COLUMN maybe INT NULL');
    await expect(
      source.snapshot({ tables: [`${source.db}.t`], config: loadConfig({ ...base, SLUICE_KEY_COLUMNS: `${source.db}.t:maybe` }) }),
    ).rejects.toBeInstanceOf(SluiceError);
  });

  it('parallel workers split one table and copy every row once', async () => {
    await using source = await testSource('parallel', { SLUICE_SNAPSHOT_PAGE_ROWS: '100', SLUICE_SNAPSHOT_CHUNK_ROWS: '250' });
    await seed(source, 'a', 3000);
    const snapshot = await source.snapshot({ workers: 3 });
    expect(snapshot.complete).toBe(true);
    expect(snapshot.results.filter((r) => r.rows > 0).length).toBeGreaterThanOrEqual(2);
    expect(snapshot.job.id).toBeDefined();
    const rows = snapshotRows(await source.events(), 'a');
    expect(rows).toHaveLength(3000);
    expect(new Set(rows.map((e) => JSON.stringify(e.key))).size).toBe(3000);
    expect(materialize(await source.events(), 'a').size).toBe(3000);
  });

  it('an on-demand snapshot of one table on a running source merges with the stream', async () => {
    await using source = await testSource('ondemand', { SLUICE_SNAPSHOT_PAGE_ROWS: '100' });
    await seed(source, 'a', 500);
    await source.capture(); // a running source, started at latest: a's rows are not in the output
    await source.sql("UPDATE a SET v = 'streamed' WHERE id <= 10");
    await source.capture();
    const load = writer(source, 'a', 600);
    await source.snapshot({ tables: [`${source.db}.a`] });
    await load.stop();
    await source.capture();
    const { duplicates, differences } = await expectExactlyOnce(source, ['a']);
    expect(duplicates).toBe(0);
    expect(differences).toEqual([]);
  });
});

describe('snapshot function orchestration (Lambda invocations simulated in-process)', () => {
  it('the planner fans out, workers out of time continue themselves, and the job completes exactly once', async () => {
    await using source = await testSource('lambda', {
      SLUICE_SNAPSHOT_PAGE_ROWS: '400',
      SLUICE_SNAPSHOT_CHUNK_ROWS: '3000',
      SLUICE_SAFETY_MARGIN_SECONDS: '1',
    });
    await seed(source, 'a', 12000);
    const deps = { config: source.config, s3: source.clients.s3, store: source.clients.store, snapshots: source.clients.snapshots, log: silentLog };
    const queue: SnapshotEvent[] = [];
    const invoke = async (event: SnapshotEvent) => {
      queue.push(event);
    };
    // Without `all` (or tables) nothing is pending, so nothing starts: a full copy is asked for explicitly.
    expect(await snapshotInvocation(deps, invoke, { workers: 2 }, { budgetMs: 1_000, workerId: 'planner' })).toEqual({ snapshot: '', workers: 2 });
    expect(await source.clients.snapshots.latestJob(source.db)).toBeUndefined();
    const planned = await snapshotInvocation(deps, invoke, { all: true, workers: 2 }, { budgetMs: 1_000, workerId: 'planner' });
    expect(queue).toHaveLength(2);
    let invocations = 0;
    // Each "invocation" gets 1.15 s, of which 1 s is safety margin: a page or two, then it must hand over.
    while (queue.length && invocations < 200) {
      const batch = queue.splice(0);
      invocations += batch.length;
      await Promise.all(batch.map((event, i) => snapshotInvocation(deps, invoke, event, { budgetMs: 1_150, workerId: `inv-${invocations}-${i}` })));
    }
    expect(invocations).toBeGreaterThan(2);
    const job = await source.clients.snapshots.job(source.db, (planned as { snapshot: string }).snapshot);
    expect(job?.status).toBe('done');
    const rows = snapshotRows(await source.events(), 'a');
    expect(rows).toHaveLength(12000);
    expect(new Set(rows.map((e) => e.seq)).size).toBe(12000);
  });

  it('the poller restarts a snapshot that has no live worker', async () => {
    await using source = await testSource('stall', { SLUICE_STARTUP: 'initial' });
    await seed(source, 'a', 10);
    const started: string[] = [];
    const start = async (job: { id: string }) => void started.push(job.id);
    // What the poller handler does each tick: supervise the snapshot, then capture.
    const poll = async () => {
      await restartStalledSnapshots({ snapshots: source.clients.snapshots, sourceId: source.db, log: silentLog }, start);
      return runCapture(
        {
          config: source.config,
          s3: source.clients.s3,
          store: source.clients.store,
          snapshots: source.clients.snapshots,
          log: silentLog,
          onSnapshotRequested: start,
        },
        { budgetMs: 10_000, stopWhenCaughtUp: true },
      );
    };
    const first = await poll();
    expect(started).toEqual([first.snapshotRequested]);
    await poll(); // nobody works on the snapshot: the next tick restarts it
    expect(started).toEqual([first.snapshotRequested, first.snapshotRequested]);
    await source.snapshot();
    await poll(); // complete: nothing to restart
    expect(started).toHaveLength(2);
  });
});

describe('startup positions', () => {
  it('timestamp: and gtid: start at the first transaction at/after the time, or after the GTID', async () => {
    await using source = await testSource('startat');
    await source.sql('CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(10), n INT)');
    await source.sql("INSERT INTO a VALUES (1, 'before', 1)");
    // The server's executed transactions in its own GTID form: MariaDB's `d-s-n` position, MySQL's set.
    const executed = inject('stackServer') === 'mysql' ? 'SELECT @@gtid_executed AS gtid' : 'SELECT @@gtid_binlog_pos AS gtid';
    const [[{ gtid }]] = (await source.admin.query(executed)) as unknown as [[{ gtid: string }]];
    await new Promise((resolve) => setTimeout(resolve, 1100)); // binlog timestamps have second precision
    const between = new Date(Math.ceil(Date.now() / 1000) * 1000);
    await new Promise((resolve) => setTimeout(resolve, between.getTime() - Date.now() + 50));
    await source.sql("INSERT INTO a VALUES (2, 'after', 2)");

    const base = { ...process.env, SLUICE_PREFIX: source.db, SLUICE_INCLUDE: `${source.db}\\..*` };
    for (const startup of [`timestamp:${between.toISOString()}`, `gtid:${gtid.replace(/\s/g, '')}`]) {
      const config = loadConfig({ ...base, SLUICE_SOURCE_ID: `${source.db}_${startup.split(':')[0]}`, SLUICE_STARTUP: startup });
      await source.capture({ config });
      const { events } = await import('../../lib/materialize/change-log.ts').then(async ({ eventLines }) => {
        const lines: string[] = [];
        for await (const { line } of eventLines(source.clients.s3, config.bucket, config.prefix, config.sourceId)) lines.push(line);
        return { events: lines.map((l) => JSON.parse(l)) };
      });
      expect(
        events.map((e) => e.after?.v),
        startup,
      ).toEqual(['after']);
    }
  });
});

describe('startup positions on a stream that pauses', () => {
  it('timestamp: waits for the binlog up to its end rather than starting where the stream paused', async () => {
    await using source = await testSource('startstall');
    await source.sql('CREATE TABLE a (id INT PRIMARY KEY)');
    await source.sql('INSERT INTO a VALUES (1)');
    await new Promise((resolve) => setTimeout(resolve, 1100)); // binlog timestamps have second precision
    const status = async () => ((await source.admin.query('SHOW MASTER STATUS')) as unknown as [[{ File: string; Position: number }]])[0][0];
    // Every transaction before `before` committed before `between`; ours begins after it.
    const before = await status();
    const between = new Date(Math.ceil(Date.now() / 1000) * 1000);
    await new Promise((resolve) => setTimeout(resolve, between.getTime() - Date.now() + 50));
    await source.sql('INSERT INTO a VALUES (2)');
    const written = await status();

    // Pauses of 600 ms: three times the scan's idle tick.
    const proxy = await stallingProxy(new URL(source.config.mysqlUrl ?? ''), 600);
    const config = loadConfig({ ...process.env, SLUICE_MYSQL_URL: proxy.url, SLUICE_STARTUP: `timestamp:${between.toISOString()}` });
    const conn = await connect(await (await import('../../lib/source/mysql/target.ts')).mysqlTarget(config));
    try {
      // Other tests write (and rotate the binlog) meanwhile: the boundary before the first
      // transaction at or after `between` is ours or one of theirs, after `before`, before our end.
      const start = await startupPosition(config, conn, silentLog);
      const at = (s: { File: string; Position: number }) => ({ file: s.File, pos: Number(s.Position) });
      expect(comparePositions(start, at(before))).toBeGreaterThanOrEqual(0);
      expect(comparePositions(start, at(written))).toBeLessThan(0);
    } finally {
      await conn.end();
      await proxy.close();
    }
  });
});
