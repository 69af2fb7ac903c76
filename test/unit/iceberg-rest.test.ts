import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config/config.ts';
import { ErrorCode, type SluiceError } from '../../lib/errors.ts';
import { type RestLocation, restCatalog } from '../../lib/iceberg/catalog/rest.ts';
import { catalogCommit } from '../../lib/iceberg/catalog/rest-commit.ts';
import { fetchTransport, type RestTransport } from '../../lib/iceberg/catalog/rest-transport.ts';
import type { Snapshot, TableMetadata } from '../../lib/iceberg/files/metadata.ts';
import { memoryObjectStore } from '../../lib/sink/s3/object-store.ts';

/*
 * The REST catalog client against a fake catalog that keeps tables in memory, checks a commit's
 * requirements as the spec says (409 when one fails) and applies its updates: the requests sent
 * (paths under the config's prefix, register, the guarded diff), a redo sending nothing, and
 * conflicts. The real server (Iceberg's RESTCatalogServer) is in test/engines/rest-catalog.test.ts.
 */

const LOCATION = 'p/iceberg/shop/orders';
const key = (n: number) => `${LOCATION}/metadata/v${n}.metadata.json`;
const field = (id: number, name: string) => ({ id, name, required: false, type: 'long' });
const schema = (id: number, fields: ReturnType<typeof field>[]) => ({ type: 'struct' as const, 'schema-id': id, fields });

function snapshot(id: number, parent: number | undefined, sequence: number, schemaId = 0): Snapshot {
  return {
    'snapshot-id': id,
    ...(parent ? { 'parent-snapshot-id': parent } : {}),
    'sequence-number': sequence,
    'timestamp-ms': 1000 * sequence,
    'manifest-list': `s3://bucket/${LOCATION}/metadata/snap-${id}.avro`,
    summary: { operation: 'append' },
    'schema-id': schemaId,
  };
}

/** Sluice's metadata with `snapshots` (the last current), schemas 0.. as given. */
function metadata(snapshots: Snapshot[], schemas = [schema(0, [field(1, 'id')])], properties: Record<string, string> = {}): TableMetadata {
  const current = snapshots.at(-1);
  return {
    'format-version': 2,
    'table-uuid': '11111111-2222-8333-8444-555555555555',
    location: `s3://bucket/${LOCATION}`,
    'last-sequence-number': current?.['sequence-number'] ?? 0,
    'last-updated-ms': 1,
    'last-column-id': Math.max(...schemas.flatMap((s) => s.fields.map((f) => f.id))),
    'current-schema-id': schemas.at(-1)?.['schema-id'] ?? 0,
    schemas,
    'default-spec-id': 0,
    'partition-specs': [{ 'spec-id': 0, fields: [] }],
    'last-partition-id': 999,
    'default-sort-order-id': 0,
    'sort-orders': [{ 'order-id': 0, fields: [] }],
    properties: { 'sluice.key-field-ids': '1', ...properties },
    ...(current ? { 'current-snapshot-id': current['snapshot-id'], refs: { main: { 'snapshot-id': current['snapshot-id'], type: 'branch' as const } } } : {}),
    snapshots,
    'snapshot-log': [],
    'metadata-log': [],
  };
}

type Mutable = { -readonly [K in keyof TableMetadata]: TableMetadata[K] };

