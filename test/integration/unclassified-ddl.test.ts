import { describe, expect, it } from 'vitest';
import { comparePositions, parsePosition } from '../../lib/core/position.ts';
import { ErrorCode, SluiceError } from '../../lib/errors.ts';
import type { Log } from '../../lib/log.ts';
import { sourceStatus } from '../../lib/ops/status.ts';
import { mysqlTarget } from '../../lib/source/mysql/target.ts';
import { fold, loadHistory, mysqlRows } from '../support/fold.ts';
import { type TestSource, testSource } from '../support/source.ts';

/*
 * A DDL statement MariaDB accepts and sluice cannot classify (docs/RUNBOOK.md, "DDL sluice cannot
 * classify"): a column added under sql_mode=ORACLE, whose type names are other types (VARCHAR2;
 * DATE would be DATETIME), so sluice does not read its column definitions. Its DEFAULT fills the
 * existing rows, which the binlog never shows. By default (SLUICE_DDL_UNKNOWN=resnapshot) the table
 * is reset and copied again while the other tables stream on; with SLUICE_DDL_UNKNOWN=stop the
 * source stops before it with DDL_UNKNOWN, as before.
 */

const UNCLASSIFIED = "SET SESSION sql_mode = 'ORACLE'; ALTER TABLE a ADD COLUMN note VARCHAR2(20) DEFAULT 'filled'; SET SESSION sql_mode = DEFAULT";

async function start(name: string, settings: Record<string, string> = {}): Promise<TestSource> {
  const source = await testSource(name, { SLUICE_STARTUP: 'initial', ...settings });
  await source.sql(
    `CREATE TABLE a (id INT PRIMARY KEY, v INT);
     CREATE TABLE b (id INT PRIMARY KEY, v VARCHAR(10));
     INSERT INTO a VALUES (1, 10), (2, 20), (3, 30);
     INSERT INTO b VALUES (1, 'one')`,
  );
  await source.capture();
  expect((await source.snapshot()).complete).toBe(true);
  return source;
}

/** A log that keeps its warnings. */
function recordingLog(): Log & { warnings: { message: string; fields: Record<string, unknown> }[] } {
  const warnings: { message: string; fields: Record<string, unknown> }[] = [];
  return {
    debug() {},
    info() {},
    error() {},
    warn: ((message: string, fields: Record<string, unknown>) => warnings.push({ message, fields })) as Log['warn'],
    warnings,
  };
}

