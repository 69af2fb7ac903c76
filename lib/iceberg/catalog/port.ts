import type { TableRef } from '../../core/table-ref.ts';
import type { ObjectStore } from '../../sink/s3/object-store.ts';
import { publish, versionOf } from '../table/table.ts';
import type { Maintained } from './ancestry.ts';

/* The catalog port: where readers find a table's current metadata, and the file catalog every table has. */

/**
 * Where readers find a table's current metadata file. The file catalog (`version-hint.text` next to
 * the metadata) is always written; the Glue Data Catalog is added when configured. Publishing is
 * idempotent: the merge's roll-forward may publish the same version again.
 */
export interface IcebergCatalog {
  publish(table: TableRef, version: { readonly metadataKey: string; readonly previousMetadataKey?: string }): Promise<void>;
  /**
   * A catalog that assigns table locations (SLUICE_ICEBERG_REST_LOCATION=catalog): makes sure it has
   * the table and returns the absolute `s3://` location it placed it at, where the table's files
   * go. Asked only before a table's first merge stages anything; absent when sluice picks the location.
   */
  locate?(table: TableRef): Promise<string>;
  /**
   * The catalog's table when others' maintenance alone moved it past sluice's committed version
   * (`replace` snapshots on sluice's newest, expired snapshots; lib/iceberg/catalog/ancestry.ts); undefined
   * when it has sluice's version or is behind it (the publish sends the rest). Throws
   * ICEBERG_CATALOG_CONFLICT when another writer changed rows. Absent: a catalog only sluice writes.
   */
  maintained?(table: TableRef, version: { readonly metadataKey: string }): Promise<Maintained | undefined>;
}

/** `version-hint.text` for file-catalog readers (DuckDB, icebird, Spark's Hadoop catalog). */
export function fileCatalog(store: ObjectStore): IcebergCatalog {
  return {
    async publish(_table, version) {
      await publish(store, { metadataKey: version.metadataKey, version: versionOf(version.metadataKey) });
    },
  };
}

/** Publishes to every catalog in order (the file catalog first); the one that others may maintain answers `maintained`. */
export function catalogs(...all: IcebergCatalog[]): IcebergCatalog {
  const locating = all.find((c) => c.locate);
  const maintaining = all.find((c) => c.maintained);
  return {
    async publish(table, version) {
      for (const catalog of all) await catalog.publish(table, version);
    },
    ...(locating?.locate ? { locate: locating.locate.bind(locating) } : {}),
    ...(maintaining?.maintained ? { maintained: maintaining.maintained.bind(maintaining) } : {}),
  };
}
