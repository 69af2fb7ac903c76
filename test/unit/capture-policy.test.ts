import { describe, expect, it } from 'vitest';
import { boundaryAction, deadlines, latencyWait, shouldStop } from '../../lib/capture/policy.ts';

const limits = { maxBytes: 1000, maxEvents: 10, maxAgeMs: 20_000 };
const base = { now: 100_000, force: false, advanced: true, caughtUp: true, lastCommitAt: 95_000, limits, commitIntervalMs: 10_000 };
const batch = (fill: Partial<{ events: number; size: number; startedAt: number }>) => ({ events: 1, size: 10, startedAt: 99_000, ...fill });

describe('capture policy: cutting batches at transaction boundaries', () => {
  it('keeps a batch open until it is due', () => {
    expect(boundaryAction({ ...base, batch: batch({}) })).toBe('wait');
  });

  it('cuts a batch once it reaches the size, the count or the age limit', () => {
    expect(boundaryAction({ ...base, batch: batch({ size: 1000 }) })).toBe('commit');
    expect(boundaryAction({ ...base, batch: batch({ events: 10 }) })).toBe('commit');
    expect(boundaryAction({ ...base, batch: batch({ startedAt: 80_000 }) })).toBe('commit');
  });

  it('with a target latency, cuts a batch that old once the reader has caught up, and not while rows wait to be read', () => {
    const low = { ...limits, targetLatencyMs: 1_000 };
    expect(boundaryAction({ ...base, limits: low, batch: batch({ startedAt: 99_000 }) })).toBe('commit');
    expect(boundaryAction({ ...base, limits: low, batch: batch({ startedAt: 99_001 }) })).toBe('wait');
    expect(boundaryAction({ ...base, limits: low, caughtUp: false, batch: batch({ startedAt: 90_000 }) })).toBe('wait');
    // Without the setting, catching up changes nothing.
    expect(boundaryAction({ ...base, batch: batch({ startedAt: 90_000 }) })).toBe('wait');
  });

  it('says how long until an open batch comes of age under a target latency', () => {
    const low = { ...limits, targetLatencyMs: 1_000 };
    expect(latencyWait(100_000, batch({ startedAt: 99_600 }), low)).toBe(600);
    expect(latencyWait(100_000, batch({ startedAt: 90_000 }), low)).toBe(0);
    expect(latencyWait(100_000, batch({ events: 0 }), low)).toBeUndefined();
    expect(latencyWait(100_000, batch({}), limits)).toBeUndefined();
  });

  it('cuts whatever is batched when the run ends', () => {
    expect(boundaryAction({ ...base, force: true, batch: batch({}) })).toBe('commit');
  });

  it('with nothing batched, heartbeats a moved position once the commit interval has passed', () => {
    expect(boundaryAction({ ...base, batch: undefined })).toBe('wait');
    expect(boundaryAction({ ...base, batch: undefined, lastCommitAt: 90_000 })).toBe('heartbeat');
    expect(boundaryAction({ ...base, batch: batch({ events: 0 }), lastCommitAt: 90_000 })).toBe('heartbeat');
    expect(boundaryAction({ ...base, batch: undefined, force: true })).toBe('heartbeat');
  });

  it('never heartbeats a position that did not move', () => {
    expect(boundaryAction({ ...base, batch: undefined, advanced: false, force: true, lastCommitAt: 0 })).toBe('wait');
  });
});

describe('capture policy: deadlines', () => {
  it('leases the whole budget, stops taking transactions a safety margin before, gives up one in flight just before the end', () => {
    expect(deadlines(1_000, 60_000, 15_000)).toEqual({ leaseExpires: 61_000, soft: 46_000, hard: 59_000 });
    // A small margin: the hard deadline keeps half of it.
    expect(deadlines(0, 4_000, 1_000)).toEqual({ leaseExpires: 4_000, soft: 3_000, hard: 3_500 });
  });

  it('stops at the soft deadline, or when caught up if asked to', () => {
    const limits = deadlines(0, 60_000, 15_000);
    expect(shouldStop(44_999, limits, false, () => true)).toBe(false);
    expect(shouldStop(45_000, limits, false, () => false)).toBe(true);
    expect(shouldStop(1_000, limits, true, () => true)).toBe(true);
    expect(shouldStop(1_000, limits, true, () => false)).toBe(false);
  });
});
