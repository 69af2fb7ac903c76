import { AlreadyExistsException, ConcurrentModificationException, EntityNotFoundException, type Table } from '@aws-sdk/client-glue';
import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../lib/errors.ts';
import { type GlueLike, glueCatalog, glueTableName } from '../../lib/iceberg/catalog/glue.ts';
import { memoryObjectStore } from '../../lib/sink/s3/object-store.ts';

/*
 * The Glue catalog against a fake Glue (real Glue cannot be reached here): the requests it sends —
 * create, an update optimistic on VersionId, nothing on a redo — and how it treats conflicts.
 */

const LOCATION = 'p/iceberg/shop/orders';
const v = (n: number) => `${LOCATION}/metadata/v${n}.metadata.json`;

function storeWithMetadata() {
  const store = memoryObjectStore('bucket');
  const metadata = {
    location: `s3://bucket/${LOCATION}`,
    'current-schema-id': 1,
    schemas: [
      { 'schema-id': 0, fields: [] },
      {
        'schema-id': 1,
        fields: [
          { id: 1, name: 'id', required: true, type: 'decimal(20,0)' },
          { id: 2, name: 'placed', required: false, type: 'timestamptz' },
          { id: 3, name: 'n', required: false, type: 'long' },
        ],
      },
    ],
  };
  for (const n of [1, 2, 3]) void store.put(v(n), JSON.stringify(metadata));
  return store;
}

/** A Glue that records requests and keeps one table; `failUpdates` makes the next updates fail as a concurrent writer would. */
function fakeGlue(table?: Table, failUpdates = 0, optimizers = new Set<string>()) {
  const calls: { command: string; input: Record<string, unknown> }[] = [];
  let current = table;
  let failures = failUpdates;
  const glue = {
    async send(command: { constructor: { name: string }; input: Record<string, unknown> }) {
      const name = command.constructor.name.replace(/Command$/, '');
      calls.push({ command: name, input: structuredClone(command.input) });
      if (name === 'GetTable') {
        if (!current) throw new EntityNotFoundException({ message: 'no table', $metadata: {} });
        return { Table: current };
      }
      if (name === 'CreateTableOptimizer') {
        const type = String(command.input.Type);
        if (optimizers.has(type)) throw new AlreadyExistsException({ message: 'exists', $metadata: {} });
        optimizers.add(type);
        return {};
      }
      const input = command.input.TableInput as Table;
      if (name === 'UpdateTable') {
        if (failures-- > 0) {
          current = { ...(current as Table), VersionId: String(Number(current?.VersionId) + 1) };
          throw new ConcurrentModificationException({ message: 'changed', $metadata: {} });
        }
        if (command.input.VersionId !== current?.VersionId) throw new ConcurrentModificationException({ message: 'stale', $metadata: {} });
      }
      current = { ...input, VersionId: String(Number(current?.VersionId ?? 0) + 1) };
      return {};
    },
  };
  return { glue: glue as unknown as GlueLike, calls, table: () => current, optimizers };
}

const ref = { db: 'shop', table: 'orders' };