/** An in-memory REST catalog; `prefix` is what /v1/config hands out, `register` false answers register with 501. */
function fakeCatalog(
  store: ReturnType<typeof memoryObjectStore>,
  options: { prefix?: string; register?: boolean; separator?: string; location?: string } = {},
) {
  const separator = options.separator ?? '\u001f';
  const tables = new Map<string, Mutable>();
  const namespaces = new Set<string>();
  const calls: { method: string; path: string; body?: unknown }[] = [];
  const base = options.prefix ? `/v1/${options.prefix}` : '/v1';
  const failNext: number[] = [];
  const transport: RestTransport = {
    async request(method, path, body) {
      calls.push({ method, path, ...(body !== undefined ? { body } : {}) });
      if (path.startsWith('/v1/config'))
        return {
          status: 200,
          body: {
            defaults: {},
            overrides: {
              ...(options.prefix ? { prefix: options.prefix } : {}),
              ...(options.separator ? { 'namespace-separator': encodeURIComponent(separator) } : {}),
            },
          },
        };
      if (!path.startsWith(`${base}/namespaces`)) return { status: 404, body: { error: { message: `no route ${path}` } } };
      const rest = path.slice(`${base}/namespaces`.length);
      if (rest === '' && method === 'POST') {
        const ns = (body as { namespace: string[] }).namespace.join(separator);
        if (namespaces.has(ns)) return { status: 409, body: { error: { type: 'AlreadyExistsException', message: 'exists' } } };
        namespaces.add(ns);
        return { status: 200, body: {} };
      }
      const [, ns, kind, name] = /^\/([^/]+)\/(register|tables)(?:\/(.+))?$/.exec(rest) ?? [];
      const id = `${decodeURIComponent(ns ?? '')}.${decodeURIComponent(name ?? (body as { name?: string })?.name ?? '')}`;
      if (!namespaces.has(decodeURIComponent(ns ?? ''))) return { status: 404, body: { error: { type: 'NoSuchNamespaceException', message: 'no namespace' } } };
      if (kind === 'register') {
        if (options.register === false) return { status: 501, body: { error: { message: 'not implemented' } } };
        if (tables.has(id)) return { status: 409, body: { error: { type: 'AlreadyExistsException' } } };
        const file = store.keyOf((body as { 'metadata-location': string })['metadata-location']);
        tables.set(id, JSON.parse(new TextDecoder().decode(await store.get(file))) as Mutable);
        return { status: 200, body: { metadata: tables.get(id) } };
      }
      if (kind === 'tables' && !name && method === 'POST') {
        const request = body as { schema: TableMetadata['schemas'][number]; properties: Record<string, string>; location?: string };
        // Fresh ids, as Java's catalogs assign them: 1.. in field order.
        const fresh = { ...request.schema, 'schema-id': 0, fields: request.schema.fields.map((f, i) => ({ ...f, id: i + 1 })) };
        const created = {
          ...metadata([], [fresh], request.properties),
          'table-uuid': 'catalog-uuid',
          // A create without a location is placed in the catalog's warehouse.
          location: options.location ?? request.location ?? 's3://warehouse/shop/orders',
        } as Mutable;
        tables.set(id, created);
        return { status: 200, body: { metadata: created } };
      }
      const table = tables.get(id);
      if (!table) return { status: 404, body: { error: { type: 'NoSuchTableException', message: 'no table' } } };
      if (method === 'GET') return { status: 200, body: { 'metadata-location': 's3://bucket/x.json', metadata: structuredClone(table) } };
      const status = failNext.shift();
      if (status) return { status, body: { error: { message: 'injected' } } };
      const commit = body as { requirements: Record<string, unknown>[]; updates: Record<string, unknown>[] };
      for (const r of commit.requirements) {
        const main = table.refs?.main?.['snapshot-id'] ?? null;
        const ok =
          (r.type === 'assert-table-uuid' && r.uuid === table['table-uuid']) ||
          (r.type === 'assert-ref-snapshot-id' && r['snapshot-id'] === main) ||
          (r.type === 'assert-current-schema-id' && r['current-schema-id'] === table['current-schema-id']) ||
          (r.type === 'assert-last-assigned-field-id' && r['last-assigned-field-id'] === table['last-column-id']);
        if (!ok) return { status: 409, body: { error: { type: 'CommitFailedException', message: `requirement failed: ${JSON.stringify(r)}` } } };
      }
      let added: number | undefined;
      for (const u of commit.updates) {
        if (u.action === 'add-schema') {
          added = Math.max(...table.schemas.map((s) => s['schema-id'])) + 1;
          table.schemas = [...table.schemas, { ...(u.schema as TableMetadata['schemas'][number]), 'schema-id': added }];
        } else if (u.action === 'set-current-schema') table['current-schema-id'] = u['schema-id'] === -1 ? (added ?? -1) : (u['schema-id'] as number);
        else if (u.action === 'add-snapshot') {
          const s = u.snapshot as Snapshot;
          if (table.snapshots.some((t) => t['snapshot-id'] === s['snapshot-id'])) return { status: 400, body: { error: { message: 'duplicate snapshot' } } };
          table.snapshots = [...table.snapshots, s];
        } else if (u.action === 'set-snapshot-ref') {
          table.refs = { main: { 'snapshot-id': u['snapshot-id'] as number, type: 'branch' } };
          table['current-snapshot-id'] = u['snapshot-id'] as number;
        } else if (u.action === 'remove-snapshots')
          table.snapshots = table.snapshots.filter((s) => !(u['snapshot-ids'] as number[]).includes(s['snapshot-id']));
        else if (u.action === 'set-properties') table.properties = { ...table.properties, ...(u.updates as Record<string, string>) };
        else return { status: 400, body: { error: { message: `unknown update ${String(u.action)}` } } };
      }
      return { status: 200, body: { metadata: table } };
    },
  };
  return { transport, tables, calls, failNext };
}

