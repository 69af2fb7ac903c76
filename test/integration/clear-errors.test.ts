import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { run } from '../../lib/cli/main.ts';
import { loadConfig } from '../../lib/config/config.ts';
import type { BinlogPosition } from '../../lib/core/position.ts';
import { BinlogReader } from '../../lib/source/mysql/binlog-reader.ts';
import { mysqlTarget } from '../../lib/source/mysql/target.ts';
import { cliEnv } from '../support/cli.ts';
import { type TestSource, testSource } from '../support/source.ts';

/** Runs `sluice` in-process; returns the exit code and everything printed. */
async function sluice(env: Record<string, string | undefined>, args: string[]): Promise<{ code: number; out: string }> {
  const out: string[] = [];
  const code = await run(args, { env, stdout: { write: (t: string) => out.push(t) }, stderr: { write: (t: string) => out.push(t) } });
  return { code, out: out.join('') };
}

/** The positions of a fresh transaction's events: its start (a Gtid), a Table_map inside it, an offset inside an event. */
async function positionsOf(source: TestSource): Promise<{ start: BinlogPosition; inside: BinlogPosition; midEvent: BinlogPosition; end: BinlogPosition }> {
  const [before] = await source.sql('SHOW MASTER STATUS');
  await source.sql("INSERT INTO t VALUES (1, 'one'), (2, 'two')");
  const file = String(before?.File);
  const events = (await source.sql(`SHOW BINLOG EVENTS IN '${file}' FROM ${before?.Position}`)) as {
    Pos: number;
    Event_type: string;
    End_log_pos: number;
    Info: string;
  }[];
  // Other test files write to the same server: find our transaction, the first with a Table_map of our db.
  // (MariaDB's GTID event begins it; MySQL's is followed by a BEGIN, a DDL's by its statement.)
  const begins = (e: { Event_type: string; Info: string } | undefined) => e?.Event_type !== 'Query' || e.Info === 'BEGIN';
  const gtid = events.findIndex((e, i) => e.Event_type === 'Gtid' && begins(events[i + 1]) && events.slice(i, i + 4).some((x) => x.Event_type === 'Table_map'));
  const start = events[gtid] as { Pos: number };
  const map = events.slice(gtid).find((e) => e.Event_type === 'Table_map') as { Pos: number };
  const xid = events.slice(gtid).find((e) => e.Event_type === 'Xid') as { End_log_pos: number };
  return {
    start: { file, pos: Number(start.Pos) },
    inside: { file, pos: Number(map.Pos) },
    midEvent: { file, pos: Number(map.Pos) + 3 },
    end: { file, pos: Number(xid.End_log_pos) },
  };
}

