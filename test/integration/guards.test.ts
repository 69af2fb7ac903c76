import mysql from 'mysql2/promise';
import { describe, expect, inject, it } from 'vitest';
import { run } from '../../lib/cli/main.ts';
import { type BinlogPosition, comparePositions, parsePosition } from '../../lib/core/position.ts';
import { sourceStatus } from '../../lib/ops/status.ts';
import { cliEnv } from '../support/cli.ts';
import { expectExactlyOnce, materialize, type TestSource, testSource } from '../support/source.ts';

/** Runs `sluice` in-process against the test source; returns exit code and output. */
async function sluice(source: TestSource, args: string[]): Promise<{ code: number; out: string }> {
  const out: string[] = [];
  const io = { env: cliEnv(source), stdout: { write: (t: string) => out.push(t) }, stderr: { write: (t: string) => out.push(t) } };
  const code = await run(args, io);
  return { code, out: out.join('') };
}

/** An admin session with no default database. */
async function sessionWithoutDatabase() {
  const conn = await mysql.createConnection({ uri: inject('stackEnv').SLUICE_LOCAL_ADMIN_URL, multipleStatements: true });
  return Object.assign(conn, { [Symbol.asyncDispose]: () => conn.end() });
}

async function masterPosition(source: TestSource): Promise<BinlogPosition> {
  const [status] = await source.sql('SHOW MASTER STATUS');
  return { file: String(status?.File), pos: Number(status?.Position) };
}

/**
 * Writes `statements` in a session with its own settings, then checks that capture stops before
 * that transaction, keeps stopping, records the error, and that the recovery the message gives
 * (skip to the transaction's end, re-snapshot the tables) ends with exact output.
 */
async function expectStopAndRecover(source: TestSource, statements: string | (() => Promise<unknown>), code: string, message: RegExp) {
  const written = await masterPosition(source);
  if (typeof statements === 'string') await source.sql(statements);
  else await statements();
  await source.sql("INSERT INTO t VALUES (500, 500, 'after', 'after', X'05')"); // a later, valid transaction
  const failure = await source.capture().then(
    () => undefined,
    (error: Error & { code?: string }) => error,
  );
  expect(failure).toMatchObject({ code });
  const text = failure?.message ?? '';
  expect(text).toMatch(message);
  expect(text).toContain(`${source.db}.t`);
  const start = parsePosition(/the position stays at (\S+:\d+)\./.exec(text)?.[1] ?? '');
  const skip = /`sluice state reset --to (position:\S+:\d+)`/.exec(text)?.[1] ?? '';
  expect(skip).not.toBe('');
  // The violating transaction lies after what was stored, and the stored position never passes its start.
  expect(comparePositions(start, written)).toBeGreaterThanOrEqual(0);
  const stored = (await source.state())?.position as BinlogPosition;
  expect(comparePositions(stored, start)).toBeLessThanOrEqual(0);
  await expect(source.capture()).rejects.toMatchObject({ code });
  expect(comparePositions((await source.state())?.position as BinlogPosition, start)).toBeLessThanOrEqual(0);
  expect((await sourceStatus(source.config, source.clients.store)).error?.code).toBe(code);
  expect((await sluice(source, ['status'])).out).toMatch(new RegExp(`^error\\s+${code}: the transaction at`, 'm'));

  // The recovery the message names: skip the transaction; the next run copies the table it changed again.
  expect(text).toContain(`the next run resets the tables it changed (${source.db}.t) and copies them again`);
  const reset = await sluice(source, ['state', 'reset', '--to', skip]);
  expect(reset.code).toBe(0);
  const resumed = await source.capture();
  expect(resumed.status).toBe('captured');
  expect((await source.clients.snapshots.activeJobs(source.config.sourceId)).map((job) => job.requested)).toEqual([[{ db: source.db, table: 't' }]]);
  await source.snapshot();
  expect((await sourceStatus(source.config, source.clients.store)).error).toBeUndefined();
  const events = await source.events();
  expect(new Set(events.map((e) => e.seq)).size).toBe(events.length);
  // The output materializes to the table (BLOBs are base64 in the output).
  const rows = await source.sql('SELECT id, a, b, c, TO_BASE64(d) AS d FROM t ORDER BY id');
  const output = [...materialize(events, 't').values()].sort((x, y) => Number(x.id) - Number(y.id));
  expect(output).toEqual(rows);
  // Nothing of the partial images reached the output.
  const rowEvents = events.filter((e) => e.op !== 't' && e.op !== 's');
  expect(rowEvents.filter((e) => e.key === null || Object.values(e.key).some((v) => v === null))).toEqual([]);
}

