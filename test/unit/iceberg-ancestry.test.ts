import { deflateRawSync } from 'node:zlib';
import { type Table, UpdateTableCommand } from '@aws-sdk/client-glue';
import avro from 'avsc';
import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../lib/errors.ts';
import { adoptedMetadata, CatalogMaintainedError, descent, maintainedSince } from '../../lib/iceberg/catalog/ancestry.ts';
import { type GlueLike, glueCatalog } from '../../lib/iceberg/catalog/glue.ts';
import { catalogCommit } from '../../lib/iceberg/catalog/rest-commit.ts';
import { MANIFEST_FILE_SCHEMA, readAvroFile, writeAvroFile } from '../../lib/iceberg/files/avro.ts';
import { parseJson, stringifyJson } from '../../lib/iceberg/files/json.ts';
import type { Snapshot, TableMetadata } from '../../lib/iceberg/files/metadata.ts';
import { memoryObjectStore } from '../../lib/sink/s3/object-store.ts';

/*
 * The rule SLUICE_ICEBERG_MAINTENANCE=catalog rests on (lib/iceberg/catalog/ancestry.ts): a catalog main
 * that descends from sluice's snapshot through `replace` snapshots only (compactions) or lost
 * snapshots to expiry is adopted; anything that changes rows is refused. Then the same rule through
 * the Glue catalog (a fake client), and the two things a Java writer's files need: 64-bit ids kept
 * exact, deflate manifests read.
 */

const LOCATION = 'p/iceberg/shop/orders';
const BIG = 6744338011938519397n; // a Java snapshot id: beyond 2^53
const fields = [{ id: 1, name: 'id', required: true, type: 'long' }];

function snapshot(id: number | bigint, parent: number | bigint | undefined, sequence: number, operation: Snapshot['summary']['operation']): Snapshot {
  return {
    'snapshot-id': id as number,
    ...(parent !== undefined ? { 'parent-snapshot-id': parent as number } : {}),
    'sequence-number': sequence,
    'timestamp-ms': 1000 * sequence,
    'manifest-list': `s3://bucket/${LOCATION}/metadata/snap-${id}.avro`,
    summary: { operation, 'engine-name': operation === 'replace' ? 'spark' : 'sluice' },
    'schema-id': 0,
  };
}

function metadata(snapshots: Snapshot[], types = fields): TableMetadata {
  const current = snapshots.at(-1);
  return {
    'format-version': 2,
    'table-uuid': '11111111-2222-8333-8444-555555555555',
    location: `s3://bucket/${LOCATION}`,
    'last-sequence-number': current?.['sequence-number'] ?? 0,
    'last-updated-ms': 1,
    'last-column-id': 1,
    'current-schema-id': 0,
    schemas: [{ type: 'struct', 'schema-id': 0, fields: types }],
    'default-spec-id': 0,
    'partition-specs': [{ 'spec-id': 0, fields: [] }],
    'last-partition-id': 999,
    'default-sort-order-id': 0,
    'sort-orders': [{ 'order-id': 0, fields: [] }],
    properties: { 'sluice.key-field-ids': '1' },
    ...(current ? { 'current-snapshot-id': current['snapshot-id'], refs: { main: { 'snapshot-id': current['snapshot-id'], type: 'branch' as const } } } : {}),
    snapshots,
    'snapshot-log': [],
    'metadata-log': [],
  };
}

const s1 = snapshot(1, undefined, 1, 'append');
const s2 = snapshot(2, 1, 2, 'overwrite');
const ours = metadata([s1, s2]);

