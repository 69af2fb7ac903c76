import { describe, expect, it } from 'vitest';
import { deadlines } from '../../lib/capture/policy.ts';
import { acquireLease, isLive, sourceLease } from '../../lib/commit/lease.ts';
import { sourceLedger } from '../../lib/commit/ledgers.ts';
import { advance } from '../../lib/commit/protocol.ts';
import { LeaseLostError, OffsetConflictError } from '../../lib/errors.ts';
import { silentLog } from '../../lib/log.ts';
import { InMemoryStateStore } from '../../lib/state/memory.ts';

const at = (pos: number) => ({ file: 'binlog.000003', pos });
const to = (pos: number) => ({ position: at(pos) });
const pending = { copies: [{ from: '_staging/x', to: 'tables/x' }] };

describe('lease expiry (in-memory state store, simulated clock)', () => {
  it('a run commits until its lease ends; then it is fenced out, and a successor continues from what it committed', async () => {
    const store = new InMemoryStateStore();
    let now = 0;
    const clock = () => now;
    const limits = deadlines(now, 4_000, 1_000);
    const first = await store.acquireLease('s', 'run-1', limits.leaseExpires, now);
    const ledger = sourceLedger(store, 'run-1', clock);

    now = limits.hard;
    const moved = await advance(ledger, first, to(100));
    now = limits.leaseExpires;
    await expect(advance(ledger, moved, to(200))).rejects.toBeInstanceOf(LeaseLostError);
    await expect(store.acquireLease('s', 'run-2', now + 4_000, now)).rejects.toBeInstanceOf(LeaseLostError); // expired only after its last ms

    now += 1;
    const second = await store.acquireLease('s', 'run-2', now + 4_000, now);
    expect(second.position).toEqual(at(100));
    // The zombie wakes up and tries to commit the batch it staged: refused, nothing moves.
    await expect(ledger.commit(moved, to(300), pending)).rejects.toBeInstanceOf(LeaseLostError);
    const successor = await sourceLedger(store, 'run-2', clock).commit(second, to(300), pending);
    expect(successor).toMatchObject({ position: at(300), commitSeq: 1, pending });
  });

  it('a writer that missed another write (a lost response it retried) gets a conflict, not a second commit', async () => {
    const store = new InMemoryStateStore();
    const clock = () => 10;
    const state = await store.acquireLease('s', 'run', 1_000, 0);
    const ledger = sourceLedger(store, 'run', clock);
    const committed = await ledger.commit(state, to(100), pending);
    await expect(ledger.commit(state, to(100), pending)).rejects.toBeInstanceOf(OffsetConflictError);
    await expect(ledger.commit(committed, to(200), pending)).rejects.toBeInstanceOf(OffsetConflictError); // one pending at a time
    expect((await store.get('s'))?.commitSeq).toBe(1);
  });
});

describe('the lease module (lib/commit/lease.ts, in-memory state store, simulated clock)', () => {
  it('acquires a free lease, reports a held one busy, renews never past the budget, refuses unfenced writes once it may have run out, and releases', async () => {
    const store = new InMemoryStateStore();
    let now = 0;
    const clock = () => now;
    const first = await acquireLease(sourceLease(store, 's'), { owner: 'run-1', clock, leaseMs: 1_000, budgetMs: 2_500 });
    if ('busy' in first) throw new Error('the lease was free');
    expect(first.acquiredAt).toBe(0);
    expect((await store.get('s'))?.lease).toEqual({ owner: 'run-1', expiresAt: 1_000 });

    const busy = await acquireLease(sourceLease(store, 's'), { owner: 'run-2', clock, leaseMs: 1_000 });
    expect(busy).toEqual({ busy: expect.stringContaining('run-1') });

    now = 700;
    first.check('still writable');
    now = 800;
    expect(() => first.check('past three quarters of the lease')).toThrow(LeaseLostError);
    await first.renew();
    expect((await store.get('s'))?.lease?.expiresAt).toBe(1_800);
    first.check('renewed');
    now = 1_700;
    await first.renew();
    expect((await store.get('s'))?.lease?.expiresAt).toBe(2_500); // the budget, not now + leaseMs

    await first.release();
    expect((await store.get('s'))?.lease).toBeUndefined();
    const second = await acquireLease(sourceLease(store, 's'), { owner: 'run-2', clock, leaseMs: 1_000 });
    expect('busy' in second).toBe(false);
  });

  it('a lost lease fails its renewal, and a live lease is one whose expiry is still ahead', async () => {
    const store = new InMemoryStateStore();
    let now = 0;
    const clock = () => now;
    const lease = await acquireLease(sourceLease(store, 's'), { owner: 'run-1', clock, leaseMs: 1_000, deadline: 600 });
    if ('busy' in lease) throw new Error('the lease was free');
    expect(lease.until()).toBe(600);
    now = 601;
    expect(isLive((await store.get('s'))?.lease, now)).toBe(false);
    await acquireLease(sourceLease(store, 's'), { owner: 'run-2', clock, leaseMs: 1_000 });
    await expect(lease.renew()).rejects.toBeInstanceOf(LeaseLostError);
    expect(isLive((await store.get('s'))?.lease, now)).toBe(true);
  });
});

describe('a lease its ledger renews (a snapshot chunk: every page commit renews it)', () => {
  it('has no heartbeat, renew() nor check(): each says so instead of trusting an expiry nothing extended', async () => {
    const item = { acquire: async () => ({ n: 1 }), release: async () => undefined };
    const clock = () => 0;
    await expect(acquireLease(item, { owner: 'w', clock, leaseMs: 1_000, heartbeat: { log: silentLog, warning: 'x' } })).rejects.toThrow(
      /heartbeat for a lease its ledger renews/,
    );
    const lease = await acquireLease(item, { owner: 'w', clock, leaseMs: 1_000 });
    if ('busy' in lease) throw new Error('the lease was free');
    await expect(lease.renew()).rejects.toThrow(/ledger renews/);
    expect(() => lease.check('write')).toThrow(/ledger renews/);
    await lease.release();
  });
});
