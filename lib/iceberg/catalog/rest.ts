import { createHash, createHmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import type { TableRef } from '../../core/table-ref.ts';
import { ErrorCode, SluiceError } from '../../errors.ts';
import type { ObjectStore } from '../../sink/s3/object-store.ts';
import { parseJson, stringifyJson } from '../files/json.ts';
import type { Snapshot, TableMetadata } from '../files/metadata.ts';
import type { IcebergSchema } from '../files/schema.ts';
import { CatalogMaintainedError, descent, mainOf, maintainedSince } from './ancestry.ts';
import type { IcebergCatalog } from './catalog.ts';

/*
 * An Iceberg REST catalog (open-api/rest-catalog-open-api.yaml in apache/iceberg): Polaris, Nessie,
 * Lakekeeper, the Glue Data Catalog's and S3 Tables' endpoints (SigV4), Iceberg's own fixture.
 *
 * The merge keeps writing its own metadata chain (`<N>-<uuid>.metadata.json`, the one the ledger names and
 * the next merge builds on); the catalog keeps its own metadata files, which name sluice's manifest
 * lists, manifests and data files as they are. Publishing a committed version is a diff: load the
 * catalog's table, and send what sluice's committed metadata has that the catalog's lacks (schemas,
 * the snapshots after the catalog's `main`, `main` itself, the snapshots expiry removed, sluice's
 * properties), guarded by the catalog's table uuid, `main` and current schema id. A redo after a
 * crash anywhere loads the table again and finds the snapshots by their ids (deterministic per
 * commit): nothing is added twice, and a table already at the version sends nothing.
 *
 * A table the catalog does not have yet is registered from sluice's metadata file (`register`), so
 * every id (fields, schemas, snapshots, the table uuid) is sluice's own. A catalog without register
 * gets `create-table` with no columns, and then the same diff (which adds sluice's schemas, ids kept).
 *
 * Where the table's files go. `location: 'sluice'`: under sluice's own location in SLUICE_BUCKET,
 * which the register or create names. `location: 'catalog'` (S3 Tables, managed Polaris or
 * Lakekeeper warehouses): the catalog assigns it. Before a table's first merge stages anything,
 * `locate` creates the table with no location and no columns and hands back the `location` the
 * catalog chose; the merge writes every data file, delete file, manifest and manifest list under it
 * and names it as its metadata's `location`, so the first publish is the same diff. Later merges
 * read the location from sluice's committed metadata and never ask again. The created table does
 * not carry `sluice.table-uuid` yet (sluice's uuid is fixed by its first commit): an empty table
 * without it is adopted — the create of an attempt that crashed before its commit — and the first
 * publish sets it.
 */

/** One HTTP exchange with the catalog: JSON in, status and JSON out (fetch, or a fake in tests). */
export interface RestTransport {
  request(method: 'GET' | 'POST' | 'HEAD' | 'DELETE', path: string, body?: unknown): Promise<{ status: number; body: unknown }>;
}

/** How requests are authenticated. */
export type RestAuth =
  | { readonly kind: 'none' }
  | { readonly kind: 'bearer'; readonly token: string }
  | { readonly kind: 'oauth'; readonly clientId: string; readonly clientSecret: string; readonly scope: string; readonly tokenUri?: string | undefined }
  | {
      readonly kind: 'sigv4';
      readonly signingName: string;
      readonly region: string | (() => Promise<string>);
      readonly credentials: AwsCredentialSource;
    };

/** What SignatureV4 accepts as credentials: a value or the SDK's provider. */
export type AwsCredentialSource =
  | { accessKeyId: string; secretAccessKey: string; sessionToken?: string }
  | (() => Promise<{ accessKeyId: string; secretAccessKey: string; sessionToken?: string }>);

type Bytes = string | ArrayBuffer | ArrayBufferView;
const bytes = (data: Bytes) =>
  typeof data === 'string' ? data : data instanceof ArrayBuffer ? new Uint8Array(data) : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);

/** SHA-256 (an HMAC given a secret) for SignatureV4, from node:crypto. */
class Sha256 {
  private hash;
  constructor(private readonly secret?: Bytes) {
    this.hash = this.fresh();
  }
  private fresh() {
    return this.secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(this.secret));
  }
  update(data: Bytes): void {
    this.hash.update(bytes(data));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
  reset(): void {
    this.hash = this.fresh();
  }
}