describe('the ancestry decision (SLUICE_ICEBERG_MAINTENANCE=catalog)', () => {
  it("adopts compactions on sluice's newest snapshot, and a retention that expired some of its snapshots", () => {
    const compacted = metadata([s1, s2, snapshot(BIG, 2, 3, 'replace'), snapshot(77, BIG, 4, 'replace')]);
    expect(descent(compacted, ours, 't')).toEqual({ main: 77, from: 2, replaced: [77, BIG], expired: [] });
    expect(maintainedSince(compacted, 's3://x/cat.json', ours, 't')).toMatchObject({ location: 's3://x/cat.json', descent: { from: 2 } });
    // Spark's expire_snapshots(retain_last => 1) after the compaction: sluice's 1 and 2 are gone, the compaction's parent still names 2.
    const expired = metadata([snapshot(BIG, 2, 3, 'replace')]);
    expect(descent(expired, ours, 't')).toMatchObject({ from: 2, replaced: [BIG], expired: [1, 2] });
    // Retention alone: main is sluice's, snapshots expired.
    expect(maintainedSince(metadata([s2]), '', ours, 't')).toMatchObject({ descent: { from: 2, replaced: [], expired: [1] } });
    // Nothing moved: nothing to adopt.
    expect(maintainedSince(metadata([s1, s2]), '', ours, 't')).toBeUndefined();
    // The catalog behind sluice (its newest commit not published yet): the publish sends it, nothing is adopted.
    expect(maintainedSince(metadata([s1]), '', ours, 't')).toBeUndefined();
  });

  it('refuses whatever changes rows: an append, overwrite or delete by someone else, a main outside sluice’s history, a foreign snapshot it can no longer check, a schema it did not write', () => {
    for (const operation of ['append', 'overwrite', 'delete'] as const) {
      const foreign = metadata([s1, s2, snapshot(BIG, 2, 3, 'replace'), snapshot(9, BIG, 4, operation)]);
      expect(() => descent(foreign, ours, 't')).toThrow(new RegExp(`snapshot 9 is an \`${operation}\``));
    }
    expect(() => descent(metadata([snapshot(50, undefined, 1, 'replace')]), ours, 't')).toThrow(/not in sluice's history/);
    // A compaction whose parent (another writer's compaction) expired before sluice saw it.
    expect(() => descent(metadata([snapshot(60, 59, 5, 'replace')]), ours, 't')).toThrow(/ancestor 59 is gone/);
    const widened = metadata([s1, s2, snapshot(BIG, 2, 3, 'replace')], [...fields, { id: 2, name: 'x', required: false, type: 'string' }]);
    expect(() => descent(widened, ours, 't')).toThrow(/schema sluice did not write/);
    // Compactions on an older snapshot of sluice's than its newest: the catalog lost sluice's newest commit.
    const older = metadata([s1, snapshot(BIG, 1, 3, 'replace')]);
    expect(() => maintainedSince(older, '', ours, 't')).toThrow(expect.objectContaining({ code: ErrorCode.ICEBERG_CATALOG_CONFLICT }));
  });

  it('publishing: nothing to send when the compaction sits on the committed version; a rebase (CatalogMaintainedError) when it sits on the one before', () => {
    const compacted = metadata([s1, snapshot(BIG, 1, 3, 'replace')]);
    expect(catalogCommit(metadata([s1, s2, snapshot(BIG, 2, 3, 'replace')]), ours, 't')).toBeUndefined();
    let thrown: unknown;
    try {
      catalogCommit(compacted, ours, 't', 's3://bucket/cat.json');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(CatalogMaintainedError);
    expect(thrown).toMatchObject({ code: ErrorCode.ICEBERG_CATALOG_CONFLICT, location: 's3://bucket/cat.json', descent: { from: 1, replaced: [BIG] } });
  });

  it("adopted metadata: the catalog's snapshots and refs, sluice's uuid, properties, schema text and metadata log", () => {
    const catalog = {
      ...metadata([s1, s2, snapshot(BIG, 2, 3, 'replace')], [{ id: 1, name: 'id', required: true, type: 'decimal(20, 0)' }]),
      'table-uuid': 'catalog-uuid',
      properties: { 'write.parquet.compression-codec': 'zstd', 'catalog.own': 'x' },
    };
    const mine = metadata([s1, s2], [{ id: 1, name: 'id', required: true, type: 'decimal(20,0)' }]);
    const adopted = adoptedMetadata(catalog, mine, 's3://bucket/p/metadata/00002-a.metadata.json', 5000);
    expect(adopted['table-uuid']).toBe(mine['table-uuid']);
    expect(adopted['current-snapshot-id']).toBe(BIG);
    expect(adopted.snapshots).toHaveLength(3);
    expect(adopted.properties).toEqual({ 'write.parquet.compression-codec': 'zstd', 'catalog.own': 'x', 'sluice.key-field-ids': '1' });
    expect(adopted.schemas[0]?.fields[0]?.type).toBe('decimal(20,0)');
    expect(adopted['metadata-log'].map((e) => e['metadata-file'])).toEqual(['s3://bucket/p/metadata/00002-a.metadata.json']);
  });
});

describe("a Java writer's files", () => {
  it('keeps snapshot ids beyond 2^53 exact through metadata JSON', () => {
    const text = `{"snapshot-id":${BIG},"parent-snapshot-id":12,"path":"s3://b/snap-${BIG}-1.avro","n":-${BIG},"f":1.5e3,"s":"a\\"${BIG}"}`;
    const value = parseJson<Record<string, unknown>>(text);
    expect(value['snapshot-id']).toBe(BIG);
    expect(value['parent-snapshot-id']).toBe(12);
    expect(value.n).toBe(-BIG);
    expect(value.path).toBe(`s3://b/snap-${BIG}-1.avro`);
    expect(stringifyJson(value)).toBe(text.replace('1.5e3', '1500'));
    expect(BigInt(JSON.parse(text)['snapshot-id'])).not.toBe(BIG); // what JSON.parse would have done: rounded
  });

  it('reads deflate manifest lists and writes 64-bit snapshot ids back exactly', () => {
    const record = {
      manifest_path: 's3://b/m.avro',
      manifest_length: 10,
      partition_spec_id: 0,
      content: 0,
      sequence_number: 3,
      min_sequence_number: 1,
      added_snapshot_id: BIG,
      added_files_count: 1,
      existing_files_count: 0,
      deleted_files_count: 0,
      added_rows_count: 5,
      existing_rows_count: 0,
      deleted_rows_count: 0,
      partitions: null,
      key_metadata: null,
    };
    const plain = writeAvroFile(MANIFEST_FILE_SCHEMA, [record], {}, 'list');
    expect(readAvroFile<typeof record>(plain).records[0]?.added_snapshot_id).toBe(BIG);
    // A file as Java writes it: codec deflate, each block raw-deflated.
    const small = { ...record, added_snapshot_id: 42 };
    expect(readAvroFile<typeof record>(javaAvro(MANIFEST_FILE_SCHEMA, [small, small])).records).toEqual([small, small]);
  });
});

/** `records` in an Avro container the way Java's writer makes one: codec deflate, the block raw-deflated. */
function javaAvro(schema: Record<string, unknown>, records: unknown[]): Buffer {
  const header = avro.Type.forSchema({
    type: 'record',
    name: 'org.apache.avro.file.Header',
    fields: [
      { name: 'magic', type: { type: 'fixed', name: 'Magic', size: 4 } },
      { name: 'meta', type: { type: 'map', values: 'bytes' } },
      { name: 'sync', type: { type: 'fixed', name: 'Sync', size: 16 } },
    ],
  });
  const sync = Buffer.alloc(16, 7);
  const type = avro.Type.forSchema(schema as avro.Schema);
  const block = deflateRawSync(Buffer.concat(records.map((r) => type.toBuffer(r))));
  const long = avro.Type.forSchema('long');
  return Buffer.concat([
    header.toBuffer({
      magic: Buffer.from('Obj\x01', 'latin1'),
      meta: { 'avro.schema': Buffer.from(JSON.stringify(schema)), 'avro.codec': Buffer.from('deflate') },
      sync,
    }),
    long.toBuffer(records.length),
    long.toBuffer(block.length),
    block,
    sync,
  ]);
}

describe('the Glue catalog under maintenance (fake Glue client)', () => {
  const store = memoryObjectStore('bucket');
  const key = (name: string) => `${LOCATION}/metadata/${name}`;
  const uri = (name: string) => `s3://bucket/${key(name)}`;
  const ref = { db: 'shop', table: 'orders' };

  function fakeGlue(at: string) {
    const calls: string[] = [];
    let current: Table = { Name: 'shop__orders', VersionId: '3', Parameters: { table_type: 'ICEBERG', metadata_location: at } };
    const glue = {
      async send(command: { constructor: { name: string }; input: Record<string, unknown> }) {
        calls.push(command.constructor.name.replace(/Command$/, ''));
        if (command instanceof UpdateTableCommand) current = { ...(command.input.TableInput as Table), VersionId: '4' };
        return { Table: current };
      },
    };
    return { glue: glue as unknown as GlueLike, calls, table: () => current };
  }

  it("adopts a Glue optimizer's compaction of sluice's newest version, publishes sluice's next over it, and refuses a foreign append", async () => {
    await store.put(key('00002-a.metadata.json'), stringifyJson(ours));
    // The optimizer's compaction (Glue wrote its own metadata file and moved metadata_location).
    const compacted = metadata([s1, s2, snapshot(BIG, 2, 3, 'replace')]);
    await store.put(key('00003-glue.metadata.json'), stringifyJson(compacted));
    const { glue, calls, table } = fakeGlue(uri('00003-glue.metadata.json'));
    const catalog = glueCatalog(glue, 'db', store);
    const maintained = await catalog.maintained?.(ref, { metadataKey: key('00002-a.metadata.json') });
    expect(maintained).toMatchObject({ location: uri('00003-glue.metadata.json'), descent: { from: 2, replaced: [BIG] } });
    // Publishing the committed version again finds it published (the compaction sits on it): nothing written.
    await catalog.publish(ref, { metadataKey: key('00002-a.metadata.json'), previousMetadataKey: key('00001-a.metadata.json') });
    expect(calls).toEqual(['GetTable', 'GetTable']);
    // sluice's next version on the adopted one: Glue is moved to it on the version it read.
    const next = metadata([...compacted.snapshots, snapshot(5, BIG, 4, 'overwrite')]);
    await store.put(key('00004-a.metadata.json'), stringifyJson(next));
    await catalog.publish(ref, { metadataKey: key('00004-a.metadata.json'), previousMetadataKey: key('00003-a.metadata.json') });
    expect(calls.at(-1)).toBe('UpdateTable');
    expect(table().Parameters?.metadata_location).toBe(uri('00004-a.metadata.json'));
    // A pending version built on the snapshot before the compaction: a rebase, not a publish.
    const stale = metadata([s1, s2, snapshot(6, 2, 3, 'overwrite')]);
    await store.put(key('00005-a.metadata.json'), stringifyJson(stale));
    const second = fakeGlue(uri('00003-glue.metadata.json'));
    await expect(
      glueCatalog(second.glue, 'db', store).publish(ref, { metadataKey: key('00005-a.metadata.json'), previousMetadataKey: key('00002-a.metadata.json') }),
    ).rejects.toBeInstanceOf(CatalogMaintainedError);
    expect(second.calls).toEqual(['GetTable']);
    // Someone else's append on sluice's snapshot: refused, Glue untouched.
    await store.put(key('00006-x.metadata.json'), stringifyJson(metadata([s1, s2, snapshot(8123456789012345678n, 2, 3, 'append')])));
    const third = fakeGlue(uri('00006-x.metadata.json'));
    await expect(glueCatalog(third.glue, 'db', store).maintained?.(ref, { metadataKey: key('00002-a.metadata.json') })).rejects.toThrow(/is an `append`/);
    await expect(
      glueCatalog(third.glue, 'db', store).publish(ref, { metadataKey: key('00004-a.metadata.json'), previousMetadataKey: key('00002-a.metadata.json') }),
    ).rejects.toMatchObject({ code: ErrorCode.ICEBERG_CATALOG_CONFLICT });
    expect(third.calls).not.toContain('UpdateTable');
  });
});
