import type { TableRef } from '../core/table-ref.ts';
import { AssertionError, LeaseLostError } from '../errors.ts';
import type { Log } from '../log.ts';
import type { BucketState, RewriteBuckets } from '../state/iceberg-buckets.ts';
import type { MergeState, MergeStore } from '../state/iceberg-store.ts';
import type { ChunkState, SnapshotStore } from '../state/snapshot-store.ts';
import type { SourceState, StateStore } from '../state/store.ts';

/*
 * Leases: one writer at a time on an item (a source, a snapshot chunk, an Iceberg table's merge, a
 * rewrite bucket), the same way for all four.
 *
 * Invariant: a writer writes an item only while it holds the item's unexpired lease. Acquiring is
 * one conditional write (the lease is free, expired or already ours) that bumps the item's version,
 * so every write of an earlier holder — fenced on owner, expiry and the version it saw — fails from
 * then on. A renewal extends the expiry without bumping the version (the holder's fence stays valid)
 * and never past the holder's budget, so a killed writer blocks the item for one lease at most.
 * Expiry is read from an injected clock: the store compares it with the `now` the writer sends.
 * Writes the store does not fence (object puts, a catalog's publish) are checked with `check()`,
 * which refuses them once the lease may have run out: the last quarter of a lease is kept clear for
 * writes in flight.
 */

/** One leased item, bound to its key: the store's conditional writes (adapters map a failed condition to LeaseLostError). */
export interface LeaseItem<S> {
  /** Takes the lease if it is free, expired or already `owner`'s; bumps the version. Throws LeaseLostError when a live other holds it. */
  acquire(owner: string, expiresAt: number, now: number): Promise<S>;
  /**
   * Extends `owner`'s live lease to `expiresAt`; `held` is what `acquire` returned (a store may fence on its version). Throws LeaseLostError once it is lost.
   * Absent for an item its ledger's writes renew (a snapshot chunk's page commits): such a lease has no heartbeat, `renew()` nor `check()`.
   */
  renew?(owner: string, expiresAt: number, now: number, held: S): Promise<void>;
  /** Gives the lease up if `owner` still holds it. */
  release(owner: string, held: S): Promise<void>;
}

/** How a writer holds a lease. */
export interface LeaseTerms {
  readonly owner: string;
  readonly clock: () => number;
  /** One lease's length: acquiring or renewing at `now` holds it until `now + leaseMs`… */
  readonly leaseMs: number;
  /** …but never past this long after it was acquired (the holder's budget)… */
  readonly budgetMs?: number;
  /** …nor past this time. */
  readonly deadline?: number;
  /** Renewed every quarter lease while held, a failure logged with `warning`; without it, only `renew()` (or the ledger's writes) extend it. */
  readonly heartbeat?: { readonly log: Log; readonly warning: string; readonly fields?: Record<string, unknown> };
  /** How long to keep trying, once a second, while a live other holds it (0, the default: busy at once). */
  readonly waitMs?: number;
  /** Measures the wait (default: `clock`). */
  readonly waitClock?: () => number;
  /** Called once, when the first attempt finds it busy and the writer is going to wait. */
  readonly onBusy?: (reason: string) => void;
}

/** True while a lease runs (a lease as items record it). */
export function isLive<L extends { readonly expiresAt: number }>(lease: L | undefined, now: number): lease is L {
  return lease !== undefined && lease.expiresAt > now;
}

/**
 * Acquires the item's lease under `terms`, waiting for it as they allow: the held lease, or
 * `{ busy }` saying who holds it until when. Errors other than LeaseLostError propagate.
 */
