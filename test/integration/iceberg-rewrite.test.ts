import { describe, expect, it } from 'vitest';
import { crashAt, type FaultPoint } from '../../lib/commit/faults.ts';
import type { Config } from '../../lib/config/config.ts';
import { icebergLocation } from '../../lib/iceberg/merge.ts';
import { listKeys } from '../../lib/sink/s3/objects.ts';
import { committedVersion, icebergRows, inProcessWorkers, merge, mysqlText } from '../support/iceberg-merge.ts';
import { type TestSource, testSource } from '../support/source.ts';

/*
 * A first load split into buckets (lib/iceberg/rewrite.ts) against the real stack: written over
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
});
