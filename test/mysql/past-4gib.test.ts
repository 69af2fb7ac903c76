import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { BinlogPosition } from '../../lib/core/position.ts';
import { sluice } from '../support/cli.ts';
import { type Fixture, fixtures, requireFixtures } from './fixtures.ts';
import { captureSource, errorCode, prepareSchema, replay, rowsTheSqlLeaves } from './replay-helpers.ts';

requireFixtures();

/*
 * A binlog file past 4 GiB (issue #27), through the replay source: mysqlbinlog2parquet's three
 * files (mysql-bin.000005-7, MySQL 8.0.46, gtid_mode ON), the first one presented as its server
 * would have written it had its third transaction also held 4 GiB of rows of a table sluice does
 * not capture (test/support/mysql-replay/README.md, "Files past 4 GiB"). That transaction's XID then
 * ends at 4 GiB exactly (log_pos 0), the four transactions after it past 4 GiB (log_pos wrapped).
 *
 *   recorded    presented          mysql-bin.000005
 *   197 … 877   197 … 877          T1, T2 (gno 7, 8): CREATE TABLEs
 *   877 … 1390  877 … 2^32         T3 (gno 9): an insert, then 4 GiB of rows of another table, its XID
 *   1390 …      + 2^32 - 1390      T4 … T7 (gno 10 … 13), then the ROTATE to mysql-bin.000006
 */

const G = 2 ** 32;
const FILE = 'mysql-bin.000005';
const grow = { file: FILE, at: 1_359, bytes: G - 1_390 };
/** Where an event the recording has at `recorded` (at or after T3's XID) is presented. */
const past = (recorded: number) => recorded + grow.bytes;
const UUID = '8a18b986-434f-11f1-a27f-ce6a53da2f24';
/**
 * The whole history but mysql-bin.000007's last event, its ROTATE to a mysql-bin.000008 no file is
 * served as: so the binlog end a run reads at its start is a position the stream reaches, and
 * `capture --once` stops there instead of waiting out its time.
 */
const whole = { file: 'mysql-bin.000007', pos: 1_934 };
const TABLES = ['customers', 'items', 'accounts', 'metrics'];

type Event = Record<string, unknown> & { seq: string; op: string; source: { file: string; pos: number; gtid: string } };
const changes = (events: Record<string, unknown>[]) => (events as Event[]).filter((e) => ['c', 'u', 'd'].includes(e.op));
const gno = (e: Event) => Number(e.source.gtid.split(':')[1]);

async function expectedTables(): Promise<Map<string, string[]>> {
  return rowsTheSqlLeaves(
    ['mysqlbinlog2parquet--01-basic-crud.sql', 'mysqlbinlog2parquet--02-multi-statement-txn.sql', 'mysqlbinlog2parquet--03-mixed-types.sql'],
    1777414441,
    TABLES,
  );
}

/** `sluice status --json`'s stored position. */
async function stored(env: Record<string, string | undefined>): Promise<BinlogPosition | undefined> {
  const { stdout } = await sluice(['status', '--json'], env);
  return (JSON.parse(stdout) as { stored?: BinlogPosition }).stored;
}

