import { BucketAlreadyOwnedByYou, CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { crashAt, InjectedFault } from '../../lib/commit/faults.ts';
import { catalogs, fileCatalog, type IcebergCatalog } from '../../lib/iceberg/catalog/port.ts';
import { runIcebergMerge } from '../../lib/iceberg/merge/merge.ts';
import { silentLog } from '../../lib/log.ts';
import { s3ObjectStore } from '../../lib/sink/s3/object-store.ts';
import { testSource } from '../support/source.ts';

/*
 * A table bucket (S3 Tables) serves only GetObject, HeadObject, PutObject and the multipart calls
 * (AWS: "Supported Amazon S3 object-level API operations for S3 Tables"): no ListObjectsV2, no
 * deletes. The emulator's second bucket refuses everything else here, and merges into a table a
 * catalog placed there — first load, changes, a crashed attempt and its redo — must never need it.
 */
describe('a table placed in a table bucket', () => {
  it('is merged with only the object calls a table bucket serves: no listing, no delete there, across a crash', async () => {
    await using source = await testSource('tablebucket', { SLUICE_STARTUP: 'initial' });
    const placed = `${source.config.bucket}-tables`;
    const admin = new S3Client({ forcePathStyle: true });
    try {
      await admin.send(new CreateBucketCommand({ Bucket: placed }));
    } catch (error) {
      if (!(error instanceof BucketAlreadyOwnedByYou) && (error as { name?: string }).name !== 'BucketAlreadyExists') throw error;
    } finally {
      admin.destroy();
    }
    const refused: string[] = [];
    const served: string[] = [];
    source.clients.s3.middlewareStack.add(
      (next, context) => async (args) => {
        const command = context.commandName ?? '?';
        if ((args.input as { Bucket?: string }).Bucket === placed) {
          if (!/^(Get|Head|Put)ObjectCommand$|MultipartUpload|UploadPart/.test(command)) {
            refused.push(command);
            throw Object.assign(new Error(`${command} is not supported on a table bucket`), { name: 'MethodNotAllowed' });
          }
          served.push(command);
        }
        return next(args);
      },
      { step: 'initialize', name: 'tableBucketApi' },
    );
    const store = s3ObjectStore(source.clients.s3, source.config.bucket);
    const placing: IcebergCatalog = { publish: async () => {}, locate: async (t) => `s3://${placed}/warehouse/${t.db}/${t.table}` };
    const merge = (crash?: 'after-staging') =>
      runIcebergMerge(
        {
          config: source.config,
          s3: source.clients.s3,
          store: source.clients.store,
          snapshots: source.clients.snapshots,
          merges: source.clients.merges,
          buckets: source.clients.buckets,
          catalog: catalogs(fileCatalog(store), placing),
          log: silentLog,
          ...(crash ? { faults: crashAt(crash) } : {}),
        },
        { tables: [{ db: source.db, table: 't' }], owner: 'table-bucket' },
      );

    await source.sql("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20)); INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')");
    await source.capture();
    expect((await source.snapshot()).complete).toBe(true);
    // The poller passes the pages' watermarks (other tests write to the shared server meanwhile).
    await source.capture();
    const first = await merge();
    expect(first.tables[0]?.status, first.tables[0]?.reason).toBe('merged');
    await source.sql("UPDATE t SET name = 'A' WHERE id = 1; DELETE FROM t WHERE id = 2; INSERT INTO t VALUES (4, 'd')");
    await source.capture();
    const crashed = await merge('after-staging');
    expect(crashed.tables[0]?.error).toBeInstanceOf(InjectedFault);
    const redo = await merge();
    expect(redo.tables[0]?.status, redo.tables[0]?.reason).toBe('merged');
    expect(refused, 'calls a table bucket does not serve').toEqual([]);
    expect(served.filter((c) => c === 'PutObjectCommand').length, 'the files went to the table bucket').toBeGreaterThan(4);
  }, 300_000);
});
