import { randomBytes } from 'node:crypto';
import type { Lease } from '../../commit/lease.ts';
import type { Config } from '../../config/config.ts';
import type { TableRef } from '../../core/table-ref.ts';
import type { ObjectStore } from '../../sink/s3/object-store.ts';
import type { BucketState, RewriteBuckets } from '../../state/iceberg-buckets.ts';

/* A rewrite bucket's lease, as its writer holds it (lib/iceberg/merge/rewrite.ts). */

/** What a claim needs of the rewrite's deps. */
interface ClaimDeps {
  readonly config: Config;
  readonly buckets: RewriteBuckets;
  readonly clock?: () => number;
}

/**
 * One writer's claim on a bucket while it writes it: its lease (lib/commit/lease.ts, renewed by its
 * heartbeat) is also renewed, conditionally, before every object it puts (through `store`), so a
 * writer whose claim was lost puts nothing more; it remembers what it put, so the attempt can be discarded.
 */
export class BucketClaim {
  /** This attempt's part of the bucket's file names (the claim's own: nobody else writes under it). */
  // 64 bits: two attempts at one bucket with one name would delete each other's files.
  readonly attempt = randomBytes(8).toString('hex');
  readonly store: ObjectStore;
  private readonly put: string[] = [];

  constructor(
    private readonly deps: ClaimDeps,
    private readonly table: TableRef,
    private readonly tag: string,
    private readonly lease: Lease<BucketState>,
    private readonly inner: ObjectStore,
  ) {
    const guarded = async (key: string, write: () => Promise<void>) => {
      await lease.renew();
      this.put.push(key);
      await write();
    };
    this.store = {
      ...inner,
      put: (key, body, contentType) => guarded(key, () => inner.put(key, body, contentType)),
      putFile: (key, path) => guarded(key, () => inner.putFile(key, path)),
    };
  }

  /** Marks the bucket done with its record, fenced by the claim. */
  record(key: string): Promise<void> {
    const now = (this.deps.clock ?? Date.now)();
    return this.deps.buckets.record(this.deps.config.sourceId, this.table, this.tag, this.lease.held, this.lease.owner, key, now);
  }

  /** Deletes what this attempt put, unless its record was written after all (a record whose answer was lost) or the bucket is gone. */
  async discard(): Promise<number> {
    const bucket = await this.deps.buckets.get(this.deps.config.sourceId, this.table, this.tag, this.lease.held.n);
    if (bucket?.record && this.put.includes(bucket.record)) return 0;
    // No item: the rewrite may have committed with this attempt's record (its answer lost) and been
    // cleared since, so these files may be the table's: an orphan at worst is left, never a hole.
    if (!bucket) return 0;
    if (this.put.length) await this.inner.delete(this.put);
    return this.put.length;
  }

  close(): Promise<void> {
    return this.lease.release();
  }
}
