import type { S3Client } from '@aws-sdk/client-s3';
import type { TableRef } from '../core/table-ref.ts';
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
 * worker stamps the page with it when it knows it: the catalog the source's state points at has
 * the table with the structure the server shows. When it does not (the poller has not read a DDL
 * yet, or never ran), the page carries no `schema` and readers resolve it by seq. Either way the
 * structure must not change while the page is read: `structure` is compared before and after.
 */

export interface PageVersion {
  /** The table's structure on the server now (undefined: gone, or not describable). */
  readonly structure: string | undefined;
  /** The catalog's version when it has exactly that structure. */
  readonly version?: SchemaVersion;
}

export class PageSchema {
  private loaded: { pointer: number | undefined; catalog: Catalog } | undefined;

  constructor(
    private readonly deps: { readonly s3: S3Client; readonly bucket: string; readonly prefix: string; readonly sourceId: string; readonly store: StateStore },
  ) {}

  /** The catalog the source's state points at now (reloaded only when the pointer moved). */
  private async catalog(): Promise<Catalog | undefined> {
    const pointer = (await this.deps.store.get(this.deps.sourceId))?.catalog;
    if (pointer === undefined) return undefined;
    if (this.loaded?.pointer !== pointer) {
      const document = (await getJson(this.deps.s3, this.deps.bucket, catalogKey(this.deps.prefix, this.deps.sourceId, pointer))) as
        | CatalogDocument
        | undefined;
      this.loaded = { pointer, catalog: Catalog.from(document) };
    }
    return this.loaded.catalog;
  }

  /** The structure of `table` on the server now (undefined: gone, or not describable). */
  async structureOf(conn: SqlConnection, table: TableRef): Promise<string | undefined> {
    const now = await readTableVersion(conn, table, undefined);
    return now && structureOf(now);
  }

  /** The structure of `table` now, and the version to stamp its page with if the catalog knows it. Call it before and after the page's SELECT. */
  async versionOf(conn: SqlConnection, table: TableRef): Promise<PageVersion> {
    const structure = await this.structureOf(conn, table);
    const version = (await this.catalog())?.live(table);
    return version && structure !== undefined && structureOf(version) === structure ? { structure, version } : { structure };
  }
}
