import type { S3Client } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import type { BinlogPosition } from '../../lib/core/position.ts';
import { seq, seqPrefix } from '../../lib/format/seq.ts';
import type { CatalogDocument } from '../../lib/schema/catalog.ts';
import { type SchemaVersion, structureOf } from '../../lib/schema/version.ts';
import { PageSchema } from '../../lib/snapshot/page-schema.ts';
import type { SourceState, StateStore } from '../../lib/state/store.ts';

/*
 * Which version a snapshot page is stamped with (docs/FORMAT.md, "Snapshot pages and versions"):
 * only one provably in effect at the page's watermark L, never one that merely has its structure.
 */

const table = { db: 'shop', table: 'items' };
const version = (n: number, extra?: Partial<SchemaVersion>): SchemaVersion => ({
  ...table,
  version: n,
  columns: [{ id: 1, name: 'id', nullable: false, kind: 'int', type: 'int' } as SchemaVersion['columns'][number]],
  key: ['id'],
  lastColumnId: 1,
  changes: [],
  indexes: [],
  ...extra,
});
const at = (pos: number): BinlogPosition => ({ file: 'binlog.000001', pos });

/** A PageSchema over a stored position, the catalog it points at (latest version `v`, begun at `since`), and a getter count. */
function pages(stored: number | undefined, v: SchemaVersion, since: number, present = true, resync?: SourceState['resync']) {
  const document: CatalogDocument = {
    format: 'sluice-catalog/v1',
    source: 's',
    position: at(since),
    tables: [{ version: v, seq: seq(seqPrefix(0, 'binlog.000001', since), 0), position: at(since), origin: 'ddl' }],
    databases: [],
    sequences: [],
  };
  const gets = { n: 0 };
  const s3 = {
    async send() {
      gets.n++;
      if (!present) throw Object.assign(new Error('no such key'), { name: 'NoSuchKey' });
      return { Body: { transformToString: async () => JSON.stringify(document) } };
    },
  } as unknown as S3Client;
  const state = { sourceId: 's', epoch: 0, resync, position: stored === undefined ? undefined : at(stored), catalog: 7 } as unknown as SourceState;
  const store = { get: async () => state } as unknown as StateStore;
  return { schema: new PageSchema({ s3, bucket: 'b', prefix: 'p/', sourceId: 's', store }), gets };
}

describe('PageSchema.versionAt: the version a snapshot page is stamped with', () => {
  const structure = structureOf(version(3));

  it('stamps the latest version when the stored position has reached L and the version began before it', async () => {
    const { schema } = pages(500, version(3), 100);
    expect((await schema.versionAt(table, structure, { epoch: 0, watermark: at(400) }))?.version).toBe(3);
    expect((await schema.versionAt(table, structure, { epoch: 0, watermark: at(500) }))?.version).toBe(3);
    expect((await schema.versionAt(table, structure, { epoch: 0, watermark: at(100) }))?.version).toBe(3);
  });

  it('stamps nothing while the poller is behind L: a DDL between the two may be unknown (renamed away and back)', async () => {
    const { schema } = pages(300, version(3), 100);
    expect(await schema.versionAt(table, structure, { epoch: 0, watermark: at(400) })).toBeUndefined();
  });

  it('stamps nothing when the latest version began after L, or the table is dropped, or the structure differs', async () => {
    expect(await pages(900, version(3), 600).schema.versionAt(table, structure, { epoch: 0, watermark: at(400) })).toBeUndefined();
    expect(await pages(900, version(3, { dropped: true }), 100).schema.versionAt(table, structure, { epoch: 0, watermark: at(400) })).toBeUndefined();
    const other = structureOf(version(3, { key: null }));
    expect(await pages(900, version(3), 100).schema.versionAt(table, other, { epoch: 0, watermark: at(400) })).toBeUndefined();
    expect(await pages(undefined, version(3), 100).schema.versionAt(table, structure, { epoch: 0, watermark: at(400) })).toBeUndefined();
  });

  it('looks for a catalog object again when it was not there yet (its commit had not finished renaming)', async () => {
    const missing = pages(500, version(3), 100, false);
    expect(await missing.schema.versionAt(table, structure, { epoch: 0, watermark: at(400) })).toBeUndefined();
    expect(await missing.schema.versionAt(table, structure, { epoch: 0, watermark: at(400) })).toBeUndefined();
    expect(missing.gets.n).toBe(2);
  });
});

describe('PageSchema: the history epoch of a page', () => {
  const structure = structureOf(version(3));

  it('places a watermark at or after the stored position in the stored epoch', async () => {
    const { schema } = pages(500, version(3), 100);
    const stored = await schema.epoch();
    expect(schema.place(stored, at(500))).toEqual({ epoch: 0, watermark: at(500) });
    expect(schema.place(stored, { file: 'binlog.000002', pos: 4 })).toEqual({ epoch: 0, watermark: { file: 'binlog.000002', pos: 4 } });
  });

  it('refuses a watermark before the stored position: the server is on another binlog history', async () => {
    const { schema } = pages(500, version(3), 100);
    const stored = await schema.epoch();
    expect(() => schema.place(stored, at(499))).toThrow(expect.objectContaining({ code: 'SNAPSHOT_HISTORY', retriable: true }));
  });

  it('stamps no version on a page of another epoch than the stored one (the position was moved meanwhile)', async () => {
    const { schema } = pages(500, version(3), 100);
    expect((await schema.versionAt(table, structure, { epoch: 0, watermark: at(400) }))?.version).toBe(3);
    expect(await schema.versionAt(table, structure, { epoch: 1, watermark: at(400) })).toBeUndefined();
  });

  it('stamps no version while a reset that skipped transactions waits for its resync: the catalog describes the old position', async () => {
    const { schema } = pages(500, version(3), 100, true, { reason: 'sluice state reset --to latest', at: 1 });
    expect(await schema.versionAt(table, structure, { epoch: 0, watermark: at(500) })).toBeUndefined();
  });
});
