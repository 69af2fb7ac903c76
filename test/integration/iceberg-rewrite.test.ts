import { describe, expect, it } from 'vitest';
import { crashAt, type FaultPoint } from '../../lib/commit/faults.ts';
import type { Config } from '../../lib/config/config.ts';
import { type ManifestEntry, type ManifestFile, readAvroFile } from '../../lib/iceberg/files/avro.ts';
import { runRewriteWorker } from '../../lib/iceberg/merge/rewrite.ts';
import { icebergLocation } from '../../lib/iceberg/merge/spec.ts';
import { metadataKey, versionHintKey } from '../../lib/iceberg/table/table.ts';
import { silentLog } from '../../lib/log.ts';
import { s3ObjectStore } from '../../lib/sink/s3/object-store.ts';
import { listKeys } from '../../lib/sink/s3/objects.ts';
import type { RewriteBuckets } from '../../lib/state/iceberg-buckets.ts';
import { committedVersion, icebergRows, icebergRowsAt, inProcessWorkers, merge, mysqlText } from '../support/iceberg-merge.ts';
import { type TestSource, testSource } from '../support/source.ts';

/*
 * A first load split into buckets (lib/iceberg/merge/rewrite.ts) against the real stack: written over
 * several merge runs with crashes at every step, and by workers in parallel; each time exactly one
 * snapshot, equal to MariaDB, every data file in the table's folder named by it.
 */

const ROWS = 1200;

/** A table snapshotted into the change log, then changed by binlog events (updates, deletes, inserts). */
async function loaded(prefix: string): Promise<TestSource> {
  const source = await testSource(prefix, { SLUICE_STARTUP: 'initial' });
  await source.sql(
    `CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20), amount DECIMAL(10,2)); INSERT INTO t SELECT seq, CONCAT('n', seq), seq / 7 FROM seq_1_to_${ROWS}`,
  );
  await source.capture();
  expect((await source.snapshot()).complete).toBe(true);
  await source.sql(`UPDATE t SET name = 'changed' WHERE id % 10 = 0; DELETE FROM t WHERE id % 25 = 1; INSERT INTO t VALUES (${ROWS + 1}, 'new', 1.5)`);
  await source.capture();
  return source;
}

const configOf = (source: TestSource, iceberg: Partial<Config['iceberg']>): Config => ({ ...source.config, iceberg: { ...source.config.iceberg, ...iceberg } });

/** One snapshot, MariaDB's rows, and the data folder holding exactly the files that snapshot lists. */
async function expectOneCompleteSnapshot(source: TestSource) {
  const version = await committedVersion(source, 't');
  expect(version?.metadata.snapshots).toHaveLength(1);
  expect(await icebergRows(source, 't')).toEqual(await mysqlText(source, 't'));
  const location = icebergLocation(source.config.prefix, { db: source.db, table: 't' });
  const data: string[] = [];
  for await (const key of listKeys(source.clients.s3, source.config.bucket, `${location}/data/`)) data.push(key);
  expect(data.length).toBe(Number(version?.metadata.snapshots[0]?.summary['total-data-files']));
  const state = await source.clients.merges.get(source.config.sourceId, { db: source.db, table: 't' });
  expect(state?.rewrite).toBeUndefined();
}