/** The transport over fetch: `<uri>/v1/...`, authenticated as `auth` says. */
export function fetchTransport(uri: string, auth: RestAuth, fetcher: typeof fetch = fetch): RestTransport {
  const base = uri.replace(/\/+$/, '');
  const signer =
    auth.kind === 'sigv4'
      ? new SignatureV4({ service: auth.signingName, region: auth.region, credentials: auth.credentials, sha256: Sha256, applyChecksum: true })
      : undefined;
  let token: { value: string; until: number } | undefined = auth.kind === 'bearer' ? { value: auth.token, until: Infinity } : undefined;

  const oauthToken = async (): Promise<string> => {
    if (auth.kind !== 'oauth') throw new SluiceError(ErrorCode.ASSERTION, 'no OAuth client configured');
    if (token && Date.now() < token.until) return token.value;
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: auth.clientId, client_secret: auth.clientSecret, scope: auth.scope });
    const response = await fetcher(auth.tokenUri ?? `${base}/v1/oauth/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
    });
    const body = (await response.json().catch(() => ({}))) as { access_token?: string; expires_in?: number; error_description?: string };
    if (!response.ok || !body.access_token)
      throw new SluiceError(
        ErrorCode.ICEBERG_CATALOG_REQUEST,
        `the Iceberg REST catalog's token endpoint refused the client credentials (HTTP ${response.status}${body.error_description ? `: ${body.error_description}` : ''}): check SLUICE_ICEBERG_REST_CREDENTIAL and SLUICE_ICEBERG_REST_SCOPE`,
      );
    // Renew a minute early: a request never goes out on a token about to expire.
    token = { value: body.access_token, until: Date.now() + Math.max(0, (body.expires_in ?? 3600) - 60) * 1000 };
    return token.value;
  };

  return {
    async request(method, path, body) {
      const url = new URL(`${base}${path}`);
      const text = body === undefined ? undefined : stringifyJson(body);
      let headers: Record<string, string> = { accept: 'application/json', ...(text !== undefined ? { 'content-type': 'application/json' } : {}) };
      if (auth.kind === 'bearer' || auth.kind === 'oauth') headers.authorization = `Bearer ${auth.kind === 'bearer' ? auth.token : await oauthToken()}`;
      if (signer) {
        const query: Record<string, string> = {};
        for (const [k, v] of url.searchParams) query[k] = v;
        const signed = await signer.sign({
          method,
          protocol: url.protocol,
          hostname: url.hostname,
          ...(url.port ? { port: Number(url.port) } : {}),
          path: url.pathname,
          query,
          headers: { ...headers, host: url.host },
          ...(text !== undefined ? { body: text } : {}),
        });
        // fetch sets Host itself, from the same URL.
        const { host: _host, ...rest } = signed.headers;
        headers = rest;
      }
      let response: Response;
      try {
        // A catalog that hangs must not hold the table (its lease renewed) until the function times out.
        response = await fetcher(url, { method, headers, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS), ...(text !== undefined ? { body: text } : {}) });
      } catch (error) {
        throw new SluiceError(
          ErrorCode.ICEBERG_CATALOG_REQUEST,
          `the Iceberg REST catalog at ${base} did not answer ${method} ${url.pathname}: ${(error as Error).message}`,
          {
            cause: error,
            retriable: true,
          },
        );
      }
      const answer = await response.text();
      let json: unknown;
      try {
        json = answer ? parseJson(answer) : undefined;
      } catch {
        json = { error: { message: answer.slice(0, 300) } };
      }
      return { status: response.status, body: json };
    },
  };
}

/** Where a source table lives in the catalog. */
export interface RestTableName {
  readonly namespace: readonly string[];
  readonly name: string;
}

/** What the REST catalog needs besides the transport. */
export interface RestCatalogOptions {
  /** The warehouse the client asks `/v1/config` for (an S3 Tables table bucket ARN, a Glue catalog id, a Polaris catalog). */
  readonly warehouse?: string;
  /** The table's namespace and name in the catalog. */
  readonly nameOf: (table: TableRef) => RestTableName;
  /** Who chooses a new table's location: sluice (its own under SLUICE_BUCKET, the default) or the catalog (SLUICE_ICEBERG_REST_LOCATION). */
  readonly location?: RestLocation;
}

/** SLUICE_ICEBERG_REST_LOCATION: `sluice` writes under its own location and registers it there; `catalog` writes where the catalog's create-table places the table. */
export type RestLocation = 'sluice' | 'catalog';

interface LoadedTable {
  readonly 'metadata-location'?: string;
  readonly metadata: TableMetadata;
}