describe('stream guards (real MariaDB sessions)', () => {
  const table =
    "CREATE TABLE t (id INT PRIMARY KEY, a INT, b VARCHAR(20), c TEXT, d BLOB); INSERT INTO t VALUES (1,1,'x','t1',X'01'),(2,2,'y','t2',X'02'),(3,3,'z','t3',X'03'),(4,4,'w','t4',X'04')";

  for (const [setting, statement] of [
    ['MINIMAL', 'UPDATE t SET a = 10 WHERE id = 1'],
    ['MINIMAL', 'DELETE FROM t WHERE id = 2'],
    ['NOBLOB', 'UPDATE t SET a = 30 WHERE id = 3'],
    ['NOBLOB', 'DELETE FROM t WHERE id = 4'],
  ] as const) {
    it(`a ${setting} session's ${statement.split(' ')[0]} stops capture before it; skip + re-snapshot recovers exactly`, async () => {
      await using source = await testSource('rowimage');
      await source.sql(table);
      await source.capture();
      await source.capture();
      await expectStopAndRecover(
        source,
        `SET SESSION binlog_row_image = '${setting}'; ${statement}; SET SESSION binlog_row_image = 'FULL'`,
        'ROW_IMAGE_PARTIAL',
        new RegExp(`logged with a partial row image, without column\\(s\\) .*binlog_row_image=${setting}.*Fix: have the writer use binlog_row_image=FULL`),
      );
    });
  }

  it('rows of an XA PREPAREd transaction stop capture at the transaction; skip + re-snapshot recovers exactly', async () => {
    await using source = await testSource('xa');
    await source.sql(table);
    await source.capture();
    // A transaction manager's session, with no default database (qualified names).
    await using xa = await sessionWithoutDatabase();
    await expectStopAndRecover(
      source,
      () =>
        xa.query(
          `XA START 'x1'; INSERT INTO ${source.db}.t VALUES (10, 10, 'xa', 'xa', X'0A'); UPDATE ${source.db}.t SET a = 11 WHERE id = 1; XA END 'x1'; XA PREPARE 'x1'; XA COMMIT 'x1'`,
        ),
      'XA_PREPARED',
      /in an XA transaction prepared in two phases/,
    );
  });

  it('partial images and XA in tables that are not captured change nothing', async () => {
    await using source = await testSource('guardok');
    await using other = await testSource('guardnoise');
    await source.sql('CREATE TABLE a (id INT PRIMARY KEY, v TEXT)');
    await other.sql(table);
    await source.capture();
    await other.sql(
      "SET SESSION binlog_row_image = 'MINIMAL'; UPDATE t SET a = 10 WHERE id = 1; DELETE FROM t WHERE id = 2; SET SESSION binlog_row_image = 'FULL'",
    );
    await other.sql("XA START 'n1'; INSERT INTO t VALUES (20, 20, 'xa', 'xa', X'0A'); XA END 'n1'; XA PREPARE 'n1'; XA ROLLBACK 'n1'");
    await source.sql("INSERT INTO a VALUES (1, 'kept')");
    const result = await source.capture();
    expect(result.events).toBe(1);
    expect((await expectExactlyOnce(source, ['a'])).differences).toEqual([]);
  });
});