const nameOf = () => ({ namespace: ['shop'], name: 'orders' });
const table = { db: 'shop', table: 'orders' };

async function publishing(options: Parameters<typeof fakeCatalog>[1] & { namespace?: string[]; placement?: RestLocation } = {}) {
  const store = memoryObjectStore('bucket');
  const fake = fakeCatalog(store, options);
  const names = options.namespace ? () => ({ namespace: options.namespace ?? [], name: 'orders' }) : nameOf;
  const catalog = restCatalog(fake.transport, store, {
    warehouse: 'arn:aws:s3tables:us-east-1:1:bucket/lake',
    nameOf: names,
    ...(options.placement ? { location: options.placement } : {}),
  });
  const publish = async (n: number, m: TableMetadata) => {
    await store.put(key(n), JSON.stringify(m));
    await catalog.publish(table, { metadataKey: key(n), ...(n > 1 ? { previousMetadataKey: key(n - 1) } : {}) });
  };
  return { store, fake, catalog, publish, stored: () => fake.tables.get(`${(options.namespace ?? ['shop']).join(options.separator ?? '\u001f')}.orders`) };
}

describe('the Iceberg REST catalog client', () => {
  it('asks /v1/config for the warehouse, creates the namespace and registers a new table under the prefix it was given', async () => {
    const { fake, publish, stored } = await publishing({ prefix: 'lake/cat' });
    await publish(1, metadata([snapshot(10, undefined, 1)]));
    expect(fake.calls[0]).toEqual({ method: 'GET', path: `/v1/config?warehouse=${encodeURIComponent('arn:aws:s3tables:us-east-1:1:bucket/lake')}` });
    expect(fake.calls.map((c) => `${c.method} ${c.path}`).slice(1)).toEqual([
      'GET /v1/lake/cat/namespaces/shop/tables/orders',
      'POST /v1/lake/cat/namespaces',
      'POST /v1/lake/cat/namespaces/shop/register',
      'GET /v1/lake/cat/namespaces/shop/tables/orders',
    ]);
    expect(fake.calls[3]?.body).toEqual({ name: 'orders', 'metadata-location': `s3://bucket/${key(1)}` });
    expect(stored()?.['current-snapshot-id']).toBe(10);
  });

  it('uses the prefix /v1/config gives as it is (S3 Tables gives its bucket ARN encoded)', async () => {
    const arn = encodeURIComponent('arn:aws:s3tables:us-east-1:1:bucket/lake');
    const { fake, publish } = await publishing({ prefix: arn });
    await publish(1, metadata([snapshot(10, undefined, 1)]));
    expect(fake.calls.at(-1)?.path).toBe(`/v1/${arn}/namespaces/shop/tables/orders`);
  });

  it('creates each level of a nested namespace and joins the levels in paths with the separator /v1/config names', async () => {
    const { fake, publish, stored } = await publishing({ separator: '.', namespace: ['lake', 'sluice'] });
    await publish(1, metadata([snapshot(10, undefined, 1)]));
    expect(fake.calls.filter((c) => c.path === '/v1/namespaces').map((c) => c.body)).toEqual([
      { namespace: ['lake'], properties: {} },
      { namespace: ['lake', 'sluice'], properties: {} },
    ]);
    expect(fake.calls.map((c) => c.path)).toContain('/v1/namespaces/lake.sluice/register');
    expect(stored()?.['current-snapshot-id']).toBe(10);
  });

  it('commits the next version as a guarded diff: the new snapshot, main, and sluice properties that changed', async () => {
    const { fake, publish, stored } = await publishing();
    await publish(1, metadata([snapshot(10, undefined, 1)]));
    fake.calls.length = 0;
    await publish(2, metadata([snapshot(10, undefined, 1), snapshot(20, 10, 2)], undefined, { 'sluice.bucket-count': '4' }));
    const commit = fake.calls.find((c) => c.method === 'POST')?.body as { requirements: unknown[]; updates: { action: string }[] };
    expect(commit.requirements).toEqual([
      { type: 'assert-table-uuid', uuid: '11111111-2222-8333-8444-555555555555' },
      { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': 10 },
      { type: 'assert-current-schema-id', 'current-schema-id': 0 },
    ]);
    expect(commit.updates.map((u) => u.action)).toEqual(['add-snapshot', 'set-snapshot-ref', 'set-properties']);
    expect(commit.updates[1]).toEqual({ action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': 20 });
    expect(stored()?.snapshots.map((s) => s['snapshot-id'])).toEqual([10, 20]);
  });

  it('sends nothing when a redo finds the catalog at the version already (a crash after the catalog commit)', async () => {
    const { fake, publish, stored } = await publishing();
    const v2 = metadata([snapshot(10, undefined, 1), snapshot(20, 10, 2), snapshot(21, 20, 3)]);
    await publish(1, metadata([snapshot(10, undefined, 1)]));
    await publish(2, v2);
    fake.calls.length = 0;
    await publish(2, v2);
    expect(fake.calls.map((c) => c.method)).toEqual(['GET']);
    expect(stored()?.snapshots.map((s) => s['snapshot-id'])).toEqual([10, 20, 21]);
  });

  it('adds an evolved schema, makes it current and names it in the snapshot by the id the catalog gives it', async () => {
    const { publish, stored } = await publishing();
    const s0 = schema(0, [field(1, 'id')]);
    await publish(1, metadata([snapshot(10, undefined, 1)], [s0]));
    const s1 = schema(1, [field(1, 'id'), field(2, 'note')]);
    await publish(2, metadata([snapshot(10, undefined, 1), snapshot(20, 10, 2, 1)], [s0, s1]));
    const at = stored();
    expect(at?.['current-schema-id']).toBe(1);
    expect(at?.schemas.find((s) => s['schema-id'] === 1)?.fields.map((f) => f.name)).toEqual(['id', 'note']);
    expect(at?.snapshots.at(-1)?.['schema-id']).toBe(1);
  });

  it("removes the snapshots sluice's expiry removed", async () => {
    const { publish, stored } = await publishing();
    await publish(1, metadata([snapshot(10, undefined, 1), snapshot(20, 10, 2)]));
    await publish(2, metadata([snapshot(30, 20, 3)]));
    expect(stored()?.snapshots.map((s) => s['snapshot-id'])).toEqual([30]);
    expect(stored()?.refs?.main?.['snapshot-id']).toBe(30);
  });

  it('loads again after a 409 or an unknown outcome (5xx) and commits once', async () => {
    const { fake, publish, stored } = await publishing();
    await publish(1, metadata([snapshot(10, undefined, 1)]));
    fake.failNext.push(409, 503);
    await publish(2, metadata([snapshot(10, undefined, 1), snapshot(20, 10, 2)]));
    expect(stored()?.snapshots.map((s) => s['snapshot-id'])).toEqual([10, 20]);
  });

  it("fails with ICEBERG_CATALOG_CONFLICT when someone else committed to main, or the name holds another table, and leaves the catalog's table alone", async () => {
    const { publish, stored } = await publishing();
    await publish(1, metadata([snapshot(10, undefined, 1)]));
    const intruder = stored();
    if (!intruder) throw new Error('no table');
    intruder.snapshots = [...intruder.snapshots, snapshot(99, 10, 2)];
    intruder.refs = { main: { 'snapshot-id': 99, type: 'branch' } };
    const failure = await publish(2, metadata([snapshot(10, undefined, 1), snapshot(20, 10, 2)])).catch((e: SluiceError) => e);
    expect((failure as SluiceError).code).toBe(ErrorCode.ICEBERG_CATALOG_CONFLICT);
    expect((failure as SluiceError).message).toMatch(/snapshot 99.*another writer/);
    expect(stored()?.refs?.main?.['snapshot-id']).toBe(99);
    intruder['table-uuid'] = 'someone-else';
    const other = await publish(2, metadata([snapshot(10, undefined, 1), snapshot(20, 10, 2)])).catch((e: SluiceError) => e);
    expect((other as SluiceError).message).toMatch(/is another table/);
  });

  it("creates the table with no columns when the catalog has no register, then adds sluice's schema (field ids kept) and snapshots", async () => {
    const { fake, publish, stored } = await publishing({ register: false });
    // A dropped column left a gap in the ids: a catalog's create would renumber them, add-schema keeps them.
    const columns = [field(1, 'id'), field(3, 'n')];
    await publish(1, metadata([snapshot(10, undefined, 1)], [schema(0, columns)]));
    const create = fake.calls.find((c) => c.path.endsWith('/namespaces/shop/tables') && c.method === 'POST');
    expect((create?.body as { schema: unknown } | undefined)?.schema).toEqual({ type: 'struct', 'schema-id': 0, fields: [] });
    const at = stored();
    expect(at?.properties['sluice.table-uuid']).toBe('11111111-2222-8333-8444-555555555555');
    expect(at?.schemas.find((s) => s['schema-id'] === at['current-schema-id'])?.fields).toEqual(columns);
    expect(at?.refs?.main?.['snapshot-id']).toBe(10);
    expect(at?.snapshots[0]?.['schema-id']).toBe(at?.['current-schema-id']);
    // A catalog that places the table itself (S3 Tables): sluice's files would lie outside it; nothing is sent.
    const placed = await publishing({ register: false, location: 's3://abc--table-s3' });
    const elsewhere = await placed.publish(1, metadata([snapshot(10, undefined, 1)])).catch((e: SluiceError) => e);
    expect((elsewhere as SluiceError).code).toBe(ErrorCode.ICEBERG_CATALOG_CONFLICT);
    expect((elsewhere as SluiceError).message).toMatch(/keeps shop.orders at s3:\/\/abc--table-s3, not at s3:\/\/bucket\/p\/iceberg\/shop\/orders/);
    expect(placed.stored()?.snapshots).toEqual([]);
  });

  it("removes only sluice's own snapshots (main and its ancestors), never another writer's on another branch", () => {
    const current = {
      ...metadata([snapshot(10, undefined, 1), snapshot(20, 10, 2)]),
      // Another writer's snapshot, on a branch of its own: not in sluice's history.
      snapshots: [snapshot(10, undefined, 1), snapshot(20, 10, 2), snapshot(77, 10, 3)],
    };
    const commit = catalogCommit(current, metadata([snapshot(30, 20, 4)]), 'shop.orders');
    expect(commit?.updates.find((u) => u.action === 'remove-snapshots')).toEqual({ action: 'remove-snapshots', 'snapshot-ids': [10, 20] });
  });

  it('knows a schema the catalog serialized in another key order (no add-schema)', () => {
    const target = metadata([snapshot(10, undefined, 1), snapshot(20, 10, 2)]);
    const reordered = {
      ...metadata([snapshot(10, undefined, 1)]),
      schemas: [{ fields: [{ type: 'long', required: false, name: 'id', id: 1 }], 'schema-id': 0, type: 'struct' as const }],
    };
    const commit = catalogCommit(reordered as TableMetadata, target, 'shop.orders');
    expect(commit?.updates.map((u) => u.action)).toEqual(['add-snapshot', 'set-snapshot-ref']);
  });

  it('knows a schema whose types the catalog spells with blanks, as Java writes decimal(20, 0) (no add-schema)', () => {
    const columns = [field(1, 'id'), { id: 2, name: 'amount', required: false, type: 'decimal(20,0)' }];
    const target = { ...metadata([snapshot(10, undefined, 1), snapshot(20, 10, 2)]), schemas: [schema(0, columns)] };
    const java = {
      ...metadata([snapshot(10, undefined, 1)]),
      schemas: [
        schema(
          0,
          columns.map((c) => ({ ...c, type: c.type.replace(',', ', ') })),
        ),
      ],
    };
    const commit = catalogCommit(java as TableMetadata, target as TableMetadata, 'shop.orders');
    expect(commit?.updates.map((u) => u.action)).toEqual(['add-snapshot', 'set-snapshot-ref']);
  });

  it('diffs nothing for the same metadata and refuses a main outside its history', () => {
    const m = metadata([snapshot(10, undefined, 1)]);
    expect(catalogCommit(m, m, 'shop.orders')).toBeUndefined();
    const elsewhere = metadata([snapshot(5, undefined, 1)]);
    expect(() => catalogCommit(elsewhere, m, 'shop.orders')).toThrow(/another writer/);
  });
});

describe('a catalog that assigns table locations (SLUICE_ICEBERG_REST_LOCATION=catalog)', () => {
  const PLACED = 's3://abc--table-s3';
  /** Sluice's metadata as the merge stages it at the location `locate` returned. */
  const at = (m: TableMetadata, location: string) => ({ ...m, location });

  it('creates the table with no location and no columns, returns the location the catalog assigned, and the first publish adopts it (no register)', async () => {
    const { fake, catalog, publish, stored } = await publishing({ placement: 'catalog', location: `${PLACED}/` });
    expect(await catalog.locate?.(table)).toBe(PLACED);
    const create = fake.calls.find((c) => c.method === 'POST' && c.path === '/v1/namespaces/shop/tables');
    expect(create?.body).toEqual({
      name: 'orders',
      schema: { type: 'struct', 'schema-id': 0, fields: [] },
      'partition-spec': { 'spec-id': 0, fields: [] },
      'write-order': { 'order-id': 0, fields: [] },
      properties: {},
    });
    const columns = [field(1, 'id'), field(3, 'n')];
    await publish(1, at(metadata([snapshot(10, undefined, 1)], [schema(0, columns)]), PLACED));
    expect(fake.calls.some((c) => c.path.endsWith('/register'))).toBe(false);
    const adopted = stored();
    expect(adopted?.properties['sluice.table-uuid']).toBe('11111111-2222-8333-8444-555555555555');
    expect(adopted?.['table-uuid']).toBe('catalog-uuid');
    expect(adopted?.refs?.main?.['snapshot-id']).toBe(10);
    expect(adopted?.schemas.find((s) => s['schema-id'] === adopted['current-schema-id'])?.fields).toEqual(columns);
    // The next version is the usual diff, the property already there.
    fake.calls.length = 0;
    await publish(2, at(metadata([snapshot(10, undefined, 1), snapshot(20, 10, 2)], [schema(0, columns)]), PLACED));
    const commit = fake.calls.find((c) => c.method === 'POST')?.body as { updates: { action: string }[] };
    expect(commit.updates.map((u) => u.action)).toEqual(['add-snapshot', 'set-snapshot-ref']);
  });

  it('adopts the empty table an attempt that crashed before its commit created (no second create)', async () => {
    const { fake, catalog } = await publishing({ placement: 'catalog', location: PLACED });
    expect(await catalog.locate?.(table)).toBe(PLACED);
    expect(await catalog.locate?.(table)).toBe(PLACED);
    expect(fake.calls.filter((c) => c.method === 'POST' && c.path.endsWith('/tables'))).toHaveLength(1);
  });

  it('refuses another sluice table, one with snapshots sluice did not write, and a location that is not s3://', async () => {
    const claimed = await publishing({ placement: 'catalog', location: PLACED });
    await claimed.catalog.locate?.(table);
    const other = claimed.stored();
    if (!other) throw new Error('no table');
    other.properties = { 'sluice.table-uuid': '99999999-2222-8333-8444-555555555555' };
    const another = await claimed.catalog.locate?.(table).catch((e: SluiceError) => e);
    expect((another as SluiceError).code).toBe(ErrorCode.ICEBERG_CATALOG_CONFLICT);
    expect((another as SluiceError).message).toMatch(/is another sluice table \(sluice.table-uuid 99999999/);
    other.properties = {};
    other.snapshots = [snapshot(5, undefined, 1)];
    other.refs = { main: { 'snapshot-id': 5, type: 'branch' } };
    const written = await claimed.catalog.locate?.(table).catch((e: SluiceError) => e);
    expect((written as SluiceError).code).toBe(ErrorCode.ICEBERG_CATALOG_CONFLICT);
    expect((written as SluiceError).message).toMatch(/has snapshots sluice did not write/);
    // And publishing over it: a table with snapshots that carries no sluice uuid is not sluice's.
    await expect(claimed.publish(1, at(metadata([snapshot(10, undefined, 1)]), PLACED))).rejects.toThrow(/is another table/);

    const local = await publishing({ placement: 'catalog', location: 'file:///tmp/warehouse/shop/orders' });
    const unsupported = await local.catalog.locate?.(table).catch((e: SluiceError) => e);
    expect((unsupported as SluiceError).code).toBe(ErrorCode.ICEBERG_UNSUPPORTED);
    expect((unsupported as SluiceError).message).toMatch(/file:\/\/\/tmp\/warehouse\/shop\/orders, which is not an s3:\/\/ location/);
  });

  it('is not asked for a location by default (sluice places the table and registers it)', async () => {
    const { catalog } = await publishing();
    expect(catalog.locate).toBeUndefined();
  });
});

describe('the REST transport', () => {
  it('signs with SigV4 for the configured service and region, and sends the JSON body', async () => {
    const seen: { url: string; init: RequestInit }[] = [];
    const fetcher = (async (url: URL, init: RequestInit) => {
      seen.push({ url: String(url), init });
      return new Response('{"ok":true}', { status: 200 });
    }) as unknown as typeof fetch;
    const transport = fetchTransport(
      'https://s3tables.eu-west-1.amazonaws.com/iceberg/',
      { kind: 'sigv4', signingName: 's3tables', region: 'eu-west-1', credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' } },
      fetcher,
    );
    const answer = await transport.request('POST', '/v1/x/namespaces', { namespace: ['shop'] });
    expect(answer).toEqual({ status: 200, body: { ok: true } });
    expect(seen[0]?.url).toBe('https://s3tables.eu-west-1.amazonaws.com/iceberg/v1/x/namespaces');
    const headers = (seen[0]?.init.headers ?? {}) as Record<string, string>;
    expect(headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\/s3tables\/aws4_request, SignedHeaders=[^,]*host[^,]*, Signature=[0-9a-f]{64}$/,
    );
    expect(headers['x-amz-content-sha256']).toMatch(/^[0-9a-f]{64}$/);
    expect(seen[0]?.init.body).toBe('{"namespace":["shop"]}');
  });

  it('exchanges client credentials for a token once and sends it as a bearer token', async () => {
    const seen: { url: string; init: RequestInit }[] = [];
    const fetcher = (async (url: URL | string, init: RequestInit) => {
      seen.push({ url: String(url), init });
      if (String(url).endsWith('/oauth/tokens')) return new Response('{"access_token":"t0k","expires_in":3600}', { status: 200 });
      return new Response('{}', { status: 200 });
    }) as unknown as typeof fetch;
    const transport = fetchTransport('http://127.0.0.1:8181', { kind: 'oauth', clientId: 'id', clientSecret: 's3cr3t', scope: 'PRINCIPAL_ROLE:ALL' }, fetcher);
    await transport.request('GET', '/v1/config');
    await transport.request('GET', '/v1/config');
    expect(seen.map((s) => s.url)).toEqual(['http://127.0.0.1:8181/v1/oauth/tokens', 'http://127.0.0.1:8181/v1/config', 'http://127.0.0.1:8181/v1/config']);
    expect(String(seen[0]?.init.body)).toBe('grant_type=client_credentials&client_id=id&client_secret=s3cr3t&scope=PRINCIPAL_ROLE%3AALL');
    expect((seen[1]?.init.headers as Record<string, string> | undefined)?.authorization).toBe('Bearer t0k');
  });
});

describe('the catalog configuration', () => {
  const base = { SLUICE_SOURCE_ID: 'orders-db', SLUICE_MYSQL_URL: 'mysql://u:p@db:3306/', SLUICE_STATE_TABLE: 'sluice-state', SLUICE_BUCKET: 'lake' };
  it('keeps the file catalog as the default and Glue chosen by SLUICE_GLUE_DATABASE', () => {
    expect(loadConfig(base).iceberg.catalog).toEqual({ kind: 'file' });
    expect(loadConfig({ ...base, SLUICE_GLUE_DATABASE: 'lake' }).iceberg.catalog).toEqual({ kind: 'glue', database: 'lake' });
  });

  it('reads a REST catalog with SigV4, a namespace and a warehouse', () => {
    const config = loadConfig({
      ...base,
      SLUICE_ICEBERG_CATALOG: 'rest',
      SLUICE_ICEBERG_REST_URI: 'https://s3tables.us-east-1.amazonaws.com/iceberg',
      SLUICE_ICEBERG_REST_WAREHOUSE: 'arn:aws:s3tables:us-east-1:123456789012:bucket/lake',
      SLUICE_ICEBERG_REST_NAMESPACE: 'lake.sluice',
      SLUICE_ICEBERG_REST_SIGNING_NAME: 's3tables',
    });
    expect(config.iceberg.catalog).toEqual({
      kind: 'rest',
      uri: 'https://s3tables.us-east-1.amazonaws.com/iceberg',
      warehouse: 'arn:aws:s3tables:us-east-1:123456789012:bucket/lake',
      namespace: ['lake', 'sluice'],
      location: 'sluice',
      auth: { kind: 'sigv4', signingName: 's3tables', region: undefined },
    });
    const placed = { ...base, SLUICE_ICEBERG_CATALOG: 'rest', SLUICE_ICEBERG_REST_URI: 'http://x', SLUICE_ICEBERG_REST_LOCATION: 'catalog' };
    expect(loadConfig(placed).iceberg.catalog).toMatchObject({ kind: 'rest', location: 'catalog' });
    expect(() => loadConfig({ ...placed, SLUICE_ICEBERG_REST_LOCATION: 's3tables' })).toThrow(/SLUICE_ICEBERG_REST_LOCATION/);
    expect(() => loadConfig({ ...base, SLUICE_ICEBERG_REST_LOCATION: 'catalog' })).toThrow(
      /SLUICE_ICEBERG_REST_LOCATION: only used with SLUICE_ICEBERG_CATALOG=rest/,
    );
  });

  it('names the variable and the fix when the REST settings are missing or contradict each other', () => {
    expect(() => loadConfig({ ...base, SLUICE_ICEBERG_CATALOG: 'rest' })).toThrow(/SLUICE_ICEBERG_REST_URI: is required with SLUICE_ICEBERG_CATALOG=rest/);
    expect(() =>
      loadConfig({
        ...base,
        SLUICE_ICEBERG_CATALOG: 'rest',
        SLUICE_ICEBERG_REST_URI: 'http://x',
        SLUICE_ICEBERG_REST_SIGNING_NAME: 'glue',
        SLUICE_ICEBERG_REST_TOKEN: 't',
      }),
    ).toThrow(/choose one way to authenticate/);
    expect(() => loadConfig({ ...base, SLUICE_ICEBERG_REST_URI: 'http://x' })).toThrow(/only used with SLUICE_ICEBERG_CATALOG=rest \(it is file\)/);
    expect(() => loadConfig({ ...base, SLUICE_ICEBERG_CATALOG: 'glue' })).toThrow(/SLUICE_GLUE_DATABASE: is required with SLUICE_ICEBERG_CATALOG=glue/);
    expect(() => loadConfig({ ...base, SLUICE_ICEBERG_CATALOG: 'rest', SLUICE_ICEBERG_REST_URI: 'ftp://x' })).toThrow(
      /SLUICE_ICEBERG_REST_URI: expected an http\(s\) URL/,
    );
    expect(() => loadConfig({ ...base, SLUICE_ICEBERG_CATALOG: 'nessie' })).toThrow(/SLUICE_ICEBERG_CATALOG/);
  });
});
