import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { GetObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { describe, expect, inject, it } from 'vitest';
import { run } from '../../lib/cli/main.ts';
import { segment, tablePath } from '../../lib/core/table-path.ts';
import { formatTableRef, type TableRef, tableKey } from '../../lib/core/table-ref.ts';
import type { SnapshotJob } from '../../lib/state/snapshot-store.ts';
import { cliEnv, sluice } from '../support/cli.ts';
import { type ChangeEvent, expectExactlyOnce, materialize, quoted, type TestSource, testSource } from '../support/source.ts';

// Issue 9, "Names": every database and table name lands in its own folder and round-trips through
// capture, snapshot, verify and materialize, whatever characters it holds.

const sqlName = (ref: TableRef) => `${quoted(ref.db)}.${quoted(ref.table)}`;

async function createTable(source: TestSource, ref: TableRef, rows: number, tag: string) {
  await source.sql(`CREATE TABLE ${sqlName(ref)} (id INT PRIMARY KEY, v VARCHAR(40))`);
  if (rows) await source.sql(`INSERT INTO ${sqlName(ref)} SELECT seq, CONCAT(?, '-', seq) FROM seq_1_to_${rows}`, [tag]);
}

/** The folder of a data object: `tables/<db-seg>/<table-seg>`. */
const folderOf = (source: TestSource, key: string) => key.slice(source.config.prefix.length).split('/').slice(0, 3).join('/');

/** `sluice materialize --table <text form>` in-process, read back as rows by id. */
async function materialized(env: Record<string, string | undefined>, ref: TableRef): Promise<Record<string, unknown>[]> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-names-'));
  try {
    const out: string[] = [];
    const io = { env, stdout: { write: (text: string) => out.push(text) }, stderr: { write: (text: string) => out.push(text) } };
    const code = await run(['materialize', '--table', formatTableRef(ref), '--out', join(dir, 'rows.jsonl')], io);
    expect(code, out.join('')).toBe(0);
    expect(out.join('')).toContain(`of ${formatTableRef(ref)} written`);
    return readFileSync(join(dir, 'rows.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .sort((a, b) => Number(a.id) - Number(b.id));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const mysqlRows = (source: TestSource, ref: TableRef) => source.sql(`SELECT id, v FROM ${sqlName(ref)} ORDER BY id`);

const eventsOf = (events: ChangeEvent[], ref: TableRef) => events.filter((e) => e.db === ref.db && e.table === ref.table);

describe('table names (real stack)', () => {
  it('tables whose joined names collide land in distinct folders and objects, through capture and snapshot', async () => {
    await using source = await testSource('collide');
    const dotTable: TableRef = { db: await source.database('x'), table: 'dot.ted' };
    const dotDb: TableRef = { db: await source.database('x.dot'), table: 'ted' };
    // MySQL cannot hold the slash pair: its data dictionary names both tables' tablespaces `<db>a/b/c`.
    const slashes = inject('stackServer') === 'mariadb';
    const slashDb: TableRef = { db: slashes ? await source.database('a/b') : '', table: 'c' };
    const slashTable: TableRef = { db: slashes ? await source.database('a') : '', table: 'b/c' };
    const all = slashes ? [slashDb, slashTable, dotTable, dotDb] : [dotTable, dotDb];
    // Joined with "/" or ".", each pair is one name: the failure this guards against.
    expect(`${dotTable.db}.${dotTable.table}`).toBe(`${dotDb.db}.${dotDb.table}`);
    if (slashes) {
      expect(`${slashDb.db}/${slashDb.table}`).toBe(`${slashTable.db}/${slashTable.table}`);
      await createTable(source, slashDb, 0, 'slashdb');
      await createTable(source, slashTable, 0, 'slashtable');
    }
    await createTable(source, dotTable, 5, 'dottable');
    await createTable(source, dotDb, 9, 'dotdb');
    await source.capture();

    // The snapshot of the two dotted tables copies each from its own table, named in the text form.
    const snapshot = await source.snapshot({ tables: [formatTableRef(dotTable), dotDb] });
    expect(snapshot.complete).toBe(true);
    expect(snapshot.rows).toBe(14);
    const planned = await source.clients.snapshots.job(source.db, snapshot.job.id);
    expect(planned?.tables?.map((t) => [t.db, t.table, t.id.replace(/@[0-9a-f]{8}$/, '')])).toEqual([
      [dotTable.db, dotTable.table, tablePath(dotTable)],
      [dotDb.db, dotDb.table, tablePath(dotDb)],
    ]);

    // One transaction writes all four tables.
    await source.sql(
      `START TRANSACTION; ${all.map((ref, i) => `INSERT INTO ${sqlName(ref)} VALUES (100, 'txn-${i}'), (101, 'txn-${i}'), (102, 'txn-${i}');`).join(' ')}
       UPDATE ${sqlName(dotTable)} SET v = 'updated' WHERE id = 2; DELETE FROM ${sqlName(dotDb)} WHERE id = 3; COMMIT`,
    );
    await source.capture();

    const manifests = await source.manifests();
    const commit = manifests.find((m) => m.commit_seq !== undefined && m.objects.length > 1);
    expect(commit?.objects).toHaveLength(all.length);
    expect(new Set(commit?.objects.map((o) => o.key)).size).toBe(all.length);
    expect(commit?.tables.map((t) => tableKey(t)).sort()).toEqual(all.map(tableKey).sort());
    for (const object of commit?.objects ?? []) expect(folderOf(source, object.key)).toBe(`tables/${segment(object.db)}/${segment(object.table)}`);
    const folders = new Set((await source.keys(`${source.config.prefix}tables/`)).map((k) => folderOf(source, k)));
    expect([...folders].sort()).toEqual(all.map((ref) => `tables/${tablePath(ref)}`).sort());

    const { events, duplicates, differences } = await expectExactlyOnce(source, all);
    expect(duplicates).toBe(0);
    expect(differences).toEqual([]);
    expect(eventsOf(events, dotTable).filter((e) => e.op === 'r')).toHaveLength(5);
    expect(eventsOf(events, dotTable).every((e) => !String(e.after?.v).startsWith('dotdb'))).toBe(true);
    expect(eventsOf(events, dotDb).filter((e) => e.op === 'r')).toHaveLength(9);

    const env = cliEnv(source, { SLUICE_INCLUDE: `${source.db}.*` });
    for (const ref of all) expect(await materialized(env, ref), formatTableRef(ref)).toEqual(await mysqlRows(source, ref));
  });

  it('tables named `..`, `_x`, with a space and a backtick, and in unicode: capture, snapshot, verify, materialize and --tables', async () => {
    await using source = await testSource('hostile');
    const db = await source.database('-ü.x=y');
    const refs: TableRef[] = ['..', '_x', 'sp ace`tick', 'café_ü€'].map((table) => ({ db, table }));
    for (const [i, ref] of refs.entries()) await createTable(source, ref, 20 + i, `t${i}`);
    await source.capture(); // the stream starts here; the existing rows come from the snapshot
    const env = cliEnv(source, { SLUICE_INCLUDE: `${source.db}.*`, SLUICE_SNAPSHOT_PAGE_ROWS: '7', SLUICE_SNAPSHOT_CHUNK_ROWS: '10' });
    const list = refs.map(formatTableRef).join(', ');
    expect(list).toBe([`\`${db}\`.\`..\``, `\`${db}\`.\`_x\``, `\`${db}\`.\`sp ace\`\`tick\``, `\`${db}\`.\`café_ü€\``].join(', '));

    const snapshot = await sluice(['snapshot', '--tables', list, '--workers', '2'], env);
    expect(snapshot.code, snapshot.stderr).toBe(0);
    expect(snapshot.stderr).toMatch(/\[#{30}\] 100% 86\/86 rows/);
    expect(snapshot.stdout).toMatch(/: 86 rows in \d+ pages this run; complete/);
    const status = JSON.parse((await sluice(['status', '--json'], env)).stdout);
    expect(status.snapshot.tables.map((t: { table: string; ref: TableRef; rows: number }) => [t.table, t.ref, t.rows])).toEqual(
      refs.map((ref, i) => [formatTableRef(ref), ref, 20 + i]),
    );
    expect((await sluice(['status'], env)).stdout).toContain(`  ${formatTableRef(refs[2] as TableRef)}`);

    await source.sql(
      `START TRANSACTION; ${refs.map((ref, i) => `UPDATE ${sqlName(ref)} SET v = 'upd-${i}' WHERE id <= 3; DELETE FROM ${sqlName(ref)} WHERE id BETWEEN 10 AND 12; INSERT INTO ${sqlName(ref)} VALUES (500, 'new-${i}');`).join(' ')} COMMIT`,
    );
    await source.capture();

    const { events, duplicates, differences } = await expectExactlyOnce(source, refs);
    expect(duplicates).toBe(0);
    expect(differences).toEqual([]);
    for (const [i, ref] of refs.entries()) expect(eventsOf(events, ref).filter((e) => e.op === 'r')).toHaveLength(20 + i);
    const folders = new Set((await source.keys(`${source.config.prefix}tables/`)).map((k) => folderOf(source, k)));
    expect([...folders].sort()).toEqual(['%2E%2E', '%5Fx', 'sp%20ace%60tick', 'caf%C3%A9_%C3%BC%E2%82%AC'].map((t) => `tables/${segment(db)}/${t}`).sort());
    expect(segment(db)).toBe(`${source.db}%2D%C3%BC%2Ex%3Dy`);
    for (const ref of refs) expect(await materialized(env, ref), formatTableRef(ref)).toEqual(await mysqlRows(source, ref));

    const verified = await sluice(['verify', '--tables', list], env);
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
    for (const ref of refs) expect(verified.stdout).toMatch(new RegExp(`^ok {4}${literally(formatTableRef(ref))}: \\d+ rows compared`, 'm'));

    // Plant a difference in the `..` table's binlog object: verify finds it there and only there.
    const object = (await source.manifests()).flatMap((m) => (m.commit_seq === undefined ? [] : m.objects)).find((o) => o.table === '..');
    const key = object?.key ?? '';
    expect(key).toContain(`/${segment(db)}/%2E%2E/`);
    const body = await source.clients.s3.send(new GetObjectCommand({ Bucket: source.config.bucket, Key: key }));
    const text = gunzipSync(Buffer.from(await (body.Body as { transformToByteArray(): Promise<Uint8Array> }).transformToByteArray())).toString();
    expect(text).toContain('"v":"upd-0"');
    await source.clients.s3.send(
      new PutObjectCommand({ Bucket: source.config.bucket, Key: key, Body: gzipSync(text.replace('"v":"upd-0"', '"v":"planted"')) }),
    );
    const broken = await sluice(['verify', '--tables', `${formatTableRef(refs[1] as TableRef)},${formatTableRef(refs[0] as TableRef)}`], env);
    expect(broken.code).toBe(1);
    expect(broken.stdout).toMatch(new RegExp(`^ok {4}${literally(formatTableRef(refs[1] as TableRef))}: `, 'm'));
    expect(broken.stdout).toMatch(new RegExp(`^DIFF {2}${literally(formatTableRef(refs[0] as TableRef))}: .*0 missing, 0 extra, 1 differing`, 'm'));
    expect(broken.stdout).toMatch(/planted/);
  });

  it("columns named like Object.prototype's accessors (`__proto__` the key): snapshot, capture, verify and materialize keep every value", async () => {
    await using source = await testSource('accessors');
    const ref: TableRef = { db: source.db, table: 'acc' };
    // `row.__proto__ = v` sets a prototype (the value is lost) and mysql2 refuses these field names.
    const names = ['__proto__', '__defineGetter__', '__defineSetter__', '__lookupGetter__', '__lookupSetter__', 'constructor', 'hasOwnProperty'];
    const [key, ...rest] = names.map(quoted);
    await source.sql(`CREATE TABLE ${sqlName(ref)} (${key} INT PRIMARY KEY, ${rest.map((c) => `${c} VARCHAR(20)`).join(', ')})`);
    const values = (n: string) => rest.map((_, i) => `CONCAT('${n}', ${i}, '-', seq)`).join(', ');
    await source.sql(`INSERT INTO ${sqlName(ref)} SELECT seq, ${values('s')} FROM seq_1_to_30`);
    await source.capture();
    const env = cliEnv(source, { SLUICE_INCLUDE: `${source.db}.*`, SLUICE_SNAPSHOT_PAGE_ROWS: '7', SLUICE_SNAPSHOT_CHUNK_ROWS: '10' });
    const snapshot = await sluice(['snapshot', '--tables', formatTableRef(ref), '--workers', '2'], env);
    expect(snapshot.code, snapshot.stderr).toBe(0);
    expect(snapshot.stdout).toMatch(/: 30 rows in \d+ pages this run; complete/);
    await source.sql(
      `START TRANSACTION; UPDATE ${sqlName(ref)} SET ${rest.map((c) => `${c} = CONCAT('u', ${c})`).join(', ')} WHERE ${key} <= 3; DELETE FROM ${sqlName(ref)} WHERE ${key} = 10; INSERT INTO ${sqlName(ref)} SELECT seq, ${values('b')} FROM seq_100_to_102; COMMIT`,
    );
    await source.capture();

    // Read back under aliases (mysql2 refuses the names), as objects with the names as own properties.
    const rows = await source.sql(`SELECT ${names.map((n, i) => `${quoted(n)} AS c${i}`).join(', ')} FROM ${sqlName(ref)}`);
    const expected = rows.map((r) => Object.fromEntries(names.map((n, i) => [n, r[`c${i}`]])));
    expect(expected).toHaveLength(32);
    const state = materialize(await source.events(), ref);
    const byKey = (a: Record<string, unknown>, b: Record<string, unknown>) => Number(a[names[0] as string]) - Number(b[names[0] as string]);
    expect([...state.values()].sort(byKey)).toEqual(expected.sort(byKey));
    expect(JSON.stringify([...state.values()])).toContain('"__proto__":101,"__defineGetter__":"b0-101"');
    expect(await materialized(env, ref).then((r) => r.length)).toBe(32);
    const verified = await sluice(['verify', '--tables', formatTableRef(ref)], env);
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
    expect(verified.stdout).toMatch(/: 32 rows compared/);
  });

  it('a malformed --tables names the problem and exits non-zero before touching anything', async () => {
    const env = { ...process.env, SLUICE_SOURCE_ID: 'x', SLUICE_HOME: '/nonexistent' };
    const verify = await sluice(['verify', '--tables', 'shop.orders, shop.order-items'], env);
    expect(verify.code).toBe(1);
    expect(verify.stderr).toMatch(
      /TABLE_NAME: --tables "shop.orders, shop.order-items": "-" cannot appear in an unquoted name: quote it with backticks, `order-items`/,
    );
    const materialize = await sluice(['materialize', '--table', '`a.b', '--out', '/tmp/x.jsonl'], env);
    expect(materialize.stderr).toMatch(/TABLE_NAME: --table "`a.b": the backtick at position 1 is never closed/);
  });

  it('an unfinished snapshot job written by sluice v1 (tables named db.table) is shown and continued', async () => {
    await using source = await testSource('v1job', { SLUICE_SNAPSHOT_PAGE_ROWS: '10' });
    const ref = { db: source.db, table: 't' };
    await createTable(source, ref, 25, 'v1');
    await source.capture();
    // The items as v1 stored them: requested and planned tables as "db.t"; its chunk keyed by that name.
    const v1 = {
      sourceId: source.db,
      id: '20260101000000-v1v1',
      createdAt: Date.now(),
      requested: [`${source.db}.t`],
      status: 'planned',
      tables: [{ name: `${source.db}.t`, chunks: 1, estimatedRows: 25, key: ['id'] }],
    };
    expect(await source.clients.snapshots.createJob(v1 as unknown as SnapshotJob)).toBe(true);
    await source.clients.snapshots.putChunk(source.db, v1.id, { table: `${source.db}.t`, n: 0, lo: null, hi: [25] });

    const env = cliEnv(source);
    const status = await sluice(['status', '--json'], env);
    expect(status.code).toBe(0);
    expect(JSON.parse(status.stdout).snapshot).toMatchObject({ id: v1.id, status: 'planned', tables: [{ table: `${source.db}.t`, rows: 0, chunks: 1 }] });

    const resumed = await source.snapshot();
    expect(resumed.job.id).toBe(v1.id);
    expect(resumed).toMatchObject({ complete: true, rows: 25 });
    const { differences } = await expectExactlyOnce(source, ['t']);
    expect(differences).toEqual([]);
  });
});

const literally = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