describe('errors that name the problem and write nothing', () => {
  it('SLUICE_STARTUP=position: and state reset --to position: must name where a transaction starts; nothing is stored otherwise', async () => {
    await using source = await testSource('startpos');
    await source.sql('CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))');
    const at = await positionsOf(source);
    const startup = (p: BinlogPosition) =>
      loadConfig({ ...process.env, ...cliEnv(source), SLUICE_STARTUP: `position:${p.file}:${p.pos}` } as Record<string, string>);
    const cases: [BinlogPosition, RegExp][] = [
      [at.midEvent, /is not the start of an event in binlog\.\d+; nothing was stored/],
      [at.inside, /is inside a transaction \(a Table_map event starts there\): resuming there would lose the transaction's first rows; nothing was stored/],
      [{ file: at.start.file, pos: 2 }, /a binlog file starts at 4/],
      [{ file: 'binlog.999999', pos: 4 }, /the requested position binlog\.999999:4 is not on the server/],
    ];
    for (const [position, message] of cases) {
      const failure = await source.capture({ config: startup(position) }).catch((error: Error & { code?: string }) => error);
      expect(failure).toMatchObject({ message: expect.stringMatching(message) });
      expect((failure as Error).message).not.toMatch(/max_allowed_packet/);
      expect((await source.state())?.position).toBeUndefined();
      const reset = await sluice(cliEnv(source), ['state', 'reset', '--to', `position:${position.file}:${position.pos}`]);
      expect(reset.code).toBe(1);
      expect(reset.out).toMatch(message);
      expect((await source.state())?.position).toBeUndefined();
    }
    // The transaction's start and its end are accepted, and reading from the start captures it whole.
    expect((await sluice(cliEnv(source), ['state', 'reset', '--to', `position:${at.end.file}:${at.end.pos}`])).code).toBe(0);
    const result = await source.capture({ config: startup(at.start) });
    expect(result.status).toBe('captured');
    expect((await source.state())?.position).toBeDefined();
  });

  it('an unreadable position is explained in words, without the server’s raw text', async () => {
    await using source = await testSource('badpos');
    await source.sql('CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))');
    const at = await positionsOf(source);
    const reader = new BinlogReader({ target: await mysqlTarget(source.config), start: at.midEvent, filter: () => true, idleMs: 3000 });
    let failure: Error | undefined;
    try {
      for await (const item of reader) if (item.kind === 'idle') break;
    } catch (error) {
      failure = error as Error;
    } finally {
      await reader.stop();
    }
    expect(failure).toMatchObject({ code: 'POSITION_LOST' });
    expect(failure?.message).toMatch(/cannot be read from the server: the offset is not the start of an event/);
    expect(failure?.message).not.toMatch(/max_allowed_packet|[^\x20-\x7e]/);
  });

  it('a missing state table or bucket is named, with `sluice init`', async () => {
    await using source = await testSource('missing');
    for (const [variable, code] of [
      ['SLUICE_STATE_TABLE', 'STATE_TABLE_MISSING'],
      ['SLUICE_BUCKET', 'BUCKET_MISSING'],
    ] as const) {
      const name = `sluice-missing-${source.db.replace(/_/g, '-')}`;
      const env = cliEnv(source, { [variable]: name });
      for (const args of [['capture', '--once'], ['status']]) {
        if (variable === 'SLUICE_BUCKET' && args[0] === 'status') continue; // status reads no object
        const { code: exit, out } = await sluice(env, args);
        expect(exit).toBe(1);
        expect(out).toContain(
          `sluice: ${code}: the ${variable === 'SLUICE_BUCKET' ? 'S3 bucket' : 'DynamoDB table'} ${name} (${variable}) does not exist: create it with \`sluice init\``,
        );
      }
      const doctor = await sluice(env, ['doctor']);
      expect(doctor.code).toBe(1);
      expect(doctor.out).toMatch(new RegExp(`FAIL  (DynamoDB table|S3 bucket) ${name}: .*(does not exist|it does not exist): create it with \`sluice init\``));
    }
  });

  it('include/exclude patterns matching no table warn in doctor, capture and status', async () => {
    await using source = await testSource('nomatch');
    await source.sql('CREATE TABLE t (id INT PRIMARY KEY)');
    const env = cliEnv(source, { SLUICE_INCLUDE: `${source.db}\\.t,${source.db}\\.typo`, SLUICE_EXCLUDE: `${source.db}\\.secrets` });
    const expected = [
      `SLUICE_INCLUDE pattern "${source.db}\\.typo" matches no table on the server`,
      `SLUICE_EXCLUDE pattern "${source.db}\\.secrets" matches no table on the server`,
    ];
    const doctor = await sluice(env, ['doctor']);
    expect(doctor.code).toBe(0);
    for (const warning of expected) expect(doctor.out).toContain(`WARN  ${warning}`);
    const capture = await sluice(env, ['capture', '--once']);
    expect(capture.code).toBe(0);
    for (const warning of expected) expect(capture.out).toContain(`sluice: warning: ${warning}`);
    // A run of several seconds warns at its start, not at its end.
    const started = Date.now();
    let warnedAt = Number.POSITIVE_INFINITY;
    let errors = '';
    const stderr = {
      write: (text: string) => {
        errors += text;
        if (text.includes('sluice: warning:')) warnedAt = Math.min(warnedAt, Date.now());
      },
    };
    expect(
      await run(['capture', '--seconds', '5'], {
        env: { ...env, SLUICE_STOP_WHEN_CAUGHT_UP: 'false', SLUICE_SAFETY_MARGIN_SECONDS: '1' },
        stdout: { write: () => {} },
        stderr,
      }),
      errors,
    ).toBe(0);
    expect(Date.now() - started).toBeGreaterThan(3500);
    expect(warnedAt - started).toBeLessThan(2000);
    const status = await sluice(env, ['status']);
    for (const warning of expected) expect(status.out).toMatch(new RegExp(`^WARNING\\s+${warning.replace(/[.\\*"]/g, (c) => `\\${c}`)}$`, 'm'));
    // Filters that leave nothing to capture, though each pattern matches something.
    const empty = await sluice(cliEnv(source, { SLUICE_INCLUDE: `${source.db}\\.t`, SLUICE_EXCLUDE: `${source.db}\\..*` }), ['doctor']);
    expect(empty.out).toContain('WARN  SLUICE_INCLUDE and SLUICE_EXCLUDE together leave no table to capture');
    // Patterns that match: no warning.
    expect((await sluice(cliEnv(source), ['doctor'])).out).not.toContain('WARN');
  });

  it('state import refuses a string where a number belongs, naming the file and the field, and stores nothing', async () => {
    await using source = await testSource('import');
    await source.sql('CREATE TABLE t (id INT PRIMARY KEY)');
    await source.capture();
    const before = await source.state();
    const dir = mkdtempSync(join(tmpdir(), 'sluice-import-'));
    try {
      const file = join(dir, 'saved.json');
      const exported = JSON.parse((await sluice(cliEnv(source), ['state', 'export'])).out);
      writeFileSync(file, JSON.stringify({ ...exported, position: { ...exported.position, pos: String(exported.position.pos) } }));
      const imported = await sluice(cliEnv(source), ['state', 'import', file, '--force']);
      expect(imported.code).toBe(1);
      expect(imported.out).toContain(`sluice: STATE_FILE: ${file} is not a sluice state file`);
      expect(imported.out).toMatch(/position\.pos: Invalid input: expected number, received string/);
      expect(await source.state()).toEqual(before);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
