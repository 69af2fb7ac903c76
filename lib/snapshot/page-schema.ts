import type { S3Client } from '@aws-sdk/client-s3';
import { type BinlogPosition, comparePositions, formatPosition } from '../core/position.ts';
import type { TableRef } from '../core/table-ref.ts';
import { ErrorCode, SluiceError } from '../errors.ts';
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

/** The source's epoch and stored position as read before a watermark. */
export interface StoredEpoch {
  readonly epoch: number;
  readonly position: BinlogPosition | undefined;
}

/** Where a page was read: its watermark, in its history epoch. */
export interface PageAt {
  readonly epoch: number;
  readonly watermark: BinlogPosition;
}

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

  /**
   * The source's history epoch and stored position, read before a page's watermark: the epoch
   * the page's rows are written in, once `place` has checked the watermark against the position.
   */
  async epoch(): Promise<StoredEpoch> {
    const state = await this.deps.store.get(this.deps.sourceId);
    return { epoch: state?.epoch ?? 0, position: state?.position };
  }

  /**
   * A page's watermark in the epoch read before it. The stored position was read from the server
   * before, so in the same binlog history the watermark is never before it; when it is, the
   * server's binlog is another history (RESET MASTER, a failover) that the source has not moved
   * to yet, and rows read now cannot be ordered against that epoch's events (lib/format/seq.ts):
   * SNAPSHOT_HISTORY, the page is not kept. (A page read on a new history whose numbers happen to
   * lie beyond the stored position sorts after every event of the epoch read before it, which it
   * is newer than; the source then moves to a later epoch, and every event read there sorts after
   * the page.)
   */
  place(stored: StoredEpoch, watermark: BinlogPosition): PageAt {
    if (stored.position && comparePositions(watermark, stored.position) < 0)
      throw new SluiceError(
        ErrorCode.SNAPSHOT_HISTORY,
        `the server's binlog is at ${formatPosition(watermark)}, before the source's stored position ${formatPosition(stored.position)}: its binlog history changed (RESET MASTER, a restore, a failover) and the source has not moved to it. No page was kept; the snapshot goes on once the source's position is moved (docs/RUNBOOK.md, POSITION_FOREIGN)`,
        { retriable: true },
      );
    return { epoch: stored.epoch, watermark };
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
  async versionAt(table: TableRef, structure: string | undefined, at: PageAt): Promise<SchemaVersion | undefined> {
    const { epoch, watermark } = at;
    const state = await this.deps.store.get(this.deps.sourceId);
    // After a reset that skipped transactions, the catalog describes the old position until the
    // next run's resync commit: it proves nothing about L.
    if (structure === undefined || !state?.position || state.resync || state.epoch !== epoch || comparePositions(state.position, watermark) < 0)
      return undefined;
    const entry = (await this.catalog(state.catalog))?.entry(table);
    if (!entry || entry.version.dropped || entry.seq > seqAfter(epoch, watermark) || structureOf(entry.version) !== structure) return undefined;
    return entry.version;
  }
}