/** An error answer as the spec lays it out: `{ error: { message, type, code } }`. */
function errorText(body: unknown): string {
  const error = (body as { error?: { message?: string; type?: string } } | undefined)?.error;
  return error ? `${error.type ?? 'error'}: ${error.message ?? ''}` : JSON.stringify(body ?? '').slice(0, 300);
}

/** Statuses after which a commit's outcome is unknown (the spec's CommitStateUnknown): load the table again and see. */
const UNKNOWN = new Set([500, 502, 503, 504]);
/** How long one catalog request may take. */
const REQUEST_TIMEOUT_MS = 30_000;
/** Statuses a catalog without `register` answers it with. */
const NO_REGISTER = new Set([400, 404, 405, 406, 501]);

/** The REST catalog: creates namespaces and tables, and commits each published version as a guarded diff. */
export function restCatalog(transport: RestTransport, store: ObjectStore, options: RestCatalogOptions): IcebergCatalog {
  /** What /v1/config said: the path tables are under and how namespace levels join in a path (the spec's default: %1F). */
  let prefix: Promise<{ path: string; separator: string }> | undefined;
  const knownNamespaces = new Set<string>();

  const fail = (what: string, status: number, body: unknown, retriable = UNKNOWN.has(status) || status === 429) => {
    const hint =
      status === 401 || status === 403
        ? ' (check the credentials: SLUICE_ICEBERG_REST_SIGNING_NAME and the AWS credentials for SigV4, or SLUICE_ICEBERG_REST_TOKEN / SLUICE_ICEBERG_REST_CREDENTIAL, and the IAM policy)'
        : '';
    return new SluiceError(ErrorCode.ICEBERG_CATALOG_REQUEST, `the Iceberg REST catalog refused to ${what}: HTTP ${status} ${errorText(body)}${hint}`, {
      retriable,
    });
  };

  /** `/v1/config`: the catalog's `prefix` override, asked once per client. */
  const base = () => {
    prefix ??= (async () => {
      const query = options.warehouse ? `?warehouse=${encodeURIComponent(options.warehouse)}` : '';
      const { status, body } = await transport.request('GET', `/v1/config${query}`);
      if (status !== 200) {
        prefix = undefined;
        throw fail('give its configuration (GET /v1/config)', status, body, true);
      }
      const config = body as { overrides?: Record<string, string>; defaults?: Record<string, string> };
      const value = config.overrides?.prefix ?? config.defaults?.prefix;
      const separator = decodeURIComponent(config.overrides?.['namespace-separator'] ?? config.defaults?.['namespace-separator'] ?? '%1F');
      // Used as given, as Iceberg's own clients do: S3 Tables hands out its table bucket ARN already encoded.
      return { path: value ? `/v1/${value.replace(/^\/+|\/+$/g, '')}` : '/v1', separator };
    })();
    return prefix;
  };

  const namespacePath = async (namespace: readonly string[]) => {
    const { path, separator } = await base();
    return `${path}/namespaces/${encodeURIComponent(namespace.join(separator))}`;
  };
  const tablePath = async (name: RestTableName) => `${await namespacePath(name.namespace)}/tables/${encodeURIComponent(name.name)}`;

  async function ensureNamespace(namespace: readonly string[]): Promise<void> {
    const key = namespace.join('\u001f');
    if (knownNamespaces.has(key)) return;
    // Parents first: a catalog with nested namespaces wants each level to exist.
    for (let depth = 1; depth <= namespace.length; depth++) {
      const level = namespace.slice(0, depth);
      const { status, body } = await transport.request('POST', `${(await base()).path}/namespaces`, { namespace: level, properties: {} });
      if (status !== 200 && status !== 409) throw fail(`create namespace ${level.join('.')}`, status, body);
    }
    knownNamespaces.add(key);
  }

  async function load(name: RestTableName): Promise<LoadedTable | undefined> {
    const { status, body } = await transport.request('GET', await tablePath(name));
    if (status === 404) return undefined;
    if (status !== 200) throw fail(`load table ${name.namespace.join('.')}.${name.name}`, status, body);
    return body as LoadedTable;
  }

  /**
   * Creates the table with no columns (a catalog assigns fresh field ids at create, which need not
   * be those of sluice's data files; the diff then adds sluice's schemas, ids kept, and the
   * snapshots), at `location` or, without one, where the catalog places it. A 409 (someone else
   * created it first) is left to the next load.
   */
  async function createTable(name: RestTableName, location: string | undefined, properties: Record<string, string>): Promise<void> {
    const created = await transport.request('POST', `${await namespacePath(name.namespace)}/tables`, {
      name: name.name,
      ...(location !== undefined ? { location } : {}),
      schema: { type: 'struct', 'schema-id': 0, fields: [] },
      'partition-spec': { 'spec-id': 0, fields: [] },
      'write-order': { 'order-id': 0, fields: [] },
      properties,
    });
    if (created.status !== 200 && created.status !== 409) throw fail(`create table ${name.namespace.join('.')}.${name.name}`, created.status, created.body);
  }

  /** Puts the table into the catalog: registers sluice's metadata file, else creates it; a 409 (someone else did first) is left to the next load. */
  async function create(name: RestTableName, metadataKey: string, metadata: TableMetadata): Promise<void> {
    await ensureNamespace(name.namespace);
    const namespace = await namespacePath(name.namespace);
    const registered = await transport.request('POST', `${namespace}/register`, { name: name.name, 'metadata-location': store.uri(metadataKey) });
    if (registered.status === 200 || registered.status === 409) return;
    if (!NO_REGISTER.has(registered.status)) throw fail(`register table ${name.namespace.join('.')}.${name.name}`, registered.status, registered.body);
    await createTable(name, metadata.location, { ...metadata.properties, [SLUICE_UUID]: metadata['table-uuid'] });
  }

  /** The location the catalog assigned the table, which it creates first when missing (see the header). */
  async function locate(table: TableRef): Promise<string> {
    const name = options.nameOf(table);
    const label = `${name.namespace.join('.')}.${name.name}`;
    for (let attempt = 0; attempt < 3; attempt++) {
      const loaded = await load(name);
      if (!loaded) {
        await ensureNamespace(name.namespace);
        await createTable(name, undefined, {});
        continue;
      }
      const { metadata } = loaded;
      adoptable(metadata, label);
      const location = metadata.location?.replace(/\/+$/, '');
      if (!location || !/^s3:\/\/[^/]+/.test(location))
        throw new SluiceError(
          ErrorCode.ICEBERG_UNSUPPORTED,
          `the Iceberg REST catalog placed ${label} at ${location || 'no location'}, which is not an s3:// location sluice can write: give the catalog an S3 warehouse, or set SLUICE_ICEBERG_REST_LOCATION=sluice`,
        );
      return location;
    }
    throw new SluiceError(ErrorCode.ICEBERG_CATALOG_CONFLICT, `the Iceberg REST catalog's table ${label} kept changing while sluice created it`, {
      retriable: true,
    });
  }

  return {
    ...(options.location === 'catalog' ? { locate } : {}),
    async publish(table, version) {
      const name = options.nameOf(table);
      const body = await store.get(version.metadataKey);
      if (!body) throw new SluiceError(ErrorCode.ICEBERG_FILE_MISSING, `Iceberg metadata ${version.metadataKey} does not exist`);
      const target = parseJson<TableMetadata>(new TextDecoder().decode(body));
      const label = `${name.namespace.join('.')}.${name.name}`;
      for (let attempt = 0; attempt < 5; attempt++) {
        const loaded = await load(name);
        if (!loaded) {
          // Registered (or created, or someone else's create won): the next pass loads it and sends what is missing.
          await create(name, version.metadataKey, target);
          continue;
        }
        const commit = catalogCommit(loaded.metadata, target, label, loaded['metadata-location']);
        if (!commit) return;
        const { status, body: answer } = await transport.request('POST', await tablePath(name), {
          identifier: { namespace: name.namespace, name: name.name },
          ...commit,
        });
        if (status === 200) return;
        // 409: a requirement failed (someone committed between our load and commit); 5xx: unknown. Load and decide again.
        if (status === 409 || UNKNOWN.has(status)) continue;
        throw fail(`commit to table ${label}`, status, answer);
      }
      throw new SluiceError(ErrorCode.ICEBERG_CATALOG_CONFLICT, `the Iceberg REST catalog's table ${label} kept changing under the commit`, {
        retriable: true,
      });
    },

    async maintained(table, version) {
      const name = options.nameOf(table);
      const body = await store.get(version.metadataKey);
      if (!body) throw new SluiceError(ErrorCode.ICEBERG_FILE_MISSING, `Iceberg metadata ${version.metadataKey} does not exist`);
      const target = parseJson<TableMetadata>(new TextDecoder().decode(body));
      const loaded = await load(name);
      if (!loaded) return undefined;
      return maintainedSince(loaded.metadata, loaded['metadata-location'] ?? '', target, `${name.namespace.join('.')}.${name.name}`);
    },
  };
}