/** Every object under the table's location, and every one its committed metadata names (files, manifests, lists, metadata, the published copies and hint). */
async function tableObjects(source: TestSource, table: string) {
  const store = s3ObjectStore(source.clients.s3, source.config.bucket);
  const location = icebergLocation(source.config.prefix, { db: source.db, table });
  const listed: string[] = [];
  for await (const key of listKeys(source.clients.s3, source.config.bucket, `${location}/`)) listed.push(key);
  const version = await committedVersion(source, table);
  if (!version) throw new Error(`${table} has no committed version`);
  const named = new Set([version.metadataKey, versionHintKey(location)]);
  // The file catalog's published copies (`v<n>.metadata.json`): the current version's always, an
  // earlier one's where it was published (a version chained into the same commit never is).
  named.add(metadataKey(location, version.version));
  for (let n = 1; n < version.version; n++) if (listed.includes(metadataKey(location, n))) named.add(metadataKey(location, n));
  for (const entry of version.metadata['metadata-log']) named.add(store.keyOf(entry['metadata-file']));
  for (const snapshot of version.metadata.snapshots) {
    named.add(store.keyOf(snapshot['manifest-list']));
    for (const manifest of readAvroFile<ManifestFile>((await store.get(store.keyOf(snapshot['manifest-list']))) as Uint8Array).records) {
      named.add(store.keyOf(manifest.manifest_path));
      for (const entry of readAvroFile<ManifestEntry>((await store.get(store.keyOf(manifest.manifest_path))) as Uint8Array).records)
        named.add(store.keyOf(entry.data_file.file_path));
    }
  }
  return { listed: listed.sort(), named: [...named].sort() };
}

/** `buckets` with `method` held after (claim) or before (get) its first call until `release()`; `reached` resolves when it is held. */
function heldAt(buckets: RewriteBuckets, method: 'claim' | 'get') {
  let release!: () => void;
  let reached!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  const held = new Promise<void>((resolve) => {
    reached = resolve;
  });
  let first = true;
  const wrapped: RewriteBuckets = Object.create(buckets);
  wrapped[method] = (async (...args: Parameters<RewriteBuckets[typeof method]>) => {
    const hold = first;
    first = false;
    if (hold && method === 'get') {
      reached();
      await gate;
    }
    const result = await (buckets[method] as (...a: typeof args) => Promise<unknown>).apply(buckets, args);
    if (hold && method === 'claim') {
      reached();
      await gate;
    }
    return result;
  }) as never;
  return { buckets: wrapped, release, held };
}

