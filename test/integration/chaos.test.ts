import { describe, expect, inject, it } from 'vitest';
import { runChaos } from '../chaos/harness.ts';

// The short chaos run; `npm run chaos` runs the long one. A failure names its seed for replay.
describe('chaos (short): random workload under random faults, checked after every round', () => {
  const seed = Number(process.env.CHAOS_SEED ?? Date.now() % 100_000);
  it(`stays exactly-once through 5 rounds of faults (seed ${seed})`, async () => {
    const report = await runChaos({ rounds: 5, mutationsPerRound: 250, seed, env: inject('stackEnv'), server: inject('stackServer') });
    expect(report.differences).toBe(0);
    expect(report.mutations).toBeGreaterThan(1250);
    expect(Object.values(report.faults).reduce((a, b) => a + b, 0)).toBeGreaterThan(5);
  }, 300_000);
});