/** The property a created (not registered) table carries sluice's table uuid in. */
const SLUICE_UUID = 'sluice.table-uuid';

/** A table a catalog created that no sluice commit reached yet: no sluice uuid, no snapshot. */
const unclaimed = (metadata: TableMetadata) => !metadata.properties?.[SLUICE_UUID] && !metadata.snapshots?.length && mainOf(metadata) === undefined;

/** Throws ICEBERG_CATALOG_CONFLICT unless a table the catalog holds may become a new sluice table (`locate`). */
function adoptable(metadata: TableMetadata, label: string): void {
  const other = metadata.properties?.[SLUICE_UUID];
  if (other)
    throw new SluiceError(
      ErrorCode.ICEBERG_CATALOG_CONFLICT,
      `the Iceberg REST catalog's table ${label} is another sluice table (sluice.table-uuid ${other}) than the one this merge starts: drop it from the catalog, or point sluice at another namespace`,
    );
  if (!unclaimed(metadata))
    throw new SluiceError(
      ErrorCode.ICEBERG_CATALOG_CONFLICT,
      `the Iceberg REST catalog's table ${label} has snapshots sluice did not write (${metadata.snapshots.length}): another writer committed to it. Let only sluice write the table, or drop it from the catalog (the next run creates it)`,
    );
}