describe('Glue catalog (fake Glue client)', () => {
  it('creates the table as an Iceberg table pointing at the metadata file, with the schema as Hive columns', async () => {
    const store = storeWithMetadata();
    const { glue, calls } = fakeGlue();
    await glueCatalog(glue, 'sluice_prod', store).publish(ref, { metadataKey: v(1) });
    expect(calls.map((c) => c.command)).toEqual(['GetTable', 'CreateTable']);
    expect(calls[1]?.input).toEqual({
      DatabaseName: 'sluice_prod',
      TableInput: {
        Name: 'shop__orders',
        TableType: 'EXTERNAL_TABLE',
        Description: 'sluice: shop.orders',
        Parameters: { table_type: 'ICEBERG', metadata_location: `s3://bucket/${v(1)}` },
        StorageDescriptor: {
          Location: `s3://bucket/${LOCATION}`,
          Columns: [
            { Name: 'id', Type: 'decimal(20,0)' },
            { Name: 'placed', Type: 'timestamp' },
            { Name: 'n', Type: 'bigint' },
          ],
        },
      },
    });
  });

  it('updates it only from the version the commit replaced, on the Glue table version it read, keeping the previous location', async () => {
    const store = storeWithMetadata();
    const existing: Table = {
      Name: 'shop__orders',
      VersionId: '7',
      Parameters: { table_type: 'ICEBERG', metadata_location: `s3://bucket/${v(1)}`, extra: 'kept' },
    };
    const { glue, calls, table } = fakeGlue(existing);
    await glueCatalog(glue, 'db', store).publish(ref, { metadataKey: v(2), previousMetadataKey: v(1) });
    expect(calls.map((c) => c.command)).toEqual(['GetTable', 'UpdateTable']);
    expect(calls[1]?.input).toMatchObject({
      DatabaseName: 'db',
      VersionId: '7',
      TableInput: {
        Name: 'shop__orders',
        Parameters: { table_type: 'ICEBERG', metadata_location: `s3://bucket/${v(2)}`, previous_metadata_location: `s3://bucket/${v(1)}`, extra: 'kept' },
      },
    });
    // A redo (the roll-forward publishing again) finds it done and writes nothing.
    await glueCatalog(glue, 'db', store).publish(ref, { metadataKey: v(2), previousMetadataKey: v(1) });
    expect(calls.map((c) => c.command)).toEqual(['GetTable', 'UpdateTable', 'GetTable']);
    expect(table()?.Parameters?.metadata_location).toBe(`s3://bucket/${v(2)}`);
  });

  it('reads again and retries when Glue reports a concurrent change of the table version', async () => {
    const store = storeWithMetadata();
    const { glue, calls, table } = fakeGlue({ Name: 'shop__orders', VersionId: '1', Parameters: { metadata_location: `s3://bucket/${v(2)}` } }, 1);
    await glueCatalog(glue, 'db', store).publish(ref, { metadataKey: v(3), previousMetadataKey: v(2) });
    expect(calls.map((c) => c.command)).toEqual(['GetTable', 'UpdateTable', 'GetTable', 'UpdateTable']);
    expect(calls[3]?.input.VersionId).toBe('2');
    expect(table()?.Parameters?.metadata_location).toBe(`s3://bucket/${v(3)}`);
  });

  it('refuses to move a table another writer pointed elsewhere', async () => {
    const store = storeWithMetadata();
    const { glue, calls } = fakeGlue({ Name: 'shop__orders', VersionId: '4', Parameters: { metadata_location: 's3://bucket/elsewhere/v9.metadata.json' } });
    await expect(glueCatalog(glue, 'db', store).publish(ref, { metadataKey: v(3), previousMetadataKey: v(2) })).rejects.toMatchObject({
      code: ErrorCode.ICEBERG_CATALOG_CONFLICT,
    });
    expect(calls.map((c) => c.command)).toEqual(['GetTable']);
  });

  it("creates Glue's three table optimizers for a table it registers, once per process, with sluice's retention; one that exists is left as it is", async () => {
    const store = storeWithMetadata();
    const { glue, calls, optimizers } = fakeGlue();
    const settings = { roleArn: 'arn:aws:iam::123456789012:role/sluice-prod-optimizers', retentionHours: 36, keepSnapshots: 3 };
    const catalog = glueCatalog(glue, 'sluice_prod', store, settings);
    await catalog.publish(ref, { metadataKey: v(1) });
    const created = calls.filter((c) => c.command === 'CreateTableOptimizer').map((c) => c.input);
    const common = { CatalogId: '123456789012', DatabaseName: 'sluice_prod', TableName: 'shop__orders' };
    const roleArn = settings.roleArn;
    expect(created).toEqual([
      { ...common, Type: 'compaction', TableOptimizerConfiguration: { roleArn, enabled: true } },
      {
        ...common,
        Type: 'retention',
        TableOptimizerConfiguration: {
          roleArn,
          enabled: true,
          retentionConfiguration: { icebergConfiguration: { snapshotRetentionPeriodInDays: 2, numberOfSnapshotsToRetain: 3, cleanExpiredFiles: true } },
        },
      },
      {
        ...common,
        Type: 'orphan_file_deletion',
        TableOptimizerConfiguration: {
          roleArn,
          enabled: true,
          orphanFileDeletionConfiguration: { icebergConfiguration: { orphanFileRetentionPeriodInDays: 3 } },
        },
      },
    ]);
    expect(calls.map((c) => c.command).slice(0, 2), 'after the table exists').toEqual(['GetTable', 'CreateTable']);
    // The next commit of the same process sends no optimizer request.
    await catalog.publish(ref, { metadataKey: v(2), previousMetadataKey: v(1) });
    expect(calls.filter((c) => c.command === 'CreateTableOptimizer')).toHaveLength(3);
    // A new process (a cold start) asks again; Glue's "already exists" is the answer it expects.
    const again = fakeGlue(undefined, 0, new Set(['compaction']));
    await glueCatalog(again.glue, 'sluice_prod', store, settings).publish(ref, { metadataKey: v(1) });
    expect(again.calls.filter((c) => c.command === 'CreateTableOptimizer').map((c) => c.input.Type)).toEqual([
      'compaction',
      'retention',
      'orphan_file_deletion',
    ]);
    expect([...again.optimizers].sort()).toEqual(['compaction', 'orphan_file_deletion', 'retention']);
    expect([...optimizers].sort()).toEqual(['compaction', 'orphan_file_deletion', 'retention']);
  });

  it('sends no optimizer request without an optimizer role', async () => {
    const { glue, calls } = fakeGlue();
    await glueCatalog(glue, 'sluice_prod', storeWithMetadata()).publish(ref, { metadataKey: v(1) });
    expect(calls.map((c) => c.command)).toEqual(['GetTable', 'CreateTable']);
  });

  it('names tables <db>__<table> in lower case; names that need changing get a hash of the exact names', () => {
    expect(glueTableName({ db: 'shop', table: 'orders' })).toBe('shop__orders');
    const a = glueTableName({ db: 'Shop', table: 'a-b' });
    const b = glueTableName({ db: 'shop', table: 'a_b' });
    expect(a).toMatch(/^shop__a_b_[0-9a-f]{8}$/);
    expect(b).toBe('shop__a_b');
    expect(glueTableName({ db: 'shop', table: 'A-b' })).not.toBe(a);
    // Where the separator is ambiguous, every side is hashed: no two tables share a name.
    const names = [
      { db: 'a__b', table: 'c' },
      { db: 'a', table: 'b__c' },
      { db: 'x_', table: 'y' },
      { db: 'x', table: '_y' },
    ].map(glueTableName);
    expect(new Set(names).size).toBe(4);
    for (const name of names) expect(name).toMatch(/_[0-9a-f]{8}$/);
  });
});
