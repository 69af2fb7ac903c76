import { describe, expect, inject, it } from 'vitest';
import { appSeed, appTable, keyedApp } from '../support/keyed-app.ts';
import { expectExactlyOnce, testSource } from '../support/source.ts';

/*
 * Issue #30's workload: an application writing a table keyed by (name VARCHAR … COLLATE
 * utf8mb4_general_ci, n INT) in multi-statement transactions — case-only and trailing-space-only
 * key changes, REPLACE and INSERT … ON DUPLICATE KEY UPDATE in another case — compressed on MySQL,
 * while sluice starts with SLUICE_STARTUP=initial and pages through it in small pages. The output
 * must equal the table, every cell. The commit window that lost cells is forced open in
 * handoff-commit-window.test.ts; this keeps the key shapes and the hand-off under real interleaving.
 */

describe('the initial hand-off while an app writes a case-insensitive composite key (issue #30)', () => {
  const compressible = inject('stackServer') === 'mysql';
  it.each([
    { seed: 1, collation: 'utf8mb4_general_ci', compress: true },
    { seed: 2, collation: 'utf8mb4_general_ci', compress: true },
    { seed: 3, collation: 'utf8mb4_general_ci', compress: false },
    { seed: 4, collation: 'utf8mb4_bin', compress: true },
  ])('seed $seed, $collation, compressed: $compress', async ({ seed, collation, compress }) => {
    await using source = await testSource('handrace', { SLUICE_STARTUP: 'initial', SLUICE_SNAPSHOT_PAGE_ROWS: '20', SLUICE_SNAPSHOT_CHUNK_ROWS: '300' });
    await source.sql(`${appTable('a', collation)}; ${appSeed('a')}`);
    const first = await source.capture(); // requests the snapshot and records the position read before it
    expect(first.snapshotRequested).toBeDefined();
    const apps = [0, 1, 2].map((k) =>
      keyedApp(process.env.SLUICE_LOCAL_ADMIN_URL as string, source.db, 'a', seed * 10 + k, { compress: compress && compressible }),
    );
    const snapshot = await source.snapshot({ workers: 2 });
    const committed = (await Promise.all(apps.map((a) => a.stop()))).reduce((a, b) => a + b, 0);
    await source.capture();

    expect(snapshot.complete).toBe(true);
    expect(committed).toBeGreaterThan(20);
    const { duplicates, differences } = await expectExactlyOnce(source, ['a'], (r) => ({ name: r.name, n: r.n }));
    expect(duplicates).toBe(0);
    expect(differences).toEqual([]);
  });
});
