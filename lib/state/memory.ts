import { LeaseLostError, OffsetConflictError } from '../errors.ts';
import type { Fence, PositionOverwrite, SourceChange, SourceState, StateStore } from './store.ts';

type Item = { -readonly [K in keyof SourceState]: SourceState[K] };

/**
 * A StateStore in memory with the DynamoDB adapter's semantics: every write but `recordError` is
 * fenced on the lease and the version, a commit is refused while one is pending, a lease is free
 * once it expired. For fast unit tests of policy; test/integration/state-store.test.ts runs the
 * same contract against both, so the fake cannot drift from the real store.
 */
export class InMemoryStateStore implements StateStore {
  private readonly items = new Map<string, Item>();

  async get(sourceId: string): Promise<SourceState | undefined> {
    const item = this.items.get(sourceId);
    return item && structuredClone(item);
  }

  async acquireLease(sourceId: string, owner: string, expiresAt: number, now: number): Promise<SourceState> {
    const item = this.items.get(sourceId) ?? { sourceId, version: 0, commitSeq: 0, epoch: 0 };
    if (item.lease && item.lease.expiresAt >= now && item.lease.owner !== owner) {
      throw new LeaseLostError(`source ${sourceId} is leased by ${item.lease.owner} until ${new Date(item.lease.expiresAt).toISOString()}`);
    }
    return this.write(sourceId, { ...item, version: item.version + 1, lease: { owner, expiresAt }, updatedAt: now });
  }

  async commit(fence: Fence, change: SourceChange): Promise<SourceState> {
    const item = this.fenced(fence, { noPending: true });
    const data = change.pending ? { pending: change.pending, commitSeq: item.commitSeq + 1, lastCommitAt: fence.now } : {};
    const catalog = change.catalog === undefined ? {} : { catalog: change.catalog };
    return this.write(fence.sourceId, {
      ...item,
      ...data,
      ...catalog,
      position: change.position,
      positionAt: fence.now,
      history: change.history,
      ...(change.resynced ? { resync: undefined } : {}),
      error: undefined,
      version: item.version + 1,
      updatedAt: fence.now,
    });
  }

  async clearPending(fence: Fence): Promise<SourceState> {
    const item = this.fenced(fence, { noPending: false });
    return this.write(fence.sourceId, { ...item, pending: undefined, version: item.version + 1, updatedAt: fence.now });
  }

  async overwrite(fence: Fence, change: PositionOverwrite): Promise<SourceState> {
    const item = this.fenced(fence, { noPending: true });
    const { reposition, ...moved } = change;
    return this.write(fence.sourceId, {
      ...item,
      history: undefined,
      resync: undefined,
      ...moved,
      ...(reposition ? { lastReposition: reposition } : {}),
      positionAt: fence.now,
      error: undefined,
      version: item.version + 1,
      updatedAt: fence.now,
    });
  }

  async recordError(sourceId: string, error: { code: string; message: string }, now: number): Promise<void> {
    const item = this.items.get(sourceId) ?? { sourceId, version: 0, commitSeq: 0, epoch: 0 };
    this.write(sourceId, { ...item, error: { ...error, at: now }, version: item.version + 1, updatedAt: now });
  }

  async renewLease(sourceId: string, owner: string, expiresAt: number, now: number): Promise<void> {
    const item = this.items.get(sourceId);
    if (!item?.lease || item.lease.owner !== owner || item.lease.expiresAt <= now)
      throw new LeaseLostError(`lease on source ${sourceId} was lost (now held by ${item?.lease?.owner ?? 'nobody'})`);
    this.write(sourceId, { ...item, lease: { owner, expiresAt } });
  }

  async releaseLease(sourceId: string, owner: string): Promise<void> {
    const item = this.items.get(sourceId);
    if (item?.lease?.owner === owner) this.write(sourceId, { ...item, lease: undefined });
  }

  /** The item a fenced write may change; throws what the DynamoDB adapter throws when its condition fails. */
  private fenced(fence: Fence, options: { noPending: boolean }): Item {
    const item = this.items.get(fence.sourceId);
    if (!item?.lease || item.lease.owner !== fence.owner || item.lease.expiresAt <= fence.now) {
      throw new LeaseLostError(`lease on source ${fence.sourceId} was lost (now held by ${item?.lease?.owner ?? 'nobody'}); this run must not commit`);
    }
    if (item.version !== fence.expectVersion || (options.noPending && item.pending)) {
      throw new OffsetConflictError(
        `source ${fence.sourceId} changed under this run (expected version ${fence.expectVersion}, found ${item.version}${item.pending ? ' with a pending commit' : ''})`,
      );
    }
    return item;
  }

  private write(sourceId: string, item: Item): SourceState {
    const clean = Object.fromEntries(Object.entries(item).filter(([, v]) => v !== undefined)) as Item;
    this.items.set(sourceId, clean);
    return structuredClone(clean);
  }
}
