import { createHash } from 'node:crypto';
import type { IcebergSchema } from './schema.ts';

/** A snapshot as table metadata (format v2) serializes it. */
export interface Snapshot {
  readonly 'snapshot-id': number;
  readonly 'parent-snapshot-id'?: number;
  readonly 'sequence-number': number;
  readonly 'timestamp-ms': number;
  readonly 'manifest-list': string;
  readonly summary: Readonly<Record<string, string>> & { readonly operation: 'append' | 'replace' | 'overwrite' | 'delete' };
  readonly 'schema-id': number;
}

/** Iceberg table metadata, format version 2 (`<N>-<uuid>.metadata.json`, and its `vN.metadata.json` copy). */
export interface TableMetadata {
  readonly 'format-version': 2;
  readonly 'table-uuid': string;
  readonly location: string;
  readonly 'last-sequence-number': number;
  readonly 'last-updated-ms': number;
  readonly 'last-column-id': number;
  readonly 'current-schema-id': number;
  readonly schemas: readonly IcebergSchema[];
  readonly 'default-spec-id': 0;
  readonly 'partition-specs': readonly [{ readonly 'spec-id': 0; readonly fields: readonly [] }];
  readonly 'last-partition-id': number;
  readonly 'default-sort-order-id': 0;
  readonly 'sort-orders': readonly [{ readonly 'order-id': 0; readonly fields: readonly [] }];
  readonly properties: Readonly<Record<string, string>>;
  readonly 'current-snapshot-id'?: number;
  readonly refs?: Readonly<Record<string, { readonly 'snapshot-id': number; readonly type: 'branch' }>>;
  readonly snapshots: readonly Snapshot[];
  readonly 'snapshot-log': readonly { readonly 'snapshot-id': number; readonly 'timestamp-ms': number }[];
  readonly 'metadata-log': readonly { readonly 'metadata-file': string; readonly 'timestamp-ms': number }[];
}

/** A committed (or staged) version of a table: its metadata and where that metadata file lives. */
export interface TableVersion {
  /** Object key of the metadata file (`metadataKey` in table.ts). */
  readonly metadataKey: string;
  readonly version: number;
  readonly metadata: TableMetadata;
}

/** Table properties sluice keeps in metadata (Iceberg ignores unknown properties). */
export const PROPERTY = {
  /** Number of key-hash buckets the last full rewrite laid the data files out in. */
  buckets: 'sluice.bucket-count',
  /** `id:type` of the fields rows were hashed on to find their bucket (a keyless table's lookup). */
  bucketFields: 'sluice.bucket-field-ids',
  /** Comma-separated key columns' field ids ("" for a keyless table). */
  keyFields: 'sluice.key-field-ids',
} as const;

/**
 * A commit's snapshot `operation`, as Java's reference writer names it (BaseRowDelta,
 * BaseOverwriteFiles): `append` when it only adds data files, `delete` when it adds no data file but
 * removes files or adds delete files, `overwrite` otherwise. (Compaction is `replace`, said by its caller.)
 */
export function operationOf(added: readonly { readonly content: number }[], removedFiles: number): 'append' | 'overwrite' | 'delete' {
  const addsData = added.some((f) => f.content === 0);
  const addsDeletes = added.some((f) => f.content !== 0);
  if (!addsDeletes && removedFiles === 0) return 'append';
  return addsData ? 'overwrite' : 'delete';
}

/** How many metadata files `metadata-log` remembers (older ones are deleted by expiry). */
export const METADATA_LOG_SIZE = 20;

/** A positive 53-bit id from `parts`: stable across redos, exact in JSON for every reader. */
export function stableId(...parts: string[]): number {
  const digest = createHash('sha256').update(parts.join('\u0000')).digest();
  const id = Number(digest.readBigUInt64BE(0) & ((1n << 53n) - 1n));
  return id === 0 ? 1 : id;
}

/** A UUID derived from `parts` (RFC 4122 layout, version 8 "custom"): a redo gets the same table uuid. */
export function stableUuid(...parts: string[]): string {
  const bytes = createHash('sha256').update(parts.join('\u0000')).digest().subarray(0, 16);
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x80;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Metadata of a table with no snapshot yet. */
export function newTableMetadata(options: {
  uuid: string;
  location: string;
  schema: IcebergSchema;
  lastColumnId: number;
  properties: Record<string, string>;
  timestampMs: number;
}): TableMetadata {
  return {
    'format-version': 2,
    'table-uuid': options.uuid,
    location: options.location,
    'last-sequence-number': 0,
    'last-updated-ms': options.timestampMs,
    'last-column-id': options.lastColumnId,
    'current-schema-id': options.schema['schema-id'],
    schemas: [options.schema],
    'default-spec-id': 0,
    'partition-specs': [{ 'spec-id': 0, fields: [] }],
    // Java's value for "no partition field assigned yet" (PartitionSpec.PARTITION_DATA_ID_START - 1).
    'last-partition-id': 999,
    'default-sort-order-id': 0,
    'sort-orders': [{ 'order-id': 0, fields: [] }],
    properties: options.properties,
    snapshots: [],
    'snapshot-log': [],
    'metadata-log': [],
  };
}

export function currentSchema(metadata: TableMetadata): IcebergSchema {
  const schema = metadata.schemas.find((s) => s['schema-id'] === metadata['current-schema-id']);
  if (!schema) throw new Error(`table metadata has no schema ${metadata['current-schema-id']}`);
  return schema;
}

export function currentSnapshot(metadata: TableMetadata): Snapshot | undefined {
  const id = metadata['current-snapshot-id'];
  return id === undefined || id < 0 ? undefined : metadata.snapshots.find((s) => s['snapshot-id'] === id);
}

/**
 * The next metadata: `schema` becomes current (added to `schemas` if new), `snapshot` (if any) is
 * appended and made current on `main`, the previous metadata file goes into `metadata-log`.
 */
export function nextMetadata(
  previous: TableVersion,
  change: {
    /** The absolute location of `previous`'s metadata file (it need not be under the table's `location`). */
    previousUri?: string;
    schema: IcebergSchema;
    lastColumnId: number;
    snapshot?: Snapshot;
    properties?: Record<string, string>;
    timestampMs: number;
  },
): TableMetadata {
  const base = previous.metadata;
  const schemas = base.schemas.some((s) => s['schema-id'] === change.schema['schema-id']) ? base.schemas : [...base.schemas, change.schema];
  const snapshot = change.snapshot;
  // Version 0 is a table being created: there is no previous metadata file to remember.
  const log =
    previous.version === 0
      ? base['metadata-log']
      : [
          ...base['metadata-log'],
          {
            'metadata-file': change.previousUri ?? `${base.location}/${previous.metadataKey.split('/').slice(-2).join('/')}`,
            'timestamp-ms': base['last-updated-ms'],
          },
        ];
  return {
    ...base,
    'last-updated-ms': change.timestampMs,
    'last-column-id': change.lastColumnId,
    'current-schema-id': change.schema['schema-id'],
    schemas,
    properties: { ...base.properties, ...change.properties },
    ...(snapshot
      ? {
          'last-sequence-number': snapshot['sequence-number'],
          'current-snapshot-id': snapshot['snapshot-id'],
          refs: { main: { 'snapshot-id': snapshot['snapshot-id'], type: 'branch' } },
          snapshots: [...base.snapshots, snapshot],
          'snapshot-log': [...base['snapshot-log'], { 'snapshot-id': snapshot['snapshot-id'], 'timestamp-ms': snapshot['timestamp-ms'] }],
        }
      : {}),
    'metadata-log': log.slice(-METADATA_LOG_SIZE),
  };
}