describe('Iceberg first load split into buckets (real stack)', () => {
  it('resumes over several runs with crashes during a bucket, after its record and around the commit, and commits once', async () => {
    await using source = await loaded('irwresume');
    const config = configOf(source, { bucketRows: 300 });
    const runs: { faults?: FaultPoint; maxBuckets?: number; status: string }[] = [
      { faults: 'bucket-staged', maxBuckets: 1, status: 'failed' }, // crash with a bucket's files written, not recorded
      { faults: 'bucket-recorded', maxBuckets: 2, status: 'failed' }, // crash right after a bucket's record
      { maxBuckets: 1, status: 'busy' }, // out of its bucket budget: the next run goes on
      { faults: 'after-staging', status: 'failed' }, // every bucket done, the snapshot staged, not committed
    ];
    for (const run of runs) {
      const result = await merge(source, { config, maxBuckets: run.maxBuckets, faults: run.faults ? crashAt(run.faults) : undefined });
      expect(result.tables.map((t) => t.status)).toEqual([run.status]);
      // Readers see nothing until the one commit.
      expect(await committedVersion(source, 't')).toBeUndefined();
    }
    const state = await source.clients.merges.get(source.config.sourceId, { db: source.db, table: 't' });
    expect(state?.rewrite?.buckets).toBe(5);

    const crashed = await merge(source, { config, faults: crashAt('after-commit') });
    expect(crashed.tables.map((t) => t.status)).toEqual(['failed']);
    const rolled = await merge(source, { config });
    expect(rolled.tables.map((t) => t.status)).toEqual(['up-to-date']);
    await expectOneCompleteSnapshot(source);
    // The roll-forward deleted the rewrite's plan and records with the attempts nobody recorded.
    const objects = await tableObjects(source, 't');
    expect(objects.listed).toEqual(objects.named);

    // The table goes on incrementally from the rewrite's cut.
    await source.sql(`UPDATE t SET amount = 0 WHERE id < 50; DELETE FROM t WHERE id > ${ROWS - 20}`);
    await source.capture();
    expect((await merge(source, { config })).tables.map((t) => [t.status, t.mode])).toEqual([['merged', 'incremental']]);
    expect(await icebergRows(source, 't')).toEqual(await mysqlText(source, 't'));
  });

  it('gives the same table when workers write the buckets in parallel', async () => {
    await using source = await loaded('irwpar');
    // compactFiles 1: the split load's files (one per bucket at least) are over it, and the commit must still not compact them here.
    const config = configOf(source, { workers: 3, bucketRows: 1000, compactFiles: 1 });
    const workers = inProcessWorkers(source, { config });
    const result = await merge(source, { config, invoke: workers.invoke });
    const finished = await workers.settled();
    expect(result.tables.map((t) => [t.status, t.mode, t.rowsWritten])).toEqual([['merged', 'rewrite', (await mysqlText(source, 't')).length]]);
    expect(workers.started()).toBe(2);
    expect(finished.filter((f) => f instanceof Error)).toEqual([]);
    await expectOneCompleteSnapshot(source);
  });

  it('leaves no file outside the committed snapshot when a worker lost its claim, or kept the rewrite it read, past the commit', async () => {
    await using source = await loaded('irwstale');
    const config = configOf(source, { bucketRows: 300 });
    const table = { db: source.db, table: 't' };
    expect((await merge(source, { config, maxBuckets: 1 })).tables.map((t) => t.status)).toEqual(['busy']);
    const rewrite = (await source.clients.merges.get(config.sourceId, table))?.rewrite;
    expect(rewrite?.buckets).toBe(5);
    const worker = (owner: string, buckets: RewriteBuckets, clock?: () => number) =>
      runRewriteWorker({ config, s3: source.clients.s3, merges: source.clients.merges, buckets, log: silentLog, clock }, table, {
        owner,
        budgetMs: 120_000,
      }).catch((error: Error) => error);

    // One claims a bucket and stalls there; another reads the rewrite and its plan and stalls before its first bucket.
    const claimed = heldAt(source.clients.buckets, 'claim');
    const stalled = worker('stalled-claim', claimed.buckets);
    await claimed.held;
    const reading = heldAt(source.clients.buckets, 'get');
    const stale = worker('stale-read', reading.buckets);
    await reading.held;
    // A worker whose clock is past the stalled claim's lease takes that bucket over and writes the rest; the merge commits.
    const later = () => Date.now() + 3 * config.iceberg.leaseMs;
    expect(await worker('takeover', source.clients.buckets, later)).toEqual({ written: 4, open: 0 });
    expect((await merge(source, { config })).tables.map((t) => [t.status, t.mode])).toEqual([['merged', 'rewrite']]);
    const committed = await tableObjects(source, 't');
    expect(committed.listed).toEqual(committed.named);

    // Both wake up after the commit.
    claimed.release();
    reading.release();
    expect(await stalled).toEqual({ written: 0, open: 0 });
    expect(await stale).toEqual({ written: 0, open: 0 });
    // A worker that read the ledger before the commit and everything else after it (its plan is gone by then) stops quietly too.
    const before = await source.clients.merges.get(config.sourceId, table);
    expect(before?.rewrite).toBeUndefined();
    let reads = 0;
    const staleLedger = Object.create(source.clients.merges, {
      get: { value: async (...args: Parameters<typeof source.clients.merges.get>) => (reads++ ? source.clients.merges.get(...args) : { ...before, rewrite }) },
    }) as typeof source.clients.merges;
    const late = await runRewriteWorker({ config, s3: source.clients.s3, merges: staleLedger, buckets: source.clients.buckets, log: silentLog }, table, {
      owner: 'late',
      budgetMs: 120_000,
    }).catch((error: Error) => error);
    expect(late).toEqual({ written: 0, open: 0 });
    const after = await tableObjects(source, 't');
    expect(after.listed).toEqual(committed.named);
    for (let n = 0; n < 5; n++) expect(await source.clients.buckets.get(config.sourceId, table, rewrite?.tag as string, n)).toBeUndefined();
    expect(await icebergRows(source, 't')).toEqual(await mysqlText(source, 't'));
  });

  it('a worker whose claim is taken over while it puts a file deletes that file itself and puts nothing more', async () => {
    await using source = await loaded('irwflight');
    const config = configOf(source, { bucketRows: 300 });
    const table = { db: source.db, table: 't' };
    expect((await merge(source, { config, maxBuckets: 1 })).tables.map((t) => t.status)).toEqual(['busy']);
    const tag = (await source.clients.merges.get(config.sourceId, table))?.rewrite?.tag as string;
    // The stalled worker's first object of bucket 1 is held on its way to S3.
    let release!: () => void;
    let reached!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const held = new Promise<void>((resolve) => {
      reached = resolve;
    });
    const real = source.clients.s3;
    let holding = true;
    const s3: typeof real = Object.create(real);
    s3.send = (async (command: { input?: { Key?: string } }) => {
      if (holding && command.input?.Key?.includes(`${tag}-k0001-`)) {
        holding = false;
        reached();
        await gate;
      }
      return real.send(command as never);
    }) as never;
    const deps = (clock?: () => number) => ({ config, s3, merges: source.clients.merges, buckets: source.clients.buckets, log: silentLog, clock });
    const stalled = runRewriteWorker(deps(), table, { owner: 'stalled-put', budgetMs: 120_000 });
    await held;
    const later = () => Date.now() + 3 * config.iceberg.leaseMs;
    expect(await runRewriteWorker(deps(later), table, { owner: 'takeover', budgetMs: 120_000 })).toEqual({ written: 4, open: 0 });
    release();
    // Its file lands after the takeover; its next renewal fails, and it deletes the file and records nothing.
    expect(await stalled).toEqual({ written: 0, open: 0 });

    // Before the commit already, the rewrite's objects are exactly the recorded buckets' records and files.
    const store = s3ObjectStore(real, config.bucket);
    const location = icebergLocation(config.prefix, table);
    const recorded: string[] = [];
    for (let n = 0; n < 5; n++) {
      const key = (await source.clients.buckets.get(config.sourceId, table, tag, n))?.record as string;
      const record = JSON.parse(new TextDecoder().decode(await store.get(key))) as { staged: { files: { key: string }[] } };
      recorded.push(key, ...record.staged.files.map((f) => f.key));
    }
    const listed: string[] = [];
    for (const folder of ['data', 'metadata']) for await (const key of listKeys(real, config.bucket, `${location}/${folder}/${tag}-k`)) listed.push(key);
    expect(listed.sort()).toEqual(recorded.sort());

    expect((await merge(source, { config })).tables.map((t) => [t.status, t.mode])).toEqual([['merged', 'rewrite']]);
    const committed = await tableObjects(source, 't');
    expect(committed.listed).toEqual(committed.named);
    expect(await icebergRows(source, 't')).toEqual(await mysqlText(source, 't'));
  });
  it('a worker that fails right after claiming a bucket stops renewing it: the claim runs out in one lease, as a crash would leave it', async () => {
    await using source = await loaded('irwfail');
    const config = configOf(source, { bucketRows: 300, leaseMs: 1000 });
    const table = { db: source.db, table: 't' };
    expect((await merge(source, { config, maxBuckets: 1 })).tables.map((t) => t.status)).toEqual(['busy']);
    const tag = (await source.clients.merges.get(config.sourceId, table))?.rewrite?.tag as string;
    // The ledger read after the first claim fails (a throttled or lost request).
    let claimed: number | undefined;
    const buckets: RewriteBuckets = Object.create(source.clients.buckets);
    buckets.claim = async (...args: Parameters<RewriteBuckets['claim']>) => {
      const state = await source.clients.buckets.claim(...args);
      claimed ??= state.n;
      return state;
    };
    const merges: typeof source.clients.merges = Object.create(source.clients.merges);
    merges.get = async (...args: Parameters<typeof merges.get>) => {
      if (claimed !== undefined) throw new Error('ledger read failed');
      return source.clients.merges.get(...args);
    };
    const failed = await runRewriteWorker({ config, s3: source.clients.s3, merges, buckets, log: silentLog }, table, {
      owner: 'failing',
      budgetMs: 120_000,
    }).catch((error: Error) => error);
    expect((failed as Error).message).toBe('ledger read failed');
    const lease = async () => (await source.clients.buckets.get(config.sourceId, table, tag, claimed as number))?.lease;
    const left = await lease();
    expect(left?.owner).toBe('failing');
    // Three renewal periods (a quarter lease each) later, nothing renewed it.
    await new Promise((resolve) => setTimeout(resolve, 800));
    expect(await lease()).toEqual(left);
  });
});

