import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { DuckDBInstance } from '@duckdb/node-api';
import mysql from 'mysql2/promise';
import { describe, expect, it } from 'vitest';
import { materialize } from '../../lib/materialize/write.ts';
import { verify } from '../../lib/verify/verify.ts';
import { cliEnv, sluice } from '../support/cli.ts';
import { testSource } from '../support/source.ts';
import { stallingProxy } from '../support/stalling-proxy.ts';

describe('sluice verify / materialize (real stack, DuckDB)', () => {
  it('passes on a correct output and finds a changed value, a lost event and an injected row, with examples', async () => {
    await using source = await testSource('verify', { SLUICE_STARTUP: 'initial', SLUICE_SNAPSHOT_PAGE_ROWS: '100' });
    await source.sql(
      "CREATE TABLE a (id BIGINT UNSIGNED PRIMARY KEY, v VARCHAR(20), d DECIMAL(10,2), t DATETIME(6)); INSERT INTO a SELECT seq, CONCAT('v', seq), seq / 4, '2024-01-01 00:00:00.000001' FROM seq_1_to_300; INSERT INTO a VALUES (18446744073709551615, 'max', 1.5, '2024-02-29 23:59:59.999999')",
    );
    await source.capture();
    await source.snapshot();
    await source.sql("UPDATE a SET v = 'changed' WHERE id <= 5; DELETE FROM a WHERE id BETWEEN 6 AND 8; INSERT INTO a VALUES (1000, 'new', 0, NOW(6))");
    await source.capture();
    const deps = { config: source.config, s3: source.clients.s3, store: source.clients.store };

    const clean = await verify(deps);
    expect(clean.ok).toBe(true);
    expect(clean.tables[0]).toMatchObject({ table: `${source.db}.a`, mysqlRows: 299, outputRows: 299, compared: 299, missing: 0, extra: 0, differing: 0 });

    // Tamper with one committed binlog object: change a value, drop an event, inject a row.
    const manifest = (await source.manifests()).find((m) => m.commit_seq !== undefined && m.events > 0);
    const key = manifest?.objects[0]?.key ?? '';
    const lines = gunzipSync(await getObject(source, key))
      .toString()
      .split('\n')
      .filter(Boolean);
    const tampered = lines
      .filter((l) => !l.includes('"key":{"id":1000}'))
      .map((l) => (l.includes('"key":{"id":2}') ? l.replace('"v":"changed"', '"v":"CHANGED"') : l));
    tampered.push(lines[0]?.replace('"key":{"id":1}', '"key":{"id":424242}').replace('"after":{"id":1,', '"after":{"id":424242,') ?? '');
    await source.clients.s3.send(new PutObjectCommand({ Bucket: source.config.bucket, Key: key, Body: gzipSync(`${tampered.join('\n')}\n`) }));

    const broken = await verify(deps);
    expect(broken.ok).toBe(false);
    const t = broken.tables[0];
    expect(t).toMatchObject({ missing: 1, extra: 1, differing: 1 });
    expect(t?.examples.missing).toEqual(['{"id":1000}']);
    expect(t?.examples.extra).toEqual(['{"id":424242}']);
    expect(t?.examples.differing[0]).toMatchObject({ key: '{"id":2}', columns: ['v'] });
    expect(t?.examples.differing[0]?.output).toContain('CHANGED');

    // The CLI exits non-zero and prints the examples.
    const cli = await sluice(['verify'], cliEnv(source));
    expect(cli.code).toBe(1);
    expect(cli.stdout).toMatch(/DIFF {2}.*1 missing, 1 extra, 1 differing/);
    expect(cli.stdout).toMatch(/differs \{"id":2\} in v/);
  });

  it('is exact on a live source: changes after the output position are skipped, not reported', async () => {
    await using source = await testSource('verifylive');
    await source.sql("CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(20), n INT); INSERT INTO a SELECT seq, 'x', seq FROM seq_1_to_200");
    await source.capture();
    await source.snapshot({ tables: [`${source.db}.a`] });
    await source.sql('UPDATE a SET n = n + 1 WHERE id <= 50; ALTER TABLE a ADD COLUMN extra INT NULL; UPDATE a SET extra = 7 WHERE id > 190');
    await source.capture();
    // The output now lags: these changes are in MySQL but not captured, and a writer keeps going.
    await source.sql("UPDATE a SET v = 'late' WHERE id BETWEEN 100 AND 110; DELETE FROM a WHERE id = 150");
    const conn = await mysql.createConnection({ uri: process.env.SLUICE_LOCAL_ADMIN_URL, database: source.db });
    let running = true;
    const writer = (async () => {
      while (running) await conn.query('UPDATE a SET n = n + 1 WHERE id = ?', [1 + Math.floor(Math.random() * 200)]);
    })();
    let verdict: Awaited<ReturnType<typeof verify>>;
    try {
      verdict = await verify({ config: source.config, s3: source.clients.s3, store: source.clients.store });
    } finally {
      running = false;
      await writer;
      await conn.end();
    }
    expect(verdict.tables[0]).toMatchObject({ missing: 0, extra: 0, differing: 0 });
    expect(verdict.tables[0]?.skipped).toBeGreaterThanOrEqual(12);
    expect(verdict.ok).toBe(true);
  });

  it('lists the changes after the output position through to the end, though the binlog stream pauses', async () => {
    await using source = await testSource('verifystall');
    await source.sql("CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(20)); INSERT INTO a SELECT seq, 'x' FROM seq_1_to_20");
    await source.capture();
    await source.snapshot({ tables: [`${source.db}.a`] });
    await source.capture();
    // Not captured: the output lags behind these.
    await source.sql("UPDATE a SET v = 'late' WHERE id <= 5; DELETE FROM a WHERE id = 20");
    // Pauses of 1.5 s: three times the scan's idle tick.
    const proxy = await stallingProxy(new URL(source.config.mysqlUrl ?? ''), 1500);
    try {
      const verdict = await verify({ config: { ...source.config, mysqlUrl: proxy.url }, s3: source.clients.s3, store: source.clients.store });
      expect(verdict.tables[0]).toMatchObject({ missing: 0, extra: 0, differing: 0, skipped: 6 });
      expect(verdict.ok).toBe(true);
    } finally {
      await proxy.close();
    }
  });

  it('materializes a table to Parquet and JSON Lines that DuckDB reads back', async () => {
    await using source = await testSource('materialize');
    await source.sql('CREATE TABLE a (id BIGINT UNSIGNED PRIMARY KEY, v VARCHAR(20), d DECIMAL(10,2))');
    await source.capture();
    await source.sql(
      "INSERT INTO a VALUES (1,'one',1.50),(2,'two',2.00),(18446744073709551615,'max',0.01); UPDATE a SET v = 'uno' WHERE id = 1; DELETE FROM a WHERE id = 2",
    );
    await source.capture();
    const dir = mkdtempSync(join(tmpdir(), 'sluice-mat-'));
    const deps = { config: source.config, s3: source.clients.s3 };
    const table = { db: source.db, table: 'a' };
    expect((await materialize(deps, table, { out: join(dir, 'a.parquet') })).rows).toBe(2);
    expect((await materialize(deps, table, { out: join(dir, 'a.jsonl') })).rows).toBe(2);
    const duck = await (await DuckDBInstance.create(':memory:')).connect();
    for (const from of [`'${join(dir, 'a.parquet')}'`, `read_json('${join(dir, 'a.jsonl')}', columns = {id: 'UBIGINT', v: 'VARCHAR', d: 'VARCHAR'})`]) {
      const rows = (await duck.runAndReadAll(`SELECT id::VARCHAR AS id, v, d::VARCHAR AS d FROM ${from} ORDER BY v`)).getRowObjects();
      expect(rows.map((r) => [r.id, r.v, String(r.d)])).toEqual([
        ['18446744073709551615', 'max', '0.01'],
        ['1', 'uno', '1.50'],
      ]);
    }
    await expect(materialize(deps, table, { out: join(dir, 'a.csv') })).rejects.toThrow(/\.parquet or \.jsonl/);
  });
});

async function getObject(source: Awaited<ReturnType<typeof testSource>>, key: string): Promise<Buffer> {
  const { GetObjectCommand } = await import('@aws-sdk/client-s3');
  const object = await source.clients.s3.send(new GetObjectCommand({ Bucket: source.config.bucket, Key: key }));
  return Buffer.from(await (object.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray());
}
