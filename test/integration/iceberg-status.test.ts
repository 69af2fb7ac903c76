import { describe, expect, it } from 'vitest';
import { crashAt } from '../../lib/commit/faults.ts';
import { cliEnv, sluice } from '../support/cli.ts';
import { merge } from '../support/iceberg-merge.ts';
import { testSource } from '../support/source.ts';

describe('sluice status: the Iceberg merge per table', () => {
  it('shows each merged table: its commit, how far behind, files, a held table and why, the last failed merge until the next commit', async () => {
    await using source = await testSource('icestatus', { SLUICE_STARTUP: 'latest' });
    const env = cliEnv(source);
    await source.sql('CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(10)); CREATE TABLE b (id INT PRIMARY KEY)');
    await source.capture();
    await source.sql("INSERT INTO a VALUES (1, 'x'), (2, 'y'); INSERT INTO b VALUES (1)");
    await source.capture();
    // Before any merge there is no ledger: nothing to show (a source that does not use Iceberg).
    expect(JSON.parse((await sluice(['status', '--json'], env)).stdout).iceberg).toEqual([]);
    expect((await sluice(['status'], env)).stdout).not.toContain('iceberg');

    const first = await merge(source);
    expect(first.tables.map((t) => t.status)).toEqual(['merged', 'merged']);
    await source.sql("INSERT INTO a VALUES (3, 'z')");
    await source.capture();
    const behind = JSON.parse((await sluice(['status', '--json'], env)).stdout);
    const a = behind.iceberg.find((t: { table: string }) => t.table === `${source.db}.a`);
    expect(a).toMatchObject({ commitSeq: first.cut?.commitSeq, records: 2, dataFiles: 1, deleteFiles: 0, gone: false });
    expect(a.behind).toBe(behind.commitSeq - (first.cut?.commitSeq ?? 0));
    expect(a.behind).toBeGreaterThan(0);

    // A merge that fails is recorded against the table, and its next commit clears it.
    const failed = await merge(source, { tables: ['a'], faults: crashAt('after-staging') });
    expect(failed.tables[0]?.status).toBe('failed');
    const text = (await sluice(['status'], env)).stdout;
    expect(text).toMatch(
      new RegExp(`  ${source.db}\\.a\\s+commit ${a.commitSeq}, ${a.behind} commits? behind; 2 rows in 1 data \\+ 0 delete files; not compacted`),
    );
    expect(text).toMatch(/ {4}error\s+\S+: .*injected/i);
    await merge(source, { tables: ['a'] });
    const merged = JSON.parse((await sluice(['status', '--json'], env)).stdout).iceberg.find((t: { table: string }) => t.table === `${source.db}.a`);
    expect(merged).toMatchObject({ behind: 0, records: 3 });
    expect(merged.error).toBeUndefined();

    // A snapshot copying a table holds its merge back: status says which one.
    await sluice(['snapshot', '--tables', `${source.db}.b`, '--seconds', '0'], env);
    const held = JSON.parse((await sluice(['status', '--json'], env)).stdout).iceberg.find((t: { table: string }) => t.table === `${source.db}.b`);
    expect(held.held).toMatch(/^snapshot \S+ is copying it \((requested|planned)\)$/);
  });
});
