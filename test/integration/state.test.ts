import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { comparePositions } from '../../lib/core/position.ts';
import { cliEnv, sluice } from '../support/cli.ts';
import { testSource } from '../support/source.ts';

describe('sluice state export | import | reset', () => {
  it('exports a savepoint, refuses to import it over a newer state, rolls back with --force, keeps the commit sequence', async () => {
    await using source = await testSource('savepoint');
    const env = cliEnv(source, { SLUICE_STARTUP: 'latest' });
    await source.sql('CREATE TABLE a (id INT PRIMARY KEY)');
    await source.capture();
    await source.sql('INSERT INTO a VALUES (1)');
    await source.capture();

    const exported = await sluice(['state', 'export'], env);
    const saved = JSON.parse(exported.stdout);
    // Commit 1 saved the schema catalog the source started with; commit 2 carries row 1.
    expect(saved).toMatchObject({ format: 'sluice-state/v1', source: source.db, commitSeq: 2, position: (await source.state())?.position });
    const file = join(mkdtempSync(join(tmpdir(), 'sluice-state-')), 'state.json');
    writeFileSync(file, exported.stdout);

    await source.sql('INSERT INTO a VALUES (2)');
    await source.capture();
    const ahead = await source.state();
    expect(ahead?.commitSeq).toBe(3);

    const refused = await sluice(['state', 'import', file], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/STATE_NEWER: source .* is ahead of the file .* pass --force/);
    expect((await source.state())?.position).toEqual(ahead?.position);

    const forced = await sluice(['state', 'import', file, '--force'], env);
    expect(forced.code).toBe(0);
    const rolledBack = await source.state();
    expect(rolledBack?.position).toEqual(saved.position);
    expect(rolledBack?.commitSeq).toBe(3); // never reused: commit 3's objects stay intact

    // The rolled-back source captures row 2 again, in a new commit, in the history epoch the import began.
    expect(rolledBack?.epoch).toBe(1);
    await source.capture();
    const events = await source.events();
    const twos = events.filter((e) => e.after?.id === 2);
    expect(twos.map((e) => e.commitSeq)).toEqual([3, 4]);
    expect(twos[1]?.seq).toBe(`h000001.${twos[0]?.seq}`);
  });

  it('reset moves the position to latest or a timestamp, and is refused while a run holds the lease', async () => {
    await using source = await testSource('reset');
    const env = cliEnv(source, { SLUICE_STARTUP: 'latest' });
    await source.sql('CREATE TABLE a (id INT PRIMARY KEY)');
    await source.capture();
    // A position the stream has read to carries what proves its history (a reset from one that
    // does not, such as a first run's, re-copies every table).
    await source.sql('INSERT INTO a VALUES (0)');
    await source.capture();
    const before = (await source.state())?.position;
    await source.sql('INSERT INTO a VALUES (1), (2)');

    const reset = await sluice(['state', 'reset', '--to', 'latest'], env);
    expect(reset.code).toBe(0);
    const after = (await source.state())?.position;
    expect(before && after && comparePositions(after, before)).toBeGreaterThan(0);
    // The inserts were skipped on purpose: the table they wrote is reset and copied again.
    expect(reset.stdout).toMatch(/history epoch 1\nthe next capture run resets/);
    expect((await source.state())?.resync?.tables).toEqual([{ db: source.db, table: 'a' }]);
    const resumed = await source.capture();
    expect(resumed.events).toBe(1);
    expect((await source.events()).at(-1)).toMatchObject({ op: 't', ddl: { kind: 'resnapshot' } });
    expect((await source.clients.snapshots.activeJobs(source.db)).map((job) => job.requested)).toEqual([[{ db: source.db, table: 'a' }]]);

    const back = await sluice(['state', 'reset', '--to', `timestamp:${new Date(Date.now() - 60_000).toISOString()}`], env);
    expect(back.code).toBe(0);
    expect((await source.capture()).events).toBeGreaterThanOrEqual(2);

    await source.clients.store.acquireLease(source.db, 'a-running-poller', Date.now() + 30_000, Date.now());
    const busy = await sluice(['state', 'reset', '--to', 'latest'], env);
    expect(busy.code).toBe(1);
    expect(busy.stderr).toMatch(/STATE_BUSY: .*being captured right now/);
    expect((await sluice(['state', 'reset', '--to', 'yesterday'], env)).stderr).toMatch(/expected initial, initial-only, latest/);
  });
});
