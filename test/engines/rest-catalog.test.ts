import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { BucketAlreadyOwnedByYou, CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crashAt, type FaultPoint, InjectedFault } from '../../lib/commit/faults.ts';
import type { Config } from '../../lib/config/config.ts';
import { ErrorCode, type SluiceError } from '../../lib/errors.ts';
import { mainOf } from '../../lib/iceberg/catalog/ancestry.ts';
import { configuredCatalog } from '../../lib/iceberg/catalog/catalog.ts';
import { catalogs, fileCatalog, type IcebergCatalog } from '../../lib/iceberg/catalog/port.ts';
import { restCatalog } from '../../lib/iceberg/catalog/rest.ts';
import { fetchTransport, type RestTransport } from '../../lib/iceberg/catalog/rest-transport.ts';
import { parseJson } from '../../lib/iceberg/files/json.ts';
import type { TableMetadata } from '../../lib/iceberg/files/metadata.ts';
import { type MergeResult, runIcebergMerge } from '../../lib/iceberg/merge/merge.ts';
import { loadVersion } from '../../lib/iceberg/table/table.ts';
import { silentLog } from '../../lib/log.ts';
import { type ObjectStore, s3ObjectStore } from '../../lib/sink/s3/object-store.ts';
import { committedVersion, icebergRowsAt, mysqlText } from '../support/iceberg-merge.ts';
import { type TestSource, testSource } from '../support/source.ts';
import { compare, mariadbTable } from './canonical.ts';
import { ensureRestCatalog, type RunningRestCatalog, startRestCatalog } from './rest-catalog.ts';
import { ensureTools, type Tools } from './tools.ts';

/*
 * `npm run test:engines`, the REST catalog part: the merge publishing through Apache Iceberg's own
 * REST catalog server (RESTCatalogServer, a JDBC catalog on SQLite, S3FileIO on the emulator; see
 * rest-catalog.ts), with a crash at each step of a merge — before the DynamoDB commit, after it,
 * inside the catalog publish (before its commit request, and after it with the answer lost), after
 * the publish before the ledger is cleared — each followed by the next merge: the catalog's table
 * gains exactly one snapshot per merge, the same ids as sluice's own metadata, and reads as MariaDB.
 * Then Spark and PyIceberg read the table through the catalog, cell by cell against MariaDB.
 *
 * The catalog's warehouse is a second bucket of the emulator: a table sluice places
 * (SLUICE_ICEBERG_REST_LOCATION=sluice, the default) is registered at its location in SLUICE_BUCKET,
 * one the catalog places (=catalog, register answered 501 as S3 Tables has none) gets its files
 * where the catalog's create-table put it, in the second bucket, and sluice never deletes there.
 */

const exec = promisify(execFile);

/** Where a merge is made to crash: the commit protocol's points, or inside the REST publish. */
type Crash = FaultPoint | 'catalog-before-commit' | 'catalog-answer-lost';

let server: RunningRestCatalog;
let tools: Tools;
let source: TestSource;
let store: ObjectStore;
let crash: Crash | undefined;
const crashes: string[] = [];
/** The catalog's warehouse bucket, and every object sluice's S3 client asked to delete in it. */
const placed = `${process.env.SLUICE_BUCKET}-rest`;
const placedDeletes: string[] = [];
const scratch = mkdtempSync(join(tmpdir(), 'sluice-rest-'));

/** The catalog's table requests, failing once where `crash` says: the request never sent, or sent and its answer lost. */
function crashingTransport(inner: RestTransport): RestTransport {
  return {
    async request(method, path, body) {
      const commit = method === 'POST' && (/\/tables\/[^/]+$/.test(path) || path.endsWith('/register'));
      if (commit && crash === 'catalog-before-commit') {
        crash = undefined;
        crashes.push(`${method} ${path} not sent`);
        throw new InjectedFault('injected crash before the catalog commit');
      }
      const answer = await inner.request(method, path, body);
      if (commit && crash === 'catalog-answer-lost') {
        crash = undefined;
        crashes.push(`${method} ${path} answered ${answer.status}, answer lost`);
        throw new InjectedFault('injected crash after the catalog commit, its answer lost');
      }
      return answer;
    },
  };
}

async function mergeWith(
  catalog: IcebergCatalog,
  options: { crash?: Crash; clock?: () => number; table?: string; config?: Config } = {},
): Promise<MergeResult> {
  crash = options.crash;
  const point = options.crash && !options.crash.startsWith('catalog-') ? (options.crash as FaultPoint) : undefined;
  const { clients } = source;
  const config = options.config ?? source.config;
  return runIcebergMerge(
    {
      config,
      s3: clients.s3,
      store: clients.store,
      snapshots: clients.snapshots,
      merges: clients.merges,
      log: silentLog,
      catalog,
      ...(point ? { faults: crashAt(point) } : {}),
      ...(options.clock ? { clock: options.clock } : {}),
    },
    { tables: [{ db: source.db, table: options.table ?? 't' }], owner: 'test-merge' },
  );
}

/** The catalog table's main snapshot id, as JSON numbers give it (rounded beyond 2^53, as good as any for comparing). */
const mainOfLoaded = (metadata: TableMetadata) => metadata.refs?.main?.['snapshot-id'];

/** The catalog's view of a table (GET loadTable). */
async function loaded(table = 't'): Promise<{ 'metadata-location': string; metadata: TableMetadata }> {
  const response = await fetch(`${server.uri}/v1/namespaces/${encodeURIComponent(source.db)}/tables/${table}`);
  expect(response.status, `${source.db}.${table} in the REST catalog`).toBe(200);
  return (await response.json()) as { 'metadata-location': string; metadata: TableMetadata };
}