describe('DDL sluice cannot classify (real MariaDB)', () => {
  it('re-copies only the table it touches by default, while the other table streams on in the same runs', async () => {
    await using source = await start('unclassified');
    await source.sql(
      `INSERT INTO a VALUES (4, 40); UPDATE b SET v = 'uno' WHERE id = 1; ${UNCLASSIFIED}; UPDATE a SET v = 11 WHERE id = 1; INSERT INTO b VALUES (2, 'two')`,
    );
    const log = recordingLog();
    const metrics: [string, number][] = [];
    await source.capture({ log, metrics: { addMetric: (name, _unit, value) => metrics.push([name, value]) } });

    // The decision is visible: the table's `t` event, the schema history, the log, the metric, status.
    const events = await source.events();
    const reset = events.find((e) => e.table === 'a' && e.op === 't');
    expect(reset?.ddl).toMatchObject({ kind: 'resnapshot', decided_by: 'sluice' });
    expect(JSON.parse(reset?.raw ?? '{}').ddl.decided_by).toBe('sluice');
    // b kept flowing past the statement, in the same run.
    expect(events.filter((e) => e.table === 'b' && e.op === 'c' && e.seq > (reset?.seq ?? ''))).toHaveLength(1);
    const history = await loadHistory(source.clients.s3, source.config.bucket, source.config.prefix, source.config.sourceId, source.db, 'a');
    const latest = [...history.values()].at(-1) as unknown as { ddl: { kind: string; decided_by?: string; reason?: string; statement?: string } };
    expect(latest.ddl).toMatchObject({ kind: 'resnapshot', decided_by: 'sluice' });
    expect(latest.ddl.reason).toMatch(/ORACLE/);
    expect(log.warnings).toEqual([
      expect.objectContaining({
        fields: expect.objectContaining({ tables: [`${source.db}.a`], position: `${reset?.ddl?.position?.file}:${reset?.ddl?.position?.pos}` }),
      }),
    ]);
    expect(metrics.filter(([name]) => name === 'UnclassifiedDdlResnapshots')).toEqual([['UnclassifiedDdlResnapshots', 1]]);
    const status = await sourceStatus(source.config, source.clients.store, Date.now(), source.clients.s3);
    expect(status.error).toBeUndefined();
    expect(status.unclassifiedDdl).toEqual([
      expect.objectContaining({
        table: `${source.db}.a`,
        kind: 'resnapshot',
        decidedBy: 'sluice',
        position: `${reset?.ddl?.position?.file}:${reset?.ddl?.position?.pos}`,
      }),
    ]);
    const jobs = await source.clients.snapshots.activeJobs(source.config.sourceId);
    expect(jobs.map((j) => [j.requested, j.reason])).toEqual([[[{ db: source.db, table: 'a' }], expect.stringMatching(/^DDL sluice cannot classify: /)]]);

    // The copy runs; changes go on meanwhile and after.
    await source.sql('UPDATE a SET v = 21 WHERE id = 2; DELETE FROM b WHERE id = 2; INSERT INTO a (id, v) VALUES (5, 50)');
    expect((await source.snapshot()).complete).toBe(true);
    await source.sql("UPDATE a SET note = 'later' WHERE id = 3; INSERT INTO b VALUES (3, 'three')");
    await source.capture();

    const all = await source.events();
    const target = await mysqlTarget(source.config);
    for (const table of ['a', 'b']) {
      const versions = await loadHistory(source.clients.s3, source.config.bucket, source.config.prefix, source.config.sourceId, source.db, table);
      expect(
        fold(
          all.filter((e) => e.table === table),
          versions,
        ),
        table,
      ).toEqual(await mysqlRows(target, source.db, table));
    }
    // The filled column is in the output as MariaDB holds it.
    expect((await mysqlRows(target, source.db, 'a')).some((row) => row.includes('"note":"filled"'))).toBe(true);
    // b was never re-copied: its one snapshot row is the initial copy's.
    expect(all.filter((e) => e.table === 'b' && e.op === 't')).toEqual([]);
    expect(all.filter((e) => e.table === 'b' && e.op === 'r')).toHaveLength(1);
  });

  it('stops with DDL_UNKNOWN before the statement with SLUICE_DDL_UNKNOWN=stop, until an operator decides', async () => {
    await using source = await start('unclassifiedstop', { SLUICE_DDL_UNKNOWN: 'stop' });
    const before = (await source.state())?.position;
    await source.sql(`INSERT INTO b VALUES (2, 'two'); ${UNCLASSIFIED}; INSERT INTO a (id, v) VALUES (4, 40)`);
    const stopped = await source.capture().catch((error: unknown) => error);
    expect(stopped).toBeInstanceOf(SluiceError);
    expect((stopped as SluiceError).code).toBe(ErrorCode.DDL_UNKNOWN);
    const position = /at (\S+:\d+) touches/.exec((stopped as Error).message)?.[1] as string;
    expect((stopped as Error).message).toContain('SLUICE_DDL_UNKNOWN=stop');
    const status = await sourceStatus(source.config, source.clients.store, Date.now(), source.clients.s3);
    expect(status.error?.code).toBe('DDL_UNKNOWN');
    expect(status.unclassifiedDdl).toBeUndefined();
    // Nothing after the statement was written; the position is before it.
    expect((await source.events()).filter((e) => e.table === 'a' && e.op !== 'r')).toEqual([]);
    const stored = (await source.state())?.position;
    expect(stored && before && comparePositions(stored, before) >= 0 && comparePositions(stored, parsePosition(position)) < 0).toBe(true);

    // The operator's decision for that position: the same re-copy, recorded as theirs.
    await source.capture({ config: source.configWith({ SLUICE_DDL_UNKNOWN: 'stop', SLUICE_DDL_OVERRIDES: `${position}=resnapshot` }) });
    const reset = (await source.events()).find((e) => e.table === 'a' && e.op === 't');
    expect(reset?.ddl).toMatchObject({ kind: 'resnapshot', decided_by: 'operator' });
    expect(((await sourceStatus(source.config, source.clients.store, Date.now(), source.clients.s3)).unclassifiedDdl ?? []).map((d) => d.decidedBy)).toEqual([
      'operator',
    ]);
    expect((await source.snapshot()).complete).toBe(true);
    const target = await mysqlTarget(source.config);
    const all = await source.events();
    for (const table of ['a', 'b']) {
      const versions = await loadHistory(source.clients.s3, source.config.bucket, source.config.prefix, source.config.sourceId, source.db, table);
      expect(
        fold(
          all.filter((e) => e.table === table),
          versions,
        ),
        table,
      ).toEqual(await mysqlRows(target, source.db, table));
    }
  });
});
