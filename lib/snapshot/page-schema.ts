import type { S3Client } from '@aws-sdk/client-s3';
import { type BinlogPosition, comparePositions } from '../core/position.ts';
import type { TableRef } from '../core/table-ref.ts';
import { seqAfter } from '../format/seq.ts';
import { Catalog, type CatalogDocument } from '../schema/catalog.ts';
import { type SchemaVersion, structureOf } from '../schema/version.ts';
import { catalogKey } from '../sink/s3/keys.ts';
import { getJson } from '../sink/s3/objects.ts';
import { readTableVersion } from '../source/mysql/schema-read.ts';
import type { SqlConnection } from '../source/mysql/server.ts';
import type { StateStore } from '../state/store.ts';

/*
 * Which schema version a snapshot page is written under (docs/FORMAT.md, "Snapshot pages and
 * versions"). The poller alone records versions, at the DDL's place in the feed; a page read at
 * watermark L belongs to the version in effect at L, which a reader can always find by seq. The
 * worker stamps the page with it only when it can prove it: the source's stored position has
 * reached L (so its catalog knows every DDL before L), the table's latest version there began at or
 * before L, and it has the structure the server shows. A structure alone proves nothing: a table
 * renamed away and back, or altered and altered back, shows an old version's structure while a
 * newer version is in effect. Otherwise the page carries no `schema` and readers resolve it by
 * seq. Either way the structure must not change while the page is read: it is compared before and
 * after.
 */

export class PageSchema {
  private loaded: { pointer: number | undefined; catalog: Catalog } | undefined;

  constructor(
    private readonly deps: { readonly s3: S3Client; readonly bucket: string; readonly prefix: string; readonly sourceId: string; readonly store: StateStore },
  ) {}

  /** The catalog object `pointer` names (reloaded only when the pointer moved). */
  private async catalog(pointer: number | undefined): Promise<Catalog | undefined> {
    if (pointer === undefined) return undefined;
    if (this.loaded?.pointer !== pointer) {
      const document = (await getJson(this.deps.s3, this.deps.bucket, catalogKey(this.deps.prefix, this.deps.sourceId, pointer))) as
        | CatalogDocument
        | undefined;
      // Not there yet: the commit that points at it has not finished its renames. Look again next time.
      if (!document) return undefined;
      this.loaded = { pointer, catalog: Catalog.from(document) };
    }
    return this.loaded.catalog;
  }

  /** The structure of `table` on the server now (undefined: gone, or not describable). */
  async structureOf(conn: SqlConnection, table: TableRef): Promise<string | undefined> {
    const now = await readTableVersion(conn, table, undefined);
    return now && structureOf(now);
  }

  /**
   * The version to stamp a page of `table` read at `watermark` in `structure` with, when provably
   * the one in effect there (see above); undefined otherwise. Call it after taking the watermark,
   * which is taken after reading the structure (a DDL seen in the structure is then in the binlog
   * before the watermark: MariaDB logs DDL before releasing the table's metadata lock).
   */
  async versionAt(table: TableRef, structure: string | undefined, watermark: BinlogPosition): Promise<SchemaVersion | undefined> {
    const state = await this.deps.store.get(this.deps.sourceId);
    if (structure === undefined || !state?.position || comparePositions(state.position, watermark) < 0) return undefined;
    const entry = (await this.catalog(state.catalog))?.entry(table);
    if (!entry || entry.version.dropped || entry.seq > seqAfter(watermark) || structureOf(entry.version) !== structure) return undefined;
    return entry.version;
  }
}
