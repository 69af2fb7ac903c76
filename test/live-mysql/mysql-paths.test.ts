import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';
import { describe, expect, inject, it } from 'vitest';
import { loadConfig } from '../../lib/config/config.ts';
import { comparePositions } from '../../lib/core/position.ts';
import { parseTableRef } from '../../lib/core/table-ref.ts';
import { dialectOf } from '../../lib/source/mysql/dialect/dialect.ts';
import { connect } from '../../lib/source/mysql/server.ts';
import { mysqlTarget } from '../../lib/source/mysql/target.ts';
import { verify } from '../../lib/verify/verify.ts';
import { cliEnv, sluice } from '../support/cli.ts';
import { type TestSource, testSource } from '../support/source.ts';

/*
 * Paths of MySQL that until now only the fake server or recorded binlogs had seen, on the live
 * 8.0.31: the consistent point of an account without RELOAD (as on RDS and Aurora, which refuse
 * FLUSH TABLES WITH READ LOCK), generated invisible primary keys, and partial JSON updates with a
 * FULL before image.
 */
describe('MySQL paths on the live server', () => {
  const stackEnv = inject('stackEnv');

  /** An account with sluice's replication grants plus `extra`, reached like sluice's own (caching_sha2_password over verified TLS); its URL. */
  async function account(source: TestSource, extra: string): Promise<string> {
    const user = `acct_${randomBytes(3).toString('hex')}`;
    const password = `pw-${randomBytes(6).toString('hex')}`;
    await source.sql(`CREATE USER '${user}'@'%' IDENTIFIED WITH caching_sha2_password BY '${password}'`);
    await source.sql(`GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT${extra} ON *.* TO '${user}'@'%'`);
    const url = new URL(stackEnv.SLUICE_MYSQL_URL as string);
    url.username = user;
    url.password = password;
    return url.toString();
  }

  /** Writes to `tables` (id INT, v INT; keyless ones too) from its own connection until stopped; how many statements ran. */
  function writer(db: string, tables: string[]) {
    let stopped = false;
    const done = (async () => {
      const conn = await mysql.createConnection({ uri: stackEnv.SLUICE_LOCAL_ADMIN_URL });
      let n = 0;
      try {
        while (!stopped) {
          const table = `\`${db}\`.${tables[n % tables.length]}`;
          const id = n % 97;
          await conn.query(
            n % 3 === 2
              ? `DELETE FROM ${table} WHERE id = ${id} LIMIT 1`
              : `INSERT INTO ${table} VALUES (${id + 1000 * (n % 2)}, ${n}) ON DUPLICATE KEY UPDATE v = ${n}`,
          );
          await conn.query(`UPDATE ${table} SET v = v + 1 WHERE id = ${(n * 7) % 97}`);
          n++;
        }
      } finally {
        await conn.end();
      }
      return n;
    })();
    // Its error, if any, is the test's when it stops the writer.
    done.catch(() => {});
    return {
      stop: async () => {
        stopped = true;
        return done;
      },
    };
  }

  it('an account without RELOAD (as on RDS and Aurora) pins the consistent point with LOCK TABLES … READ: writers wait, the position is where they waited', async () => {
    await using source = await testSource('lock_point');
    await source.sql('CREATE TABLE k (id INT, v INT)');
    const url = await account(source, ', LOCK TABLES');
    const conn = await connect(await mysqlTarget(loadConfig({ ...stackEnv, SLUICE_MYSQL_URL: url })));
    try {
      const end = async () => {
        const [[status]] = (await source.admin.query('SHOW MASTER STATUS')) as unknown as [[{ File: string; Position: number }]];
        return { file: status.File, pos: Number(status.Position) };
      };
      // Other test files write to the same server meanwhile: the point lies between the ends read around it.
      const before = await end();
      const point = await (await dialectOf(conn)).snapshotPoint(conn, [parseTableRef(`${source.db}.k`)]);
      if ('refused' in point) throw new Error(point.refused);
      expect(point.how).toBe('LOCK TABLES … READ');
      const after = await end();
      expect(comparePositions(before, point.position)).toBeLessThanOrEqual(0);
      expect(comparePositions(point.position, after)).toBeLessThanOrEqual(0);
      const blocked = await mysql.createConnection({ uri: stackEnv.SLUICE_LOCAL_ADMIN_URL });
      try {
        await blocked.query('SET SESSION lock_wait_timeout = 1');
        await expect(blocked.query(`INSERT INTO \`${source.db}\`.k VALUES (1, 1)`)).rejects.toMatchObject({ errno: 1205 });
        await point.end();
        await blocked.query(`INSERT INTO \`${source.db}\`.k VALUES (1, 1)`);
      } finally {
        await blocked.end();
      }
    } finally {
      await conn.end();
    }
  });

  it('through that account, a snapshot and verify of keyed and keyless tables while the app writes are exact', async () => {
    await using source = await testSource('lock_e2e', { SLUICE_STARTUP: 'initial', SLUICE_SNAPSHOT_PAGE_ROWS: '40' });
    await source.sql(
      'CREATE TABLE t (id INT PRIMARY KEY, v INT); CREATE TABLE k (id INT, v INT); INSERT INTO t SELECT seq, seq FROM seq_1_to_300; INSERT INTO k SELECT seq % 50, seq FROM seq_1_to_300',
    );
    const config = source.configWith({ SLUICE_MYSQL_URL: await account(source, ', LOCK TABLES'), SLUICE_STARTUP: 'initial' });
    const app = writer(source.db, ['k', 't']);
    await source.capture({ config });
    await source.snapshot({ config });
    await source.capture({ config });
    const statements = await app.stop();
    await source.capture({ config });
    expect(statements).toBeGreaterThan(20);

    const verdict = await verify({ config, s3: source.clients.s3, store: source.clients.store });
    expect(verdict.tables.map((t) => [t.table, t.status, t.missing, t.extra, t.differing])).toEqual([
      [`${source.db}.k`, 'compared', 0, 0, 0],
      [`${source.db}.t`, 'compared', 0, 0, 0],
    ]);
    expect(verdict.ok).toBe(true);
  });

  it('an account with neither RELOAD nor LOCK TABLES: doctor warns, verify refuses by name, naming both grants', async () => {
    await using source = await testSource('lock_none');
    await source.sql('CREATE TABLE t (id INT PRIMARY KEY)');
    const url = await account(source, '');
    const doctor = await sluice(['doctor'], cliEnv(source, { SLUICE_MYSQL_URL: url }));
    expect(doctor.code, doctor.stdout).toBe(0);
    expect(doctor.stdout).toMatch(/WARN {2}the MySQL user holds neither RELOAD nor LOCK TABLES on \*\.\*: keyless tables cannot be snapshotted/);
    const config = source.configWith({ SLUICE_MYSQL_URL: url });
    await source.capture({ config });
    const refusal = await verify({ config, s3: source.clients.s3, store: source.clients.store }).catch((error: unknown) => error);
    expect(refusal).toMatchObject({ code: 'VERIFY_UNSUPPORTED' });
    expect((refusal as Error).message).toMatch(/GRANT RELOAD ON \*\.\*.*GRANT LOCK TABLES ON \*\.\*/);
  });

  it('a generated invisible primary key (sql_generate_invisible_primary_key) keys the table: snapshot and stream carry my_row_id, verify is exact', async () => {
    await using source = await testSource('gipk', { SLUICE_STARTUP: 'initial', SLUICE_SNAPSHOT_PAGE_ROWS: '7' });
    await source.sql(
      "SET SESSION sql_generate_invisible_primary_key = ON; CREATE TABLE g (a INT, b VARCHAR(10)); SET SESSION sql_generate_invisible_primary_key = OFF; INSERT INTO g (a, b) SELECT seq, CONCAT('b', seq) FROM seq_1_to_20",
    );
    await source.capture();
    await source.snapshot();
    await source.sql("UPDATE g SET b = 'changed' WHERE a <= 3; DELETE FROM g WHERE a = 4; INSERT INTO g (a, b) VALUES (21, 'new')");
    await source.capture();

    const events = (await source.events()).filter((e) => e.table === 'g');
    const updated = events.find((e) => e.op === 'u');
    expect(updated?.key).toEqual({ my_row_id: 1 });
    expect(Object.keys(updated?.after ?? {})).toEqual(['my_row_id', 'a', 'b']);
    expect(events.find((e) => e.op === 'd')?.key).toEqual({ my_row_id: 4 });
    expect(events.filter((e) => e.op === 'r').map((e) => e.key)).toContainEqual({ my_row_id: 20 });
    const verdict = await verify({ config: source.config, s3: source.clients.s3, store: source.clients.store });
    expect(verdict.tables).toMatchObject([{ table: `${source.db}.g`, status: 'compared', mysqlRows: 20, compared: 20, missing: 0, extra: 0, differing: 0 }]);
  });

  it('partial JSON updates (binlog_row_value_options=PARTIAL_JSON, FULL before image) are applied to the document as MySQL did', async () => {
    await using source = await testSource('partial_json');
    await source.sql('CREATE TABLE j (id INT PRIMARY KEY, doc JSON, n INT)');
    await source.capture();
    await source.sql(
      `INSERT INTO j VALUES (1, '{"a": 1, "b": [1, 2, 3], "c": {"d": "text", "e": null}}', 0), (2, '[1, {"x": "y"}, "z"]', 0), (3, '{"big": "${'x'.repeat(300)}", "small": 1}', 0), (4, NULL, 0)`,
    );
    // Other test files write to the same server and rotate its binlog: the partial updates are read from here on.
    const [[from]] = (await source.admin.query('SHOW MASTER STATUS')) as unknown as [[{ File: string; Position: number }]];
    await source.sql(
      [
        'SET SESSION binlog_row_value_options = PARTIAL_JSON',
        `UPDATE j SET doc = JSON_SET(doc, '$.a', 2, '$.c.d', 'new text', '$.f', JSON_OBJECT('g', 1.5)) WHERE id = 1`,
        `UPDATE j SET doc = JSON_REPLACE(doc, '$[1].x', 'w'), n = n + 1 WHERE id = 2`,
        `UPDATE j SET doc = JSON_REMOVE(doc, '$.b[1]', '$.c.e') WHERE id = 1`,
        `UPDATE j SET doc = JSON_SET(doc, '$.big', 'short') WHERE id = 3`,
        `UPDATE j SET doc = JSON_REPLACE(doc, '$.small', 'x') WHERE id = 3`,
        `UPDATE j SET doc = JSON_SET(doc, '$.absent', 1) WHERE id = 4`,
        'SET SESSION binlog_row_value_options = DEFAULT',
      ].join('; '),
    );
    await source.capture();

    // The server did write partial updates: otherwise this test would show nothing.
    const [logs] = (await source.admin.query('SHOW BINARY LOGS')) as unknown as [{ Log_name: string }[]];
    let partial = 0;
    for (const { Log_name: file } of logs.filter((l) => l.Log_name >= from.File)) {
      const [events] = (await source.admin.query(`SHOW BINLOG EVENTS IN ? FROM ?`, [file, file === from.File ? Number(from.Position) : 4])) as unknown as [
        { Event_type: string }[],
      ];
      partial += events.filter((e) => e.Event_type === 'Update_rows_partial').length;
    }
    expect(partial).toBeGreaterThanOrEqual(5);

    const verdict = await verify({ config: source.config, s3: source.clients.s3, store: source.clients.store });
    expect(verdict.tables).toMatchObject([{ table: `${source.db}.j`, status: 'compared', mysqlRows: 4, compared: 4, missing: 0, extra: 0, differing: 0 }]);
    const after = new Map((await source.events()).filter((e) => e.op === 'u').map((e) => [e.key?.id, e.after?.doc]));
    expect(JSON.parse(String(after.get(1)))).toEqual({ a: 2, b: [1, 3], c: { d: 'new text' }, f: { g: 1.5 } });
  });
});