describe('Iceberg reset of an existing table split into buckets (real stack)', () => {
  it('writes a TRUNCATE and reload over runs and workers with a crash, and commits one overwrite on the previous snapshot', async () => {
    await using source = await loaded('irwreset');
    const table = { db: source.db, table: 't' };
    // The first merge: below bucketRows, one whole snapshot.
    const whole = configOf(source, { bucketRows: 100_000 });
    expect((await merge(source, { config: whole })).tables.map((t) => [t.status, t.mode])).toEqual([['merged', 'rewrite']]);
    const before = await committedVersion(source, 't');
    const beforeRows = await icebergRows(source, 't');
    expect(beforeRows).toEqual(await mysqlText(source, 't'));

    // A TRUNCATE and a reload (a `t truncate` reset: the same table, its columns keep their identity), then changes.
    await source.sql(
      `TRUNCATE TABLE t; INSERT INTO t SELECT seq, CONCAT('r', seq), seq / 3 FROM seq_1_to_${ROWS}; UPDATE t SET name = 'again' WHERE id % 7 = 0; DELETE FROM t WHERE id % 9 = 2`,
    );
    await source.capture();

    const config = configOf(source, { bucketRows: 300, workers: 2 });
    // A crash after one bucket's record: the rewrite is recorded on the ledger, nothing committed.
    const crashed = await merge(source, { config, maxBuckets: 2, faults: crashAt('bucket-recorded') });
    expect(crashed.tables.map((t) => t.status)).toEqual(['failed']);
    const rewrite = (await source.clients.merges.get(config.sourceId, table))?.rewrite;
    expect(rewrite?.buckets).toBeGreaterThanOrEqual(4);
    expect((await committedVersion(source, 't'))?.metadataKey).toBe(before?.metadataKey);
    // A run that leaves buckets for later: readers still see the previous table.
    expect((await merge(source, { config, maxBuckets: 1 })).tables.map((t) => [t.status, t.mode])).toEqual([['busy', 'rewrite']]);
    expect(await icebergRows(source, 't')).toEqual(beforeRows);

    // The merge and a worker write the rest in parallel, and the merge commits.
    const workers = inProcessWorkers(source, { config });
    const result = await merge(source, { config, invoke: workers.invoke });
    expect((await workers.settled()).filter((f) => f instanceof Error)).toEqual([]);
    expect(workers.started()).toBe(1);
    expect(result.tables.map((t) => [t.status, t.mode, t.rowsWritten])).toEqual([['merged', 'rewrite', (await mysqlText(source, 't')).length]]);

    const after = await committedVersion(source, 't');
    expect(await icebergRows(source, 't')).toEqual(await mysqlText(source, 't'));
    expect(after?.metadata.snapshots).toHaveLength((before?.metadata.snapshots.length ?? 0) + 1);
    const snapshot = after?.metadata.snapshots.find((s) => s['snapshot-id'] === after.metadata['current-snapshot-id']);
    expect(snapshot?.['parent-snapshot-id']).toBe(before?.metadata['current-snapshot-id']);
    expect(snapshot?.summary.operation).toBe('overwrite');
    expect(Number(snapshot?.summary['total-records'])).toBe((await mysqlText(source, 't')).length);
    // Time travel: the previous snapshot still reads the table as it was.
    const older = { ...(after?.metadata as NonNullable<typeof after>['metadata']), 'current-snapshot-id': before?.metadata['current-snapshot-id'] as number };
    expect(await icebergRowsAt(s3ObjectStore(source.clients.s3, source.config.bucket), older)).toEqual(beforeRows);
    // Columns kept their field ids (a truncated table is the same table).
    expect(after?.metadata.schemas.at(-1)?.fields.map((f) => [f.name, f.id])).toEqual(before?.metadata.schemas.at(-1)?.fields.map((f) => [f.name, f.id]));
    const objects = await tableObjects(source, 't');
    expect(objects.listed).toEqual(objects.named);
    expect((await source.clients.merges.get(config.sourceId, table))?.rewrite).toBeUndefined();

    // The table goes on incrementally from the rewrite's cut.
    await source.sql('UPDATE t SET amount = 0 WHERE id < 50');
    await source.capture();
    expect((await merge(source, { config })).tables.map((t) => [t.status, t.mode])).toEqual([['merged', 'incremental']]);
    expect(await icebergRows(source, 't')).toEqual(await mysqlText(source, 't'));
  });

  it('commits a split reset with no expiry chained on, even when one is due, and leaves none of its own objects behind; the next merge expires', async () => {
    await using source = await loaded('irwresetx');
    // Any snapshot replaced before the commit is due for expiry.
    const expiring = { retentionMs: 1, keepSnapshots: 1 };
    expect((await merge(source, { config: configOf(source, { ...expiring, bucketRows: 100_000 }) })).tables.map((t) => t.status)).toEqual(['merged']);
    await source.sql(`TRUNCATE TABLE t; INSERT INTO t SELECT seq, CONCAT('x', seq), seq FROM seq_1_to_${ROWS}`);
    await source.capture();
    const config = configOf(source, { ...expiring, bucketRows: 300, workers: 1 });
    const split = (await merge(source, { config })).tables[0];
    expect([split?.status, split?.mode, split?.expiredSnapshots]).toEqual(['merged', 'rewrite', 0]);
    expect(await icebergRows(source, 't')).toEqual(await mysqlText(source, 't'));
    const objects = await tableObjects(source, 't');
    expect(objects.listed).toEqual(objects.named);
    await source.sql('UPDATE t SET name = NULL WHERE id < 10');
    await source.capture();
    // The next merge runs a second later by its clock: every snapshot the split replaced is past its 1 ms retention.
    const next = (await merge(source, { config, clock: () => Date.now() + 1_000 })).tables[0];
    expect([next?.status, next?.mode]).toEqual(['merged', 'incremental']);
    expect(next?.expiredSnapshots).toBeGreaterThan(0);
    expect(await icebergRows(source, 't')).toEqual(await mysqlText(source, 't'));
    const later = await tableObjects(source, 't');
    expect(later.listed).toEqual(later.named);
  });

  it('splits the re-snapshot a change the binlog cannot carry asks for (a charset conversion), committed once on the previous snapshot', async () => {
    await using source = await loaded('irwresnap');
    expect((await merge(source, { config: configOf(source, { bucketRows: 100_000 }) })).tables.map((t) => t.status)).toEqual(['merged']);
    const before = await committedVersion(source, 't');
    await source.sql("ALTER TABLE t CONVERT TO CHARACTER SET latin1; UPDATE t SET name = 'after' WHERE id % 11 = 0");
    await source.capture();
    expect((await source.snapshot()).complete).toBe(true);
    await source.capture();
    const config = configOf(source, { bucketRows: 300, workers: 1 });
    const first = (await merge(source, { config, maxBuckets: 1 })).tables[0];
    expect([first?.status, first?.mode], first?.reason).toEqual(['busy', 'rewrite']);
    const done = (await merge(source, { config })).tables[0];
    expect([done?.status, done?.mode], done?.reason).toEqual(['merged', 'rewrite']);
    expect(await icebergRows(source, 't')).toEqual(await mysqlText(source, 't'));
    const after = await committedVersion(source, 't');
    const snapshot = after?.metadata.snapshots.find((s) => s['snapshot-id'] === after.metadata['current-snapshot-id']);
    expect(snapshot?.['parent-snapshot-id']).toBe(before?.metadata['current-snapshot-id']);
    expect(snapshot?.summary.operation).toBe('overwrite');
    const objects = await tableObjects(source, 't');
    expect(objects.listed).toEqual(objects.named);
  });
});