export async function acquireLease<S>(item: LeaseItem<S>, terms: LeaseTerms): Promise<Lease<S> | { readonly busy: string }> {
  const waited = terms.waitClock ?? terms.clock;
  const startedAt = waited();
  for (let attempt = 0; ; attempt++) {
    const now = terms.clock();
    const notAfter = Math.min(terms.deadline ?? Number.POSITIVE_INFINITY, now + (terms.budgetMs ?? Number.POSITIVE_INFINITY));
    const expiresAt = Math.min(notAfter, now + terms.leaseMs);
    try {
      const held = await item.acquire(terms.owner, expiresAt, now);
      return new Lease(item, terms, held, now, notAfter, expiresAt);
    } catch (error) {
      if (!(error instanceof LeaseLostError)) throw error;
      if (waited() - startedAt >= (terms.waitMs ?? 0)) return { busy: error.message };
      if (attempt === 0) terms.onBusy?.(error.message);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

/** A lease this writer holds: renew it, check it before an unfenced write, release it. */
export class Lease<S> {
  private readonly heartbeat: ReturnType<typeof setInterval> | undefined;

  constructor(
    private readonly item: LeaseItem<S>,
    private readonly terms: LeaseTerms,
    /** The item as acquiring it left it. */
    readonly held: S,
    /** When (the holder's clock) it was acquired. */
    readonly acquiredAt: number,
    /** No renewal extends it past this. */
    readonly notAfter: number,
    /** Until when the store holds it for us, as of the last acquire or renewal that succeeded. */
    private expiresAt: number,
  ) {
    const beat = terms.heartbeat;
    if (!beat) return;
    if (!item.renew) throw new AssertionError('a heartbeat for a lease its ledger renews: the lease module would not see the renewals');
    this.heartbeat = setInterval(() => {
      this.renew().catch((error: Error) => beat.log.warn(beat.warning, { ...beat.fields, error }));
    }, terms.leaseMs / 4);
    this.heartbeat.unref();
  }

  get owner(): string {
    return this.terms.owner;
  }

  /** Until when a renewal at `now` holds it: a lease on from `now`, never past `notAfter`. */
  until(now = this.terms.clock()): number {
    return Math.min(this.notAfter, now + this.terms.leaseMs);
  }

  /** Until when (this holder's clock) writes are allowed: the lease's expiry less a quarter lease, kept clear for writes in flight. */
  get writableUntil(): number {
    return this.expiresAt - this.terms.leaseMs / 4;
  }

  /** Extends the lease now (conditionally: throws LeaseLostError once it is lost). */
  async renew(): Promise<void> {
    if (!this.item.renew) throw new AssertionError("renew() of a lease its ledger renews: its expiry is the ledger's to extend");
    const now = this.terms.clock();
    const expiresAt = this.until(now);
    await this.item.renew(this.terms.owner, expiresAt, now, this.held);
    this.expiresAt = Math.max(this.expiresAt, expiresAt);
  }

  /** Throws LeaseLostError with `message` once the lease may have run out (its renewals failing): an unfenced write must not start. */
  check(message: string): void {
    if (!this.item.renew) throw new AssertionError("check() of a lease its ledger renews: its expiry is only the ledger's to know");
    if (this.terms.clock() >= this.writableUntil) throw new LeaseLostError(message);
  }

  /** Stops renewing it (it runs out by itself). */
  stop(): void {
    clearInterval(this.heartbeat);
  }

  /** Stops renewing it and gives it up. */
  async release(): Promise<void> {
    this.stop();
    await this.item.release(this.terms.owner, this.held);
  }
}

/** The capture run's: the source's state item. */
export function sourceLease(store: StateStore, sourceId: string): LeaseItem<SourceState> {
  return {
    acquire: (owner, expiresAt, now) => store.acquireLease(sourceId, owner, expiresAt, now),
    renew: (owner, expiresAt, now) => store.renewLease(sourceId, owner, expiresAt, now),
    release: (owner) => store.releaseLease(sourceId, owner),
  };
}

/** A snapshot worker's: one chunk (page commits renew it, through chunkLedger's `leaseUntil`). */
export function chunkLease(snapshots: SnapshotStore, job: { readonly sourceId: string; readonly id: string }, table: string, n: number): LeaseItem<ChunkState> {
  return {
    acquire: (owner, expiresAt, now) => snapshots.claim(job.sourceId, job.id, table, n, owner, expiresAt, now),
    // No renewal of its own: every page commit renews it (chunkLedger).
    release: (owner) => snapshots.release(job.sourceId, job.id, table, n, owner),
  };
}

/** The Iceberg merge's: one table's merge ledger. */
export function mergeLease(merges: MergeStore, sourceId: string, table: TableRef): LeaseItem<MergeState> {
  return {
    acquire: (owner, expiresAt, now) => merges.acquire(sourceId, table, owner, expiresAt, now),
    renew: (owner, expiresAt, now) => merges.renew(sourceId, table, owner, expiresAt, now),
    release: (owner) => merges.release(sourceId, table, owner),
  };
}

/** An Iceberg rewrite writer's: one bucket (renewed only while the claim is current: fenced on the version claiming it left). */
export function bucketLease(buckets: RewriteBuckets, sourceId: string, table: TableRef, tag: string, n: number): LeaseItem<BucketState> {
  return {
    acquire: (owner, expiresAt, now) => buckets.claim(sourceId, table, tag, n, owner, expiresAt, now),
    renew: (owner, expiresAt, now, claimed) => buckets.renew(sourceId, table, tag, claimed, owner, expiresAt, now),
    release: (owner) => buckets.release(sourceId, table, tag, n, owner),
  };
}
