import { describe, expect, it } from 'vitest';
import { cliEnv, sluice } from '../support/cli.ts';
import { testSource } from '../support/source.ts';

/** The line `SLUICE_PROFILE=1` prints on stderr at exit (lib/profile.ts); the benchmarks read it. */
interface Profile {
  wallMs: number;
  splitMs: Record<string, number>;
  requests: { s3: Record<string, number>; dynamodb: Record<string, number> };
  peakRssMb: number;
}
const profileLine = (stderr: string) => stderr.split('\n').find((line) => line.startsWith('{"sluiceProfile"'));

describe('SLUICE_PROFILE', () => {
  it('accounts a capture run in parts that add up to its wall time, and counts its requests', async () => {
    await using source = await testSource('profile');
    const env = cliEnv(source);
    await source.sql('CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(20))');
    expect((await sluice(['capture', '--once'], env)).code).toBe(0);
    await source.sql("INSERT INTO a SELECT seq, CONCAT('row ', seq) FROM seq_1_to_20000");

    const run = await sluice(['capture', '--once'], { ...env, SLUICE_PROFILE: '1' });
    expect(run.stdout).toMatch(/captured 20000 events in 1 transactions, 1 commits/);
    const profile = JSON.parse(profileLine(run.stderr) ?? 'null') as Profile;
    const parts = profile.splitMs;
    expect(Object.keys(parts).sort()).toEqual(['decode', 'dynamodb', 'encode', 'gzip', 'idle', 'js', 's3', 'shutdown', 'startup']);
    // Each part is rounded to a millisecond on its own.
    expect(Math.abs(Object.values(parts).reduce((a, b) => a + b, 0) - profile.wallMs)).toBeLessThanOrEqual(9);
    // `idle` (waiting on MySQL) may round to 0 ms when the binlog arrives faster than it is handled.
    for (const part of ['startup', 'decode', 'encode', 'js', 's3', 'dynamodb'] as const) expect(parts[part], part).toBeGreaterThan(0);
    // One data object and its manifest, staged then copied; the lease, the commit and the cleared renames.
    expect(profile.requests.s3).toMatchObject({ PutObject: 2, CopyObject: 2 });
    expect(profile.requests.dynamodb.UpdateItem).toBeGreaterThanOrEqual(3);
    expect(profile.peakRssMb).toBeGreaterThan(0);
  });

  it('prints nothing when not set', async () => {
    await using source = await testSource('profileoff');
    const run = await sluice(['capture', '--once'], cliEnv(source));
    expect(run.stdout).toMatch(/captured 0 events/);
    expect(run.stderr).not.toContain('sluiceProfile');
  });
});