describe('a binlog file past 4 GiB (replay source)', () => {
  const fixture = fixtures().find((f) => f.files.length === 3) as Fixture;

  it('capture reads across 4 GiB and stops past it with the exact position; the next run resumes there by GTID; every transaction once, in binlog order', {
    timeout: 300_000,
  }, async () => {
    await prepareSchema(fixture);
    const id = `replay_${randomBytes(4).toString('hex')}`;

    // Run 1: the server had written up to T5's end, past 4 GiB; the run reads the file from its start.
    const t5 = past(2_358);
    {
      await using server = await replay(fixture, { grow, until: { file: FILE, pos: t5 } });
      const source = await captureSource(fixture, server, 'earliest', id);
      const run = await source.capture('--seconds', '240');
      expect({ code: run.code, error: run.code === 0 ? undefined : errorCode(run) }, run.stderr).toEqual({ code: 0, error: undefined });
      // (A position also carries its last transaction's time, gtidTime, since positions are followed across servers.)
      expect(await stored(source.env)).toMatchObject({ file: FILE, pos: t5, gtid: `${UUID}:11`, gtidSet: `${UUID}:1-11` });
      const last = (await source.manifests()).at(-1);
      expect(last?.position?.to).toMatchObject({ file: FILE, pos: t5, gtid: `${UUID}:11`, gtidSet: `${UUID}:1-11` });
    }

    // Run 2: the whole history; the dump starts at T5's end by COM_BINLOG_DUMP_GTID (an 8-byte offset).
    const dumps: string[] = [];
    await using server = await replay(fixture, { grow, until: whole, onStatement: (sql) => sql.startsWith('(binlog dump') && dumps.push(sql) });
    const source = await captureSource(fixture, server, 'earliest', id);
    const run = await source.capture('--seconds', '240');
    expect({ code: run.code, error: run.code === 0 ? undefined : errorCode(run) }, run.stderr).toEqual({ code: 0, error: undefined });
    expect(dumps.filter((d) => d.startsWith(`(binlog dump ${FILE}:`))).toEqual([`(binlog dump ${FILE}:${t5} gtid ${UUID}:1-11)`]);

    // The tables are what the producing SQL leaves, and no change was written twice.
    const expected = await expectedTables();
    for (const t of TABLES) expect(await source.materialized('binlogtest', t), t).toEqual(expected.get(t));
    const events = changes(await source.events());
    expect(new Set(events.map((e) => e.seq)).size).toBe(events.length);
    expect(events.length).toBe(5 + 2 + 1 + 2 + 2 + 3 + 1);

    // Each transaction's events carry the exact end offset of its first (GTID) event: T3 below 4 GiB,
    // T4-T7 past it; and in seq order the transactions are in binlog (here: GTID) order.
    const firstEvent = new Map(events.filter((e) => e.source.file === FILE).map((e) => [gno(e), e.source.pos]));
    expect(Object.fromEntries(firstEvent)).toEqual({ 9: 956, 10: past(1_469), 11: past(1_985), 12: past(2_437), 13: past(2_930) });
    const bySeq = [...events].sort((a, b) => (a.seq < b.seq ? -1 : 1));
    expect(bySeq.map(gno)).toEqual([...bySeq.map(gno)].sort((a, b) => a - b));
    expect(bySeq.find((e) => gno(e) === 10)?.seq).toBe('0000000005.004294967375.0000000000');
    // Commits store their exact ends: T3's XID ends at 4 GiB exactly (its header says 0). T3 wrote no
    // captured row, so whether a commit is cut at its end is the batch policy's choice; every end is exact.
    const ends = (await source.manifests()).map((m) => m.position?.to?.file === FILE && m.position.to.pos).filter((p) => p !== false);
    expect(ends).toEqual(expect.arrayContaining([518, 877, t5]));
    expect(ends.filter((p) => ![4, 518, 877, G, past(1_906), t5, past(2_851), past(3_262)].includes(p as number))).toEqual([]);
  });

  it('a position past 4 GiB without its GTID set (given by hand) re-reads the file from its start: a run too short stops with RESUME_PAST_4GIB writing nothing, the next reads T4 on, once', {
    timeout: 300_000,
  }, async () => {
    await prepareSchema(fixture);
    const dumps: string[] = [];
    await using server = await replay(fixture, { grow, until: whole, onStatement: (sql) => sql.startsWith('(binlog dump') && dumps.push(sql) });
    // T4's GTID event starts at 4 GiB exactly (SHOW BINLOG EVENTS prints it as its Pos).
    const source = await captureSource(fixture, server, `position:${FILE}:${G}`);

    const short = await sluice(['capture', '--once', '--seconds', '3'], { ...source.env, SLUICE_SAFETY_MARGIN_SECONDS: '1' });
    expect({ code: short.code === 0 ? 0 : 'failed', error: errorCode(short) }, short.stderr).toEqual({ code: 'failed', error: 'RESUME_PAST_4GIB' });
    expect(short.stderr).toMatch(new RegExp(`re-read ${FILE} from its start and had got to offset \\d+ of ${G} when its time was up; no change was read`));
    expect(changes(await source.events())).toEqual([]);
    expect(await stored(source.env)).toEqual({ file: FILE, pos: G });

    const run = await source.capture('--seconds', '240');
    expect({ code: run.code, error: run.code === 0 ? undefined : errorCode(run) }, run.stderr).toEqual({ code: 0, error: undefined });
    // Both runs dumped from the file's start (COM_BINLOG_DUMP cannot name an offset past 4 GiB), and
    // so did the first run to read the file's creation time before storing its start (historyAt).
    expect(dumps.filter((d) => d.startsWith(`(binlog dump ${FILE}:`))).toEqual(Array(3).fill(`(binlog dump ${FILE}:4)`));
    const events = changes(await source.events());
    // T4 on (the transactions with changes: files 6 and 7 open with a CREATE TABLE each), each once.
    expect([...new Set(events.map(gno))].sort((a, b) => a - b)).toEqual([10, 11, 12, 13, 15, 16, 18, 19]);
    expect(new Set(events.map((e) => e.seq)).size).toBe(events.length);
    expect(new Set(events.filter((e) => gno(e) === 10).map((e) => e.source.pos))).toEqual(new Set([past(1_469)]));
  });
});