/**
 * A schema without its id, keys sorted and type names without blanks: two schemas with the same
 * fields are the same schema to a catalog, however it orders its JSON or spells a type (Java writes
 * `decimal(20, 0)` where sluice writes `decimal(20,0)`).
 */
function shape(schema: IcebergSchema): string {
  const sorted = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(sorted)
      : value && typeof value === 'object'
        ? Object.fromEntries(
            Object.entries(value)
              .filter(([, v]) => v !== undefined && v !== null)
              .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
              .map(([k, v]) => [k, k === 'type' && typeof v === 'string' ? v.replace(/\s+/g, '') : sorted(v)]),
          )
        : value;
  const fields = schema.fields.map((f) => sorted({ ...f, required: Boolean(f.required) }));
  return JSON.stringify({ fields, ids: [...(schema['identifier-field-ids'] ?? [])].sort((a, b) => a - b) });
}

/** A table commit (CommitTableRequest without the identifier). */
export interface CatalogCommit {
  readonly requirements: readonly Record<string, unknown>[];
  readonly updates: readonly Record<string, unknown>[];
}

/**
 * The commit that brings the catalog's table `current` to sluice's committed `target`, or undefined
 * when it is there already. Throws ICEBERG_CATALOG_CONFLICT when the catalog's table is not the
 * one sluice writes, or its `main` is not an ancestor of sluice's (another writer committed).
 */