beforeAll(async () => {
  const [{ classpath, installSeconds }, installed] = await Promise.all([ensureRestCatalog(), ensureTools()]);
  tools = installed;
  const s3 = new S3Client({ forcePathStyle: true });
  try {
    await s3.send(new CreateBucketCommand({ Bucket: placed }));
  } catch (error) {
    if (!(error instanceof BucketAlreadyOwnedByYou) && (error as { name?: string }).name !== 'BucketAlreadyExists') throw error;
  } finally {
    s3.destroy();
  }
  console.log(`rest: Iceberg's REST catalog server ${installSeconds ? `installed in ${installSeconds.toFixed(0)} s` : 'already installed'}`);
  server = await startRestCatalog({
    classpath,
    dir: join(scratch, 'catalog'),
    warehouse: `s3://${placed}/warehouse`,
    s3: {
      endpoint: process.env.AWS_ENDPOINT_URL_S3 as string,
      region: process.env.AWS_REGION as string,
      accessKeyId: process.env.AWS_ACCESS_KEY_ID as string,
      secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY as string,
    },
  });
  source = await testSource('rest', { SLUICE_ICEBERG_CATALOG: 'rest', SLUICE_ICEBERG_REST_URI: server.uri });
  store = s3ObjectStore(source.clients.s3, source.config.bucket);
  source.clients.s3.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { Bucket?: string; Key?: string; Delete?: { Objects?: { Key?: string }[] } };
      if (/^DeleteObjects?Command$/.test(context.commandName ?? '') && input.Bucket === placed)
        placedDeletes.push(...(input.Key ? [input.Key] : (input.Delete?.Objects ?? []).map((o) => o.Key ?? '')));
      return next(args);
    },
    { step: 'initialize', name: 'countPlacedDeletes' },
  );
}, 1_800_000);

/** One Spark session over the REST catalog for the whole file (spark_sql.py), started on first use: the table's other writer. */
let spark: { child: ChildProcess; sql(text: string): Promise<string[][]> } | undefined;
async function sparkSql(text: string): Promise<string[][]> {
  if (!spark) {
    const child = spawn(
      tools.python,
      [
        resolve('test/engines/spark_sql.py'),
        JSON.stringify({
          uri: server.uri,
          jars: tools.classpath,
          s3: {
            endpoint: process.env.AWS_ENDPOINT_URL_S3,
            region: process.env.AWS_REGION,
            accessKeyId: process.env.AWS_ACCESS_KEY_ID,
            secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY,
          },
        }),
      ],
      { cwd: resolve('test/engines'), stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr?.on('data', (d) => {
      stderr = `${stderr}${d}`.slice(-5000);
    });
    const answers: ((line: Record<string, unknown>) => void)[] = [];
    const ready = new Promise<void>((resolveReady, reject) => {
      answers.push(() => resolveReady());
      child.once('exit', (code) => reject(new Error(`spark_sql.py exited (${code}):\n${stderr}`)));
    });
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      if (line.startsWith('{')) answers.shift()?.(JSON.parse(line) as Record<string, unknown>);
    });
    await ready;
    spark = {
      child,
      sql: (statement) =>
        new Promise((resolveRows, reject) => {
          answers.push((answer) => (answer.error ? reject(new Error(`Spark: ${statement}: ${answer.error}`)) : resolveRows(answer.rows as string[][])));
          child.stdin?.write(`${JSON.stringify({ sql: statement })}\n`);
        }),
    };
  }
  return spark.sql(text);
}

