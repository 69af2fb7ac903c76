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
function pages(stored: number | undefined, v: SchemaVersion, since: number, present = true) {
  const document: CatalogDocument = {
    format: 'sluice-catalog/v1',
    source: 's',
    position: at(since),
    tables: [{ version: v, seq: seq(seqPrefix('binlog.000001', since), 0), position: at(since), origin: 'ddl' }],
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
  const state = { sourceId: 's', position: stored === undefined ? undefined : at(stored), catalog: 7 } as unknown as SourceState;
  const store = { get: async () => state } as unknown as StateStore;
  return { schema: new PageSchema({ s3, bucket: 'b', prefix: 'p/', sourceId: 's', store }), gets };
}

describe('PageSchema.versionAt: the version a snapshot page is stamped with', () => {
  const structure = structureOf(version(3));

  it('stamps the latest version when the stored position has reached L and the version began before it', async () => {
    const { schema } = pages(500, version(3), 100);
    expect((await schema.versionAt(table, structure, at(400)))?.version).toBe(3);
    expect((await schema.versionAt(table, structure, at(500)))?.version).toBe(3);
    expect((await schema.versionAt(table, structure, at(100)))?.version).toBe(3);
  });

  it('stamps nothing while the poller is behind L: a DDL between the two may be unknown (renamed away and back)', async () => {
    const { schema } = pages(300, version(3), 100);
    expect(await schema.versionAt(table, structure, at(400))).toBeUndefined();
  });

  it('stamps nothing when the latest version began after L, or the table is dropped, or the structure differs', async () => {
    expect(await pages(900, version(3), 600).schema.versionAt(table, structure, at(400))).toBeUndefined();
    expect(await pages(900, version(3, { dropped: true }), 100).schema.versionAt(table, structure, at(400))).toBeUndefined();
    const other = structureOf(version(3, { key: null }));
    expect(await pages(900, version(3), 100).schema.versionAt(table, other, at(400))).toBeUndefined();
    expect(await pages(undefined, version(3), 100).schema.versionAt(table, structure, at(400))).toBeUndefined();
  });

  it('looks for a catalog object again when it was not there yet (its commit had not finished renaming)', async () => {
    const missing = pages(500, version(3), 100, false);
    expect(await missing.schema.versionAt(table, structure, at(400))).toBeUndefined();
    expect(await missing.schema.versionAt(table, structure, at(400))).toBeUndefined();
    expect(missing.gets.n).toBe(2);
  });
});
