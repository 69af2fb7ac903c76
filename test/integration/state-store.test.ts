import { randomBytes } from 'node:crypto';
import { type DynamoDBClient, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { createClients, initResources } from '../../lib/aws.ts';
import { loadConfig } from '../../lib/config/config.ts';
import { LeaseLostError, OffsetConflictError } from '../../lib/errors.ts';
import { DynamoDbSnapshotStore } from '../../lib/state/dynamodb-snapshots.ts';
import { InMemoryStateStore } from '../../lib/state/memory.ts';
import type { StateStore } from '../../lib/state/store.ts';

/** The StateStore contract, run against DynamoDB Local and the in-memory fake the unit tests use. */
const stores: [string, () => Promise<StateStore>][] = [
  [
    'DynamoDB',
    async () => {
      const config = loadConfig({ ...process.env, SLUICE_SOURCE_ID: 'contract' });
      const clients = createClients(config);
      await initResources(config, clients);
      return clients.store;
    },
  ],
  ['in memory', async () => new InMemoryStateStore()],
];

const position = (pos: number) => ({ file: 'binlog.000001', pos });
const pending = { copies: [{ from: '_staging/a', to: 'tables/a' }] };

describe.each(stores)('StateStore contract: %s', (_name, create) => {
  let store: StateStore;
  beforeAll(async () => {
    store = await create();
  });
  const source = () => `contract-${randomBytes(4).toString('hex')}`;

  it('a live lease excludes other owners; the holder may take it again; it is free once expired or released', async () => {
    const id = source();
    const mine = await store.acquireLease(id, 'a', 2_000, 1_000);
    expect(mine).toMatchObject({ sourceId: id, commitSeq: 0, lease: { owner: 'a', expiresAt: 2_000 } });
    await expect(store.acquireLease(id, 'b', 3_000, 1_500)).rejects.toBeInstanceOf(LeaseLostError);
    await expect(store.acquireLease(id, 'b', 3_000, 2_000)).rejects.toBeInstanceOf(LeaseLostError); // not yet expired at its last ms
    expect((await store.acquireLease(id, 'a', 2_500, 1_600)).version).toBeGreaterThan(mine.version);
    expect((await store.acquireLease(id, 'b', 4_000, 2_501)).lease?.owner).toBe('b');
    await store.releaseLease(id, 'a'); // not the holder: no effect
    expect((await store.get(id))?.lease?.owner).toBe('b');
    await store.releaseLease(id, 'b');
    expect((await store.get(id))?.lease).toBeUndefined();
    expect((await store.acquireLease(id, 'c', 5_000, 2_600)).lease?.owner).toBe('c');
  });

  it('the holder renews its lease without bumping the version, so its fence stays valid; others and late renewals are refused', async () => {
    const id = source();
    const mine = await store.acquireLease(id, 'a', 2_000, 1_000);
    await store.renewLease(id, 'a', 5_000, 1_900);
    expect(await store.get(id)).toMatchObject({ version: mine.version, lease: { owner: 'a', expiresAt: 5_000 } });
    await expect(store.acquireLease(id, 'b', 6_000, 3_000)).rejects.toBeInstanceOf(LeaseLostError); // the renewed lease holds past the first one
    const moved = await store.commit({ sourceId: id, owner: 'a', expectVersion: mine.version, now: 4_000 }, { position: position(4) });
    expect(moved.positionAt).toBe(4_000); // a heartbeat moves the position's time as a data commit does
    await expect(store.renewLease(id, 'b', 9_000, 4_000)).rejects.toBeInstanceOf(LeaseLostError);
    await expect(store.renewLease(id, 'a', 9_000, 5_000)).rejects.toBeInstanceOf(LeaseLostError); // it ran out: taken again, not renewed
    expect((await store.acquireLease(id, 'b', 9_000, 5_001)).lease?.owner).toBe('b');
  });

  it('a data commit moves the position, counts one commit and blocks the next until its renames are cleared', async () => {
    const id = source();
    let state = await store.acquireLease(id, 'a', 10_000, 1_000);
    const fence = (now: number) => ({ sourceId: id, owner: 'a', expectVersion: state.version, now });
    state = await store.commit(fence(1_100), { position: position(100) });
    expect(state).toMatchObject({ position: position(100), commitSeq: 0 });
    expect(state.lastCommitAt).toBeUndefined(); // a heartbeat is not a data commit
    state = await store.commit(fence(1_200), { position: position(200), pending });
    expect(state).toMatchObject({ position: position(200), commitSeq: 1, pending, lastCommitAt: 1_200 });
    await expect(store.commit(fence(1_300), { position: position(300), pending })).rejects.toBeInstanceOf(OffsetConflictError);
    await expect(store.overwrite(fence(1_300), { position: position(1), commitSeq: 9, epoch: 1 })).rejects.toBeInstanceOf(OffsetConflictError);
    state = await store.clearPending(fence(1_300));
    expect(state.pending).toBeUndefined();
    state = await store.commit(fence(1_400), { position: position(300), pending });
    expect(state.commitSeq).toBe(2);
    expect(await store.get(id)).toMatchObject({ position: position(300), commitSeq: 2, pending });
  });

  it('refuses a write from a stale version, another owner, or a lease that has run out', async () => {
    const id = source();
    const first = await store.acquireLease(id, 'a', 2_000, 1_000);
    const moved = await store.commit({ sourceId: id, owner: 'a', expectVersion: first.version, now: 1_100 }, { position: position(1) });
    await expect(store.commit({ sourceId: id, owner: 'a', expectVersion: first.version, now: 1_200 }, { position: position(2) })).rejects.toBeInstanceOf(
      OffsetConflictError,
    );
    await expect(store.commit({ sourceId: id, owner: 'b', expectVersion: moved.version, now: 1_200 }, { position: position(2) })).rejects.toBeInstanceOf(
      LeaseLostError,
    );
    await expect(store.commit({ sourceId: id, owner: 'a', expectVersion: moved.version, now: 2_000 }, { position: position(2) })).rejects.toBeInstanceOf(
      LeaseLostError,
    );
    await expect(store.clearPending({ sourceId: source(), owner: 'a', expectVersion: 0, now: 1 })).rejects.toBeInstanceOf(LeaseLostError);
  });

  it('records an error until the next commit, and overwrites position and commit sequence for import and reset', async () => {
    const id = source();
    await store.recordError(id, { code: 'POSITION_LOST', message: 'gone' }, 500);
    expect((await store.get(id))?.error).toEqual({ code: 'POSITION_LOST', message: 'gone', at: 500 });
    let state = await store.acquireLease(id, 'a', 10_000, 1_000);
    state = await store.overwrite({ sourceId: id, owner: 'a', expectVersion: state.version, now: 1_100 }, { position: position(7), commitSeq: 41, epoch: 1 });
    expect(state).toMatchObject({ position: position(7), commitSeq: 41, epoch: 1 });
    expect(state.error).toBeUndefined();
    await store.recordError(id, { code: 'ASSERTION', message: 'x' }, 1_150);
    state = (await store.get(id)) as typeof state;
    state = await store.commit({ sourceId: id, owner: 'a', expectVersion: state.version, now: 1_200 }, { position: position(8), pending });
    expect(state).toMatchObject({ commitSeq: 42 });
    expect(state.error).toBeUndefined();
  });

  it('stores the position’s binlog history with every commit and overwrite, and drops it when a write has none', async () => {
    const id = source();
    const history = { file: 'binlog.000001', created: 1_796_052_560_000, serverId: 1 };
    let state = await store.acquireLease(id, 'a', 10_000, 1_000);
    const fence = (now: number) => ({ sourceId: id, owner: 'a', expectVersion: state.version, now });
    state = await store.commit(fence(1_100), { position: position(100), history });
    expect(state.history).toEqual(history);
    state = await store.commit(fence(1_200), { position: position(200), history: { ...history, serverUuid: 'u-1' }, pending });
    expect((await store.get(id))?.history).toEqual({ ...history, serverUuid: 'u-1' });
    state = await store.clearPending(fence(1_300));
    expect(state.history).toEqual({ ...history, serverUuid: 'u-1' }); // clearing renames keeps it
    state = await store.commit(fence(1_400), { position: { file: 'binlog.000002', pos: 4 } });
    expect(state.history).toBeUndefined(); // a position whose history is not known has none, never another file's
    state = await store.overwrite(fence(1_500), { position: position(7), history, commitSeq: 5, epoch: 1 });
    expect((await store.get(id))?.history).toEqual(history);
    state = await store.overwrite(fence(1_600), { position: position(8), commitSeq: 5, epoch: 2 });
    expect((await store.get(id))?.history).toBeUndefined();
  });

  it('an overwrite starts a history epoch and may ask for a resync, which the commit that carries it clears', async () => {
    const id = source();
    let state = await store.acquireLease(id, 'a', 10_000, 1_000);
    expect(state.epoch).toBe(0);
    expect(state.resync).toBeUndefined();
    const fence = (now: number) => ({ sourceId: id, owner: 'a', expectVersion: state.version, now });
    state = await store.commit(fence(1_100), { position: position(100) });
    const resync = { reason: 'sluice state reset --to latest', at: 1_150 };
    state = await store.overwrite(fence(1_200), { position: position(7), commitSeq: 0, epoch: 1, resync });
    expect(await store.get(id)).toMatchObject({ epoch: 1, resync, position: position(7) });
    state = await store.commit(fence(1_300), { position: position(8) });
    expect((await store.get(id))?.resync).toEqual(resync); // a commit that does not carry the resets keeps it
    state = await store.commit(fence(1_400), { position: position(9), pending, resynced: true });
    expect(await store.get(id)).toMatchObject({ epoch: 1, commitSeq: 1 });
    expect((await store.get(id))?.resync).toBeUndefined();
    state = await store.clearPending(fence(1_500));
    state = await store.overwrite(fence(1_600), { position: position(4), commitSeq: 1, epoch: 2 });
    expect(await store.get(id)).toMatchObject({ epoch: 2, commitSeq: 1 });
    expect((await store.get(id))?.resync).toBeUndefined();
  });

  it('a capture run moves its position to another history under its own lease and records the reposition, which later writes keep', async () => {
    const id = source();
    let state = await store.acquireLease(id, 'run-1', 10_000, 1_000);
    const fence = (owner: string, now: number) => ({ sourceId: id, owner, expectVersion: state.version, now });
    const old = { file: 'binlog.000004', pos: 900, gtid: '0-1-40', gtidPos: '0-1-40,2-1-7', gtidTime: 1_796_052_560_000 };
    state = await store.commit(fence('run-1', 1_100), { position: old, history: { file: 'binlog.000004', created: 1_796_052_000_000, serverId: 1 } });
    const moved = { file: 'binlog.000001', pos: 5_120, gtid: '0-1-40', gtidPos: '0-1-40,2-1-7', gtidSkip: '2-1-7', gtidTime: 1_796_052_560_000 };
    const reposition = {
      at: 1_200,
      evidence: 'this server’s binlog ends with binlog.000001, before binlog.000004',
      gtid: '0-1-40,2-1-7',
      epoch: 1,
      from: { position: old, serverId: 1 },
      to: { position: moved, serverId: 2 },
    };
    // Another owner cannot; the run holding the lease can, in one conditional write.
    await expect(store.overwrite(fence('admin', 1_200), { position: moved, commitSeq: state.commitSeq, epoch: 1, reposition })).rejects.toBeInstanceOf(
      LeaseLostError,
    );
    state = await store.overwrite(fence('run-1', 1_200), { position: moved, commitSeq: state.commitSeq, epoch: 1, reposition });
    expect(state).toMatchObject({ position: moved, epoch: 1, lastReposition: reposition, lease: { owner: 'run-1' } });
    expect(state.history).toBeUndefined();
    expect(state.resync).toBeUndefined();
    state = await store.commit(fence('run-1', 1_300), { position: { ...moved, pos: 6_000 }, pending });
    state = await store.clearPending(fence('run-1', 1_400));
    state = await store.overwrite(fence('run-1', 1_500), { position: position(4), commitSeq: state.commitSeq, epoch: 2 });
    expect((await store.get(id))?.lastReposition).toEqual(reposition); // a reset moves the position, not this record
  });
});

describe('snapshot jobs (DynamoDB)', () => {
  it("a job whose creation stopped before the active set's write is made active by its redo; a done one is not revived", async () => {
    const config = loadConfig({ ...process.env, SLUICE_SOURCE_ID: 'jobs' });
    const clients = createClients(config);
    await initResources(config, clients);
    // The first UpdateItem (the pointer's write) fails, as a crash or an HTTP error there would.
    let failNext = true;
    const flaky = {
      send: (command: unknown) => {
        if (failNext && command instanceof UpdateItemCommand) {
          failNext = false;
          return Promise.reject(new Error('injected: DynamoDB unreachable'));
        }
        return clients.dynamo.send(command as UpdateItemCommand);
      },
    } as unknown as DynamoDBClient;
    const snapshots = new DynamoDbSnapshotStore(flaky, config.stateTable);
    const sourceId = `jobs-${randomBytes(4).toString('hex')}`;
    const job = {
      sourceId,
      id: 'ddl-000000000001',
      createdAt: 1,
      requested: [{ db: 'd', table: 't' }],
      status: 'requested' as const,
      startPosition: position(4),
    };
    await expect(snapshots.createJob(job)).rejects.toThrow(/injected/);
    expect(await snapshots.activeJobs(sourceId)).toEqual([]); // nothing would run it, nor hold d.t back
    expect(await snapshots.createJob(job)).toBe(false); // the commit's roll-forward asks again
    expect((await snapshots.activeJobs(sourceId)).map((j) => j.id)).toEqual([job.id]);
    await snapshots.markDone(sourceId, job.id, 2);
    expect(await snapshots.createJob(job)).toBe(false);
    expect(await snapshots.activeJobs(sourceId)).toEqual([]);
  });
});