export function catalogCommit(current: TableMetadata, target: TableMetadata, label: string, location = ''): CatalogCommit | undefined {
  // An unclaimed table is the one `locate` created for this table (the location check below holds it to sluice's).
  const ours = current['table-uuid'] === target['table-uuid'] || current.properties?.[SLUICE_UUID] === target['table-uuid'] || unclaimed(current);
  if (!ours)
    throw new SluiceError(
      ErrorCode.ICEBERG_CATALOG_CONFLICT,
      `the Iceberg REST catalog's table ${label} is another table (uuid ${current['table-uuid']}, sluice's is ${target['table-uuid']}): drop it from the catalog (the next run registers sluice's), or point sluice at another namespace`,
    );
  const at = current.location.replace(/\/+$/, '');
  if (at !== target.location.replace(/\/+$/, ''))
    throw new SluiceError(
      ErrorCode.ICEBERG_CATALOG_CONFLICT,
      `the Iceberg REST catalog keeps ${label} at ${at}, not at ${target.location} where sluice writes its files: for a catalog that assigns table locations (S3 Tables) set SLUICE_ICEBERG_REST_LOCATION=catalog before the table's first merge; a table sluice already wrote stays where it is, so drop the catalog's table and let the next merge register sluice's (docs/ICEBERG.md "REST catalogs")`,
    );
  const main = mainOf(current);
  const goal = target['current-snapshot-id'] !== undefined && target['current-snapshot-id'] >= 0 ? target['current-snapshot-id'] : undefined;
  // Others' compactions (`replace` snapshots) on sluice's history: on its newest, the version is
  // published already; on an older one, the merge rebases on them (SLUICE_ICEBERG_MAINTENANCE=catalog).
  const moved = descent(current, target, label);
  if (moved.replaced.length) {
    if (moved.from === goal) return undefined;
    throw new CatalogMaintainedError(current, location, moved, label);
  }
  const byId = new Map(target.snapshots.map((s) => [s['snapshot-id'], s]));
  // The snapshots after the catalog's main, oldest first.
  const chain: Snapshot[] = [];
  for (let id = goal; id !== undefined && id !== main; ) {
    const snapshot = byId.get(id);
    if (!snapshot) break;
    chain.unshift(snapshot);
    id = snapshot['parent-snapshot-id'];
  }
  const reached = main === undefined || main === goal || chain[0]?.['parent-snapshot-id'] === main;
  if (!reached)
    throw new SluiceError(
      ErrorCode.ICEBERG_CATALOG_CONFLICT,
      `the Iceberg REST catalog's table ${label} is at snapshot ${main}, which is not in sluice's history up to ${goal}: another writer committed to it. Let only sluice write the table, or drop it from the catalog (the next run registers sluice's)`,
    );

  const updates: Record<string, unknown>[] = [];
  const requirements: Record<string, unknown>[] = [
    { type: 'assert-table-uuid', uuid: current['table-uuid'] },
    { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': main ?? null },
    { type: 'assert-current-schema-id', 'current-schema-id': current['current-schema-id'] },
  ];
  // Schemas: the catalog numbers an added schema itself (its highest id + 1), so sluice's ids are mapped.
  const schemaIds = new Map<number, number>();
  const known = new Map(current.schemas.map((s) => [shape(s), s['schema-id']]));
  let highest = Math.max(-1, ...current.schemas.map((s) => s['schema-id']));
  let lastAdded: number | undefined;
  for (const schema of target.schemas) {
    const existing = known.get(shape(schema));
    if (existing !== undefined) {
      schemaIds.set(schema['schema-id'], existing);
      continue;
    }
    highest += 1;
    known.set(shape(schema), highest);
    schemaIds.set(schema['schema-id'], highest);
    lastAdded = highest;
    updates.push({ action: 'add-schema', schema, 'last-column-id': target['last-column-id'] });
  }
  if (lastAdded !== undefined) requirements.push({ type: 'assert-last-assigned-field-id', 'last-assigned-field-id': current['last-column-id'] });
  const schemaId = schemaIds.get(target['current-schema-id']) ?? target['current-schema-id'];
  if (schemaId !== current['current-schema-id']) updates.push({ action: 'set-current-schema', 'schema-id': schemaId === lastAdded ? -1 : schemaId });

  const present = new Set(current.snapshots.map((s) => s['snapshot-id']));
  for (const snapshot of chain) {
    if (present.has(snapshot['snapshot-id'])) continue;
    updates.push({ action: 'add-snapshot', snapshot: { ...snapshot, 'schema-id': schemaIds.get(snapshot['schema-id']) ?? snapshot['schema-id'] } });
  }
  if (goal !== undefined && goal !== main) updates.push({ action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': goal });
  // What sluice's expiry removed (its files are deleted once this publish is done): sluice's own
  // snapshots only, the catalog's main and its ancestors (main is in sluice's history, checked
  // above, and sluice commits nowhere else) — never a snapshot another writer left on another branch.
  const own = new Set<number>();
  const catalogs = new Map(current.snapshots.map((s) => [s['snapshot-id'], s]));
  for (let id = main; id !== undefined && !own.has(id); id = catalogs.get(id)?.['parent-snapshot-id']) own.add(id);
  const removed = current.snapshots.map((s) => s['snapshot-id']).filter((id) => own.has(id) && !byId.has(id) && id !== goal);
  if (removed.length) updates.push({ action: 'remove-snapshots', 'snapshot-ids': removed });
  // A table sluice did not register carries sluice's uuid as a property (set at create, or here for one the catalog placed).
  const wanted = current['table-uuid'] === target['table-uuid'] ? target.properties : { ...target.properties, [SLUICE_UUID]: target['table-uuid'] };
  const properties = Object.fromEntries(Object.entries(wanted).filter(([k, v]) => current.properties?.[k] !== v));
  if (Object.keys(properties).length) updates.push({ action: 'set-properties', updates: properties });
  return updates.length ? { requirements, updates } : undefined;
}