afterAll(async () => {
  if (spark) {
    const exited = new Promise((done) => spark?.child.once('exit', done));
    spark.child.stdin?.end();
    await exited;
  }
  await source?.[Symbol.asyncDispose]();
  await server?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe("Iceberg's REST catalog server (npm run test:engines)", () => {
  it('merges through it exactly once with a crash at each step: one catalog snapshot per merge, sluice ids, MariaDB rows', async () => {
    // The configured client (SLUICE_ICEBERG_CATALOG=rest) for the merges that do not crash; the
    // same client over a crashing transport for those that do.
    const configured = configuredCatalog(source.config, store);
    const crashing = catalogs(
      fileCatalog(store),
      restCatalog(crashingTransport(fetchTransport(server.uri, { kind: 'none' })), store, { nameOf: (t) => ({ namespace: [t.db], name: t.table }) }),
    );
    const sql = (text: string) => source.sql(`USE \`${source.db}\`; ${text}`);
    await source.capture();
    await sql("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(20), n DECIMAL(20,0)); INSERT INTO t VALUES (1, 'one', 1), (2, 'two', 2), (3, 'three', 3)");
    await source.capture();

    let snapshots = 0;
    let id = 10;
    const rounds: { crash: Crash; change: string }[] = [
      // The first merge registers the table; its answer lost, the next merge finds it registered.
      { crash: 'catalog-answer-lost', change: '' },
      { crash: 'after-staging', change: "UPDATE t SET name = 'uno' WHERE id = 1; DELETE FROM t WHERE id = 2" },
      { crash: 'after-commit', change: "INSERT INTO t VALUES (ID, 'new', ID)" },
      { crash: 'catalog-before-commit', change: "ALTER TABLE t ADD COLUMN note VARCHAR(10); INSERT INTO t VALUES (ID, 'noted', ID, 'x')" },
      { crash: 'catalog-answer-lost', change: "UPDATE t SET note = 'y', n = n + 1 WHERE id = 1; INSERT INTO t VALUES (ID, 'more', ID, NULL)" },
      { crash: 'before-clear', change: "DELETE FROM t WHERE id = 3; INSERT INTO t VALUES (ID, 'last', ID, 'z')" },
    ];
    for (const round of rounds) {
      if (round.change) {
        await sql(round.change.replaceAll('ID', String(id++)));
        await source.capture();
      }
      const failed = await mergeWith(round.crash.startsWith('catalog-') ? crashing : configured, { crash: round.crash });
      expect(failed.tables[0]?.status, `${round.crash}: the crashed merge`).toBe('failed');
      expect(failed.tables[0]?.error, `${round.crash}: the crash`).toBeInstanceOf(InjectedFault);
      const redo = await mergeWith(configured);
      expect(['merged', 'up-to-date'], `${round.crash}: the next merge (${redo.tables[0]?.reason ?? ''})`).toContain(redo.tables[0]?.status);

      const sluice = (await committedVersion(source, 't'))?.metadata as TableMetadata;
      const { metadata, 'metadata-location': location } = await loaded();
      snapshots += 1;
      expect(
        metadata.snapshots.map((s) => s['snapshot-id']),
        `${round.crash}: the catalog's snapshots are sluice's`,
      ).toEqual(sluice.snapshots.map((s) => s['snapshot-id']));
      expect(metadata.snapshots, `${round.crash}: one snapshot per merge`).toHaveLength(snapshots);
      expect(metadata.refs?.main?.['snapshot-id'], `${round.crash}: main`).toBe(sluice['current-snapshot-id']);
      expect(metadata['table-uuid']).toBe(sluice['table-uuid']);
      expect(metadata.schemas.find((s) => s['schema-id'] === metadata['current-schema-id'])?.fields.map((f) => f.name)).toEqual(
        sluice.schemas.find((s) => s['schema-id'] === sluice['current-schema-id'])?.fields.map((f) => f.name),
      );
      expect(await icebergRowsAt(store, metadata), `${round.crash}: the catalog's table (DuckDB) vs MariaDB`).toEqual(await mysqlText(source, 't'));
      // After the registration the catalog writes its own metadata files; sluice's chain stays its own.
      if (snapshots > 1) expect(location).not.toMatch(/\/v\d+\.metadata\.json$/);
    }
    expect(crashes).toHaveLength(3);

    // An expiry (two days later): the catalog drops the snapshots sluice expired, before their files go.
    const later = Date.now() + 48 * 3600 * 1000;
    const expired = await mergeWith(configured, { clock: () => later });
    expect(expired.tables[0]).toMatchObject({ status: 'merged' });
    expect(expired.tables[0]?.expiredSnapshots).toBeGreaterThan(0);
    const sluice = (await committedVersion(source, 't'))?.metadata as TableMetadata;
    const { metadata } = await loaded();
    expect(metadata.snapshots.map((s) => s['snapshot-id'])).toEqual(sluice.snapshots.map((s) => s['snapshot-id']));
    expect(metadata.snapshots.length).toBeLessThan(snapshots);
    expect(await icebergRowsAt(store, metadata), 'after expiry: the catalog table (DuckDB) vs MariaDB').toEqual(await mysqlText(source, 't'));
    configured.destroy();
  });

  it("refuses to publish over another writer's snapshot (ICEBERG_CATALOG_CONFLICT, catalog untouched); dropping the catalog table lets the next merge register it again", async () => {
    const configured = configuredCatalog(source.config, store);
    const { metadata } = await loaded();
    const current = metadata.snapshots.find((s) => s['snapshot-id'] === metadata['current-snapshot-id']);
    if (!current) throw new Error('no current snapshot');
    // Another writer's commit: a snapshot of the same files that sluice's history does not have.
    const foreign = { ...current, 'snapshot-id': 4242, 'parent-snapshot-id': current['snapshot-id'], 'sequence-number': metadata['last-sequence-number'] + 1 };
    const path = `${server.uri}/v1/namespaces/${encodeURIComponent(source.db)}/tables/t`;
    const committed = await fetch(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        requirements: [],
        updates: [
          { action: 'add-snapshot', snapshot: foreign },
          { action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': 4242 },
        ],
      }),
    });
    expect(committed.status, await committed.clone().text()).toBe(200);
    await source.sql(`USE \`${source.db}\`; INSERT INTO t VALUES (900, 'after', 900, NULL)`);
    await source.capture();
    const refused = await mergeWith(configured);
    expect(refused.tables[0]?.status).toBe('failed');
    expect((refused.tables[0]?.error as SluiceError | undefined)?.code).toBe(ErrorCode.ICEBERG_CATALOG_CONFLICT);
    expect(refused.tables[0]?.reason).toMatch(/is at snapshot 4242, which is not in sluice's history/);
    expect((await loaded()).metadata.refs?.main?.['snapshot-id']).toBe(4242);
    // The runbook's way out: drop the catalog's table; the next merge's roll-forward registers sluice's.
    expect((await fetch(path, { method: 'DELETE' })).status).toBe(204);
    const again = await mergeWith(configured);
    expect(['merged', 'up-to-date']).toContain(again.tables[0]?.status);
    const sluice = (await committedVersion(source, 't'))?.metadata as TableMetadata;
    const back = (await loaded()).metadata;
    expect(back.snapshots.map((s) => s['snapshot-id'])).toEqual(sluice.snapshots.map((s) => s['snapshot-id']));
    expect(await icebergRowsAt(store, back)).toEqual(await mysqlText(source, 't'));
    configured.destroy();
  });

  it("a catalog without register, configured after the table evolved: created with no columns, then given sluice's schema (field ids 1 and 3 kept) and every snapshot", async () => {
    const noRegister: RestTransport = {
      request: (method, path, body) =>
        path.endsWith('/register') ? Promise.resolve({ status: 501, body: { error: { message: 'no register' } } }) : inner.request(method, path, body),
    };
    const inner = fetchTransport(server.uri, { kind: 'none' });
    const creating = catalogs(fileCatalog(store), restCatalog(noRegister, store, { nameOf: (t) => ({ namespace: [t.db], name: t.table }) }));
    await source.capture();
    await source.sql(`USE \`${source.db}\`; CREATE TABLE c (id INT PRIMARY KEY, v VARCHAR(10)); INSERT INTO c VALUES (1, 'a'), (2, 'b')`);
    await source.capture();
    // Merged before the catalog is configured (file catalog only), then evolved: its field ids are 1 and 3.
    expect((await mergeWith(fileCatalog(store), { table: 'c' })).tables[0]).toMatchObject({ status: 'merged' });
    const rounds = [
      'ALTER TABLE c ADD COLUMN w INT; ALTER TABLE c DROP COLUMN v; INSERT INTO c VALUES (3, 30)',
      'UPDATE c SET w = 20 WHERE id = 2; INSERT INTO c VALUES (4, 40)',
    ];
    for (const change of rounds) {
      await source.sql(`USE \`${source.db}\`; ${change}`);
      await source.capture();
      expect((await mergeWith(creating, { table: 'c' })).tables[0]).toMatchObject({ status: 'merged' });
      const sluice = (await committedVersion(source, 'c'))?.metadata as TableMetadata;
      const { metadata } = await loaded('c');
      expect(metadata.properties['sluice.table-uuid']).toBe(sluice['table-uuid']);
      expect(metadata['table-uuid']).not.toBe(sluice['table-uuid']);
      expect(metadata.snapshots.map((s) => s['snapshot-id'])).toEqual(sluice.snapshots.map((s) => s['snapshot-id']));
      const fields = (m: TableMetadata) => m.schemas.find((s) => s['schema-id'] === m['current-schema-id'])?.fields.map((f) => [f.id, f.name]);
      expect(fields(metadata)).toEqual(fields(sluice));
      expect(fields(metadata)).toEqual([
        [1, 'id'],
        [3, 'w'],
      ]);
      expect(await icebergRowsAt(store, metadata), 'the created table (DuckDB) vs MariaDB').toEqual(await mysqlText(source, 'c'));
    }
  });

  it('SLUICE_ICEBERG_REST_LOCATION=catalog without register: every file where the catalog placed the table, in its bucket, exactly once across crashes, nothing deleted there', async () => {
    const config = source.configWith({ SLUICE_ICEBERG_CATALOG: 'rest', SLUICE_ICEBERG_REST_URI: server.uri, SLUICE_ICEBERG_REST_LOCATION: 'catalog' });
    const noRegister: RestTransport = {
      request: (method, path, body) =>
        path.endsWith('/register') ? Promise.resolve({ status: 501, body: { error: { message: 'no register' } } }) : inner.request(method, path, body),
    };
    const inner = fetchTransport(server.uri, { kind: 'none' });
    const catalog = catalogs(
      fileCatalog(store),
      restCatalog(crashingTransport(noRegister), store, {
        nameOf: (t) => ({ namespace: [t.db], name: t.table }),
        location: config.iceberg.catalog.kind === 'rest' ? config.iceberg.catalog.location : 'sluice',
      }),
    );
    const listed = async (prefix: string) => {
      const keys: string[] = [];
      for await (const key of store.list(prefix)) keys.push(key);
      return keys;
    };
    const sql = (text: string) => source.sql(`USE \`${source.db}\`; ${text}`);
    await source.capture();
    await sql("CREATE TABLE s (id INT PRIMARY KEY, name VARCHAR(20)); INSERT INTO s VALUES (1, 'one'), (2, 'two'), (3, 'three')");
    await source.capture();
    crashes.length = 0;
    placedDeletes.length = 0;
    let snapshots = 0;
    let assigned = '';
    let left: string[] = [];
    const rounds: { crash: Crash; change: string }[] = [
      // The first merge creates the table in the catalog, stages under its location and dies before the DynamoDB commit.
      { crash: 'after-staging', change: '' },
      { crash: 'after-commit', change: "UPDATE s SET name = 'uno' WHERE id = 1; DELETE FROM s WHERE id = 2; INSERT INTO s VALUES (4, 'four')" },
      { crash: 'catalog-before-commit', change: "ALTER TABLE s ADD COLUMN note VARCHAR(10); INSERT INTO s VALUES (5, 'five', 'x')" },
      { crash: 'catalog-answer-lost', change: "UPDATE s SET note = 'y' WHERE id = 1; DELETE FROM s WHERE id = 3" },
    ];
    for (const round of rounds) {
      if (round.change) {
        await sql(round.change);
        await source.capture();
      }
      const failed = await mergeWith(catalog, { crash: round.crash, table: 's', config });
      expect(failed.tables[0]?.error, `${round.crash}: the crash`).toBeInstanceOf(InjectedFault);
      if (round.crash === 'after-staging') {
        assigned = (await loaded('s')).metadata.location;
        expect(assigned, "the catalog's location, in its warehouse bucket").toBe(`s3://${placed}/warehouse/${source.db}/s`);
        left = await listed(`${assigned}/`);
        expect(left.length, 'the crashed attempt staged under the assigned location').toBeGreaterThanOrEqual(3);
      }
      const redo = await mergeWith(catalog, { table: 's', config });
      expect(['merged', 'up-to-date'], `${round.crash}: the next merge (${redo.tables[0]?.reason ?? ''})`).toContain(redo.tables[0]?.status);
      const sluice = (await committedVersion(source, 's'))?.metadata as TableMetadata;
      const { metadata } = await loaded('s');
      snapshots += 1;
      expect(sluice.location, `${round.crash}: sluice's metadata names the assigned location`).toBe(assigned);
      expect(metadata.location).toBe(assigned);
      expect(
        metadata.snapshots.map((s) => s['snapshot-id']),
        `${round.crash}: the catalog's snapshots are sluice's, one per merge`,
      ).toEqual(sluice.snapshots.map((s) => s['snapshot-id']));
      expect(metadata.snapshots).toHaveLength(snapshots);
      expect(metadata.properties['sluice.table-uuid']).toBe(sluice['table-uuid']);
      expect(await icebergRowsAt(store, metadata), `${round.crash}: the catalog's table (DuckDB) vs MariaDB`).toEqual(await mysqlText(source, 's'));
    }
    expect(crashes).toHaveLength(2);

    // An expiry two days later: the catalog drops the snapshots, their files stay for its unreferenced-file removal.
    const later = Date.now() + 48 * 3600 * 1000;
    const expired = await mergeWith(catalog, { clock: () => later, table: 's', config });
    expect(expired.tables[0]?.expiredSnapshots).toBeGreaterThan(0);
    const version = await loadVersion(store, (await source.clients.merges.get(source.config.sourceId, { db: source.db, table: 's' }))?.metadataKey ?? '');
    const { metadata } = await loaded('s');
    expect(metadata.snapshots.map((s) => s['snapshot-id'])).toEqual(version.metadata.snapshots.map((s) => s['snapshot-id']));
    expect(metadata.snapshots.length).toBeLessThan(snapshots);
    expect(await icebergRowsAt(store, metadata), 'after expiry: the catalog table (DuckDB) vs MariaDB').toEqual(await mysqlText(source, 's'));

    // Both buckets: in SLUICE_BUCKET only sluice's metadata chain; every file it staged under the assigned location.
    const home = `${source.config.prefix}iceberg/${source.db}/s/`;
    const own = await listed(home);
    expect(own.filter((k) => !/\/metadata\/(\d{5}-[0-9a-f-]{36}\.metadata\.json|v\d+\.metadata\.json|version-hint\.text)$/.test(k))).toEqual([]);
    expect(own.some((k) => k.endsWith('/version-hint.text'))).toBe(true);
    const there = await listed(`${assigned}/`);
    const sluices = there.filter((k) => /\/data\/m\d+_|\/metadata\/(snap-)?m\d+_/.test(k));
    expect(sluices.length).toBeGreaterThan(10);
    expect(
      there.filter((k) => !sluices.includes(k)).every((k) => /\/metadata\/\d{5}-[0-9a-f-]{36}\.metadata\.json$/.test(k)),
      "the rest: the catalog's own metadata",
    ).toBe(true);
    expect(await listed(`s3://${placed}/`)).toEqual(expect.arrayContaining(left));
    for (const snapshot of version.metadata.snapshots) expect(snapshot['manifest-list'].startsWith(`${assigned}/metadata/snap-`)).toBe(true);
    // Nothing deleted there: the crashed attempt's files and the expired snapshots' files stay.
    expect(placedDeletes).toEqual([]);
    expect(left.every((k) => there.includes(k))).toBe(true);
  });

  it('SLUICE_ICEBERG_MAINTENANCE=catalog: Spark compacts and expires through the catalog between merges; the merge builds on it, also when it lands mid-publish or after a crash after the DynamoDB commit; a foreign append is refused', async () => {
    const config: Config = { ...source.config, iceberg: { ...source.config.iceberg, maintenance: 'catalog' } };
    const sql = (text: string) => source.sql(`USE \`${source.db}\`; ${text}`);
    const table = `${source.db}.m`;
    /** The catalog commit of the next publish waits for `before` first: a compaction landing between sluice's load and its commit. */
    let before: (() => Promise<unknown>) | undefined;
    const racing = catalogs(
      fileCatalog(store),
      restCatalog(
        {
          async request(method, path, body) {
            if (method === 'POST' && /\/tables\/m$/.test(path) && before) {
              const run = before;
              before = undefined;
              await run();
            }
            return inner.request(method, path, body);
          },
        },
        store,
        { nameOf: (t) => ({ namespace: [t.db], name: t.table }) },
      ),
    );
    const inner = fetchTransport(server.uri, { kind: 'none' });
    const merge = async (what: string, options: { crash?: Crash } = {}) => {
      const result = await mergeWith(racing, { table: 'm', config, ...options });
      return { what, result: result.tables[0] };
    };
    const merged = async (what: string) => {
      const { result } = await merge(what);
      expect(result?.status, `${what}: ${result?.reason ?? ''}`).toBe('merged');
    };
    const seen = new Map<number, TableMetadata['snapshots'][number]>();
    const observe = async () => {
      for (const snapshot of (await loaded('m')).metadata.snapshots) seen.set(snapshot['snapshot-id'], snapshot);
    };
    const equal = async (what: string) => {
      const { metadata } = await loaded('m');
      expect(await icebergRowsAt(store, metadata), `${what}: the catalog's table (sluice's reader) vs MariaDB`).toEqual(await mysqlText(source, 'm'));
      const count = await sparkSql(`SELECT count(*), count(DISTINCT id), sum(n) FROM rest.${table}`);
      const [mariadb] = await source.sql(`SELECT count(*) AS c, count(DISTINCT id) AS d, sum(n) AS s FROM \`${source.db}\`.m`);
      expect(count[0], `${what}: Spark's count, distinct ids and sum vs MariaDB`).toEqual([String(mariadb?.c), String(mariadb?.d), String(mariadb?.s)]);
    };
    const compact = async () => {
      const [rewritten] = await sparkSql(`CALL rest.system.rewrite_data_files(table => '${table}', options => map('rewrite-all', 'true'))`);
      expect(Number(rewritten?.[0]), 'files Spark rewrote').toBeGreaterThan(1);
      await observe();
    };
    const expire = () => sparkSql(`CALL rest.system.expire_snapshots(table => '${table}', older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)`);

    await source.capture();
    await sql('CREATE TABLE m (id INT PRIMARY KEY, v VARCHAR(20), n INT)');
    let merges = 0;
    for (let batch = 0; batch < 3; batch++) {
      const values = Array.from({ length: 10 }, (_, i) => `(${batch * 10 + i + 1}, 'v${batch}', ${i})`).join(', ');
      await sql(`INSERT INTO m VALUES ${values}; UPDATE m SET n = n + 100 WHERE id = ${batch * 10 + 1}`);
      await source.capture();
      await merged('load');
      merges++;
      await observe();
    }

    // Spark compacts and expires; sluice changes rows that now live in Spark's files.
    await compact();
    await expire();
    await sql("UPDATE m SET v = 'after-1', n = n + 1 WHERE id IN (2, 15, 29); DELETE FROM m WHERE id IN (3, 21); INSERT INTO m VALUES (31, 'new', 31)");
    await source.capture();
    await merged('on a compaction');
    merges++;
    await observe();
    await equal('after a merge on a compaction');

    // Again, with the second compaction landing between sluice's load and its commit request (a 409, then a rebase).
    await sql("UPDATE m SET v = 'after-2' WHERE id IN (2, 16); DELETE FROM m WHERE id = 30; INSERT INTO m VALUES (32, 'new', 32)");
    await source.capture();
    before = compact;
    await merged('a compaction mid-publish');
    expect(before, 'the compaction ran inside the publish').toBeUndefined();
    merges++;
    await observe();
    await expire();
    await equal('after a compaction mid-publish');

    // A crash after the DynamoDB commit, before the publish; Spark compacts meanwhile; the next merge publishes.
    await sql("UPDATE m SET n = n * 2 WHERE id IN (4, 17); DELETE FROM m WHERE id = 5; INSERT INTO m VALUES (33, 'crash', 33)");
    await source.capture();
    const crashed = await merge('crash', { crash: 'after-commit' });
    expect(crashed.result?.error).toBeInstanceOf(InjectedFault);
    expect((await source.clients.merges.get(config.sourceId, { db: source.db, table: 'm' }))?.pending, 'the crashed commit is pending').toBeDefined();
    await compact();
    await merged('after the crash');
    merges++;
    await observe();
    expect((await source.clients.merges.get(config.sourceId, { db: source.db, table: 'm' }))?.pending).toBeUndefined();
    await equal('after a crash and a compaction before the publish');

    // Every catalog snapshot after the first is sluice's (one per merge) or Spark's compaction.
    const snapshots = [...seen.values()];
    const ours = snapshots.filter((s) => s.summary['engine-name'] === 'sluice');
    const theirs = snapshots.filter((s) => s.summary['engine-name'] !== 'sluice');
    expect(ours, 'sluice snapshots in the catalog: one per merge').toHaveLength(merges);
    expect(new Set(ours.map((s) => s.summary['sluice.commit-seq'])).size, 'each at its own cut').toBe(merges);
    expect(theirs.map((s) => s.summary.operation)).toEqual(['replace', 'replace', 'replace']);

    // A foreign append is still refused, the catalog untouched; the runbook's way out (drop it from the catalog) registers sluice's again.
    await sparkSql(`INSERT INTO rest.${table} VALUES (900, 'foreign', 900)`);
    const appended = mainOfLoaded((await loaded('m')).metadata);
    await sql("INSERT INTO m VALUES (34, 'refused', 34)");
    await source.capture();
    const refused = (await merge('a foreign append')).result;
    expect(refused?.status).toBe('failed');
    expect((refused?.error as SluiceError | undefined)?.code).toBe(ErrorCode.ICEBERG_CATALOG_CONFLICT);
    expect(refused?.reason).toMatch(/is an `append` by spark/);
    expect(mainOfLoaded((await loaded('m')).metadata), "the catalog's main stays the foreign append").toBe(appended);
    expect((await fetch(`${server.uri}/v1/namespaces/${encodeURIComponent(source.db)}/tables/m`, { method: 'DELETE' })).status).toBe(204);
    const after = (await merge('after the drop')).result;
    expect(after?.status, after?.reason).toMatch(/merged|up-to-date/);
    await equal('registered again after the foreign append');
  });

  it('SLUICE_ICEBERG_REST_LOCATION=catalog with SLUICE_ICEBERG_MAINTENANCE=catalog (S3 Tables with its maintenance on): Spark compacts and expires where the catalog placed the table, the merge builds on it, also after a crash after the DynamoDB commit; nothing deleted there', async () => {
    const config = source.configWith({
      SLUICE_ICEBERG_CATALOG: 'rest',
      SLUICE_ICEBERG_REST_URI: server.uri,
      SLUICE_ICEBERG_REST_LOCATION: 'catalog',
      SLUICE_ICEBERG_MAINTENANCE: 'catalog',
    });
    const inner = fetchTransport(server.uri, { kind: 'none' });
    const noRegister: RestTransport = {
      request: (method, path, body) =>
        path.endsWith('/register') ? Promise.resolve({ status: 501, body: { error: { message: 'no register' } } }) : inner.request(method, path, body),
    };
    const catalog = catalogs(
      fileCatalog(store),
      restCatalog(noRegister, store, { nameOf: (t) => ({ namespace: [t.db], name: t.table }), location: 'catalog' }),
    );
    const sql = (text: string) => source.sql(`USE \`${source.db}\`; ${text}`);
    const table = `${source.db}.p`;
    const ref = { db: source.db, table: 'p' };
    const merge = async (options: { crash?: Crash } = {}) => (await mergeWith(catalog, { table: 'p', config, ...options })).tables[0];
    let merges = 0;
    const merged = async (what: string) => {
      const result = await merge();
      expect(result?.status, `${what}: ${result?.reason ?? ''}`).toBe('merged');
      merges++;
      await observe();
    };
    let assigned = '';
    /** The catalog's table and sluice's committed metadata name the catalog's location; both readers see MariaDB's rows. */
    const equal = async (what: string) => {
      const { metadata } = await loaded('p');
      const sluice = (await committedVersion(source, 'p'))?.metadata as TableMetadata;
      expect(metadata.location, `${what}: the catalog's location`).toBe(assigned);
      expect(sluice.location, `${what}: sluice's (adopted) metadata keeps the catalog's location`).toBe(assigned);
      expect(await icebergRowsAt(store, metadata), `${what}: the catalog's table (sluice's reader) vs MariaDB`).toEqual(await mysqlText(source, 'p'));
      const count = await sparkSql(`SELECT count(*), count(DISTINCT id), sum(n) FROM rest.${table}`);
      const [mariadb] = await source.sql(`SELECT count(*) AS c, count(DISTINCT id) AS d, sum(n) AS s FROM \`${source.db}\`.p`);
      expect(count[0], `${what}: Spark's count, distinct ids and sum vs MariaDB`).toEqual([String(mariadb?.c), String(mariadb?.d), String(mariadb?.s)]);
    };
    const listed = async (prefix: string) => {
      const keys: string[] = [];
      for await (const key of store.list(prefix)) keys.push(key);
      return keys;
    };
    const seen = new Map<number, TableMetadata['snapshots'][number]>();
    const observe = async () => {
      for (const snapshot of (await loaded('p')).metadata.snapshots) seen.set(snapshot['snapshot-id'], snapshot);
    };
    const sparkFiles: string[] = [];
    const compact = async () => {
      const [rewritten] = await sparkSql(`CALL rest.system.rewrite_data_files(table => '${table}', options => map('rewrite-all', 'true'))`);
      expect(Number(rewritten?.[0]), 'files Spark rewrote').toBeGreaterThan(1);
      const files = (await sparkSql(`SELECT file_path FROM rest.${table}.files`)).map(([path]) => path ?? '');
      expect(files.length).toBeGreaterThan(0);
      expect(
        files.filter((f) => !f.startsWith(`${assigned}/data/`)),
        "Spark's compacted files lie under the catalog's location",
      ).toEqual([]);
      sparkFiles.push(...files.filter((f) => !/\/data\/m\d+_/.test(f)));
      await observe();
    };
    const expire = () => sparkSql(`CALL rest.system.expire_snapshots(table => '${table}', older_than => TIMESTAMP '2999-01-01 00:00:00', retain_last => 1)`);

    await source.capture();
    await sql('CREATE TABLE p (id INT PRIMARY KEY, v VARCHAR(20), n INT)');
    placedDeletes.length = 0;
    for (let batch = 0; batch < 3; batch++) {
      const values = Array.from({ length: 10 }, (_, i) => `(${batch * 10 + i + 1}, 'v${batch}', ${i})`).join(', ');
      await sql(`INSERT INTO p VALUES ${values}; UPDATE p SET n = n + 100 WHERE id = ${batch * 10 + 1}`);
      await source.capture();
      await merged('load');
      assigned ||= (await loaded('p')).metadata.location;
    }
    expect(assigned, "the catalog's location, in its warehouse bucket").toBe(`s3://${placed}/warehouse/${source.db}/p`);
    await equal('after three merges');

    // S3 Tables' maintenance, played by Spark through the catalog: sluice changes rows now in Spark's files.
    await compact();
    await expire();
    await sql("UPDATE p SET v = 'after-1', n = n + 1 WHERE id IN (2, 15, 29); DELETE FROM p WHERE id IN (3, 21); INSERT INTO p VALUES (31, 'new', 31)");
    await source.capture();
    await merged('on a compaction');
    await equal('after a merge on a compaction');

    // A crash before the DynamoDB commit: what it staged under the catalog's location stays there (the next merge stages anew).
    await sql("UPDATE p SET v = 'after-2' WHERE id IN (4, 16); DELETE FROM p WHERE id = 30");
    await source.capture();
    const before = new Set(await listed(`${assigned}/`));
    expect((await merge({ crash: 'after-staging' }))?.error).toBeInstanceOf(InjectedFault);
    const staged = (await listed(`${assigned}/`)).filter((k) => !before.has(k));
    expect(staged.length, 'files the crashed attempt staged there').toBeGreaterThan(0);
    await merged('after a crash before the commit');
    await equal('after a crash before the commit');

    // A crash after the DynamoDB commit; Spark compacts before the next run, which rebases and publishes once.
    await sql("UPDATE p SET n = n * 2 WHERE id IN (6, 17); DELETE FROM p WHERE id = 5; INSERT INTO p VALUES (33, 'crash', 33)");
    await source.capture();
    const crashed = await merge({ crash: 'after-commit' });
    expect(crashed?.error).toBeInstanceOf(InjectedFault);
    const pending = await source.clients.merges.get(config.sourceId, ref);
    expect(pending?.pending, 'the crashed commit is pending').toBeDefined();
    const dropped = (await loadVersion(store, pending?.metadataKey ?? '')).metadata;
    const droppedList = dropped.snapshots.find((s) => s['snapshot-id'] === dropped['current-snapshot-id'])?.['manifest-list'] ?? '';
    expect(droppedList.startsWith(`${assigned}/metadata/snap-`), "the pending version's manifest list, under the catalog's location").toBe(true);
    await compact();
    await merged('after the crash');
    expect((await source.clients.merges.get(config.sourceId, ref))?.pending).toBeUndefined();
    await equal('after a crash and a compaction before the publish');

    // Spark's snapshot ids use 63 bits: the catalog's metadata read with them exact, as sluice reads it.
    const response = await fetch(`${server.uri}/v1/namespaces/${encodeURIComponent(source.db)}/tables/p`);
    const { metadata } = parseJson<{ metadata: TableMetadata }>(await response.text());
    const sluice = (await committedVersion(source, 'p'))?.metadata as TableMetadata;
    const main = metadata.snapshots.find((s) => s['snapshot-id'] === mainOf(metadata));
    expect(main?.summary['engine-name'], "main is sluice's merge, built on Spark's compaction").toBe('sluice');
    const parent = metadata.snapshots.find((s) => s['snapshot-id'] === main?.['parent-snapshot-id']);
    expect(parent?.summary.operation, "main's parent: Spark's compaction").toBe('replace');
    expect(sluice.snapshots.map((s) => s['snapshot-id'])).toEqual(metadata.snapshots.map((s) => s['snapshot-id']));
    for (const snapshot of sluice.snapshots) expect(snapshot['manifest-list'].startsWith(`${assigned}/metadata/`)).toBe(true);
    expect(sparkFiles.length, "files Spark wrote (not sluice's names)").toBeGreaterThan(0);
    // Every catalog snapshot is sluice's (one per merge, each at its own cut: the dropped pending version never reached it) or Spark's compaction.
    const ours = [...seen.values()].filter((s) => s.summary['engine-name'] === 'sluice');
    expect(ours, 'sluice snapshots in the catalog: one per merge').toHaveLength(merges);
    expect(new Set(ours.map((s) => s.summary['sluice.commit-seq'])).size, 'each at its own cut').toBe(merges);
    expect([...seen.values()].filter((s) => s.summary['engine-name'] !== 'sluice').map((s) => s.summary.operation)).toEqual(['replace', 'replace']);
    // In SLUICE_BUCKET only sluice's metadata chain; sluice deleted nothing in the catalog's bucket.
    const own: string[] = [];
    for await (const key of store.list(`${source.config.prefix}iceberg/${source.db}/p/`)) own.push(key);
    expect(own.filter((k) => !/\/metadata\/(\d{5}-[0-9a-f-]{36}\.metadata\.json|v\d+\.metadata\.json|version-hint\.text)$/.test(k))).toEqual([]);
    expect(placedDeletes, 'DeleteObject by sluice in the catalog bucket').toEqual([]);
    const there = new Set(await listed(`${assigned}/`));
    expect(
      staged.filter((k) => !there.has(k)),
      "the crashed attempt's files, left to the catalog",
    ).toEqual([]);
    expect(there.has(droppedList), "the dropped pending version's files, left to the catalog").toBe(true);
  });

  it('Spark (Iceberg Java) and PyIceberg read the table through the REST catalog as MariaDB has it', async () => {
    const tables = [];
    for (const name of ['t', 'c', 's', 'm', 'p']) {
      const version = await committedVersion(source, name);
      if (!version) throw new Error(`no Iceberg table ${name}: the merge tests did not run`);
      const expected = await mariadbTable(source, name, version.metadata);
      tables.push({ id: `rest/${name}`, name, expected, metadata: store.uri(version.metadataKey) });
    }
    const input = join(scratch, 'input.json');
    writeFileSync(
      input,
      JSON.stringify({
        s3: {
          endpoint: process.env.AWS_ENDPOINT_URL_S3,
          region: process.env.AWS_REGION,
          accessKeyId: process.env.AWS_ACCESS_KEY_ID,
          secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY,
        },
        jars: tools.classpath,
        scratch,
        judgeOutput: join(scratch, 'judge.json'),
        rest: { uri: server.uri },
        tables: tables.map((t) => ({ id: t.id, metadata: t.metadata, columns: t.expected.columns, rest: { namespace: source.db, name: t.name } })),
      }),
    );
    for (const script of ['read_spark.py', 'read_pyiceberg.py']) {
      const output = join(scratch, `${script}.json`);
      try {
        await exec(tools.python, [resolve('test/engines', script), input, output], { cwd: resolve('test/engines'), maxBuffer: 64 * 1024 * 1024 });
      } catch (error) {
        throw new Error(`${script} failed: ${(error as { stderr?: string }).stderr?.split('\n').slice(-30).join('\n') ?? error}`);
      }
      const read = (JSON.parse(readFileSync(output, 'utf8')) as { tables: Record<string, { rows?: (string | null)[][]; error?: string }> }).tables;
      for (const { id, expected } of tables) {
        expect(read[id]?.error, `${script} ${id}: its error`).toBeUndefined();
        const comparison = compare(expected, read[id]?.rows ?? []);
        console.log(
          `rest: ${script} ${id} through the REST catalog: ${comparison.engineRows} rows vs MariaDB ${comparison.mariadbRows}, ${comparison.cells} cells`,
        );
        expect(comparison.differences, `${script} ${id}: differences from MariaDB`).toEqual([]);
        expect(comparison.engineRows).toBe(expected.rows.length);
      }
    }
  });
});
