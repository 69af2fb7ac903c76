import type { TableRef } from '../../core/table-ref.ts';
import { ErrorCode, SluiceError } from '../../errors.ts';
import type { ObjectStore } from '../../sink/s3/object-store.ts';
import { parseJson } from '../files/json.ts';
import type { TableMetadata } from '../files/metadata.ts';
import { maintainedSince } from './ancestry.ts';
import type { IcebergCatalog } from './port.ts';
import { adoptable, catalogCommit, SLUICE_UUID } from './rest-commit.ts';
import type { RestTransport } from './rest-transport.ts';

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
/** Statuses a catalog without `register` answers it with. */
const NO_REGISTER = new Set([400, 404, 405, 406, 501]);

/** The error for a refused request: retriable when its outcome is unknown or the catalog throttles. */
const fail = (what: string, status: number, body: unknown, retriable = UNKNOWN.has(status) || status === 429) => {
  const hint =
    status === 401 || status === 403
      ? ' (check the credentials: SLUICE_ICEBERG_REST_SIGNING_NAME and the AWS credentials for SigV4, or SLUICE_ICEBERG_REST_TOKEN / SLUICE_ICEBERG_REST_CREDENTIAL, and the IAM policy)'
      : '';
  return new SluiceError(ErrorCode.ICEBERG_CATALOG_REQUEST, `the Iceberg REST catalog refused to ${what}: HTTP ${status} ${errorText(body)}${hint}`, {
    retriable,
  });
};

/** The catalog's paths and its namespace and table requests, for one client (`/v1/config` asked once). */
function restRequests(transport: RestTransport, options: RestCatalogOptions) {
  /** What /v1/config said: the path tables are under and how namespace levels join in a path (the spec's default: %1F). */
  let prefix: Promise<{ path: string; separator: string }> | undefined;
  const knownNamespaces = new Set<string>();

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

  return { base, namespacePath, tablePath, ensureNamespace, load, createTable };
}

/** The REST catalog: creates namespaces and tables, and commits each published version as a guarded diff. */
export function restCatalog(transport: RestTransport, store: ObjectStore, options: RestCatalogOptions): IcebergCatalog {
  const { namespacePath, tablePath, ensureNamespace, load, createTable } = restRequests(transport, options);

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
