import { createHash } from 'node:crypto';
import { inflateRawSync } from 'node:zlib';
import avro from 'avsc';

/*
 * Iceberg manifests and manifest lists: Avro object container files whose schemas carry Iceberg
 * field ids (`field-id`, `element-id`). avsc encodes and decodes the records, but it drops
 * attributes it does not know from the schema it writes into the header, and readers project by
 * those ids — so the container (header, blocks, sync markers) is assembled here, with the schema
 * JSON exactly as the spec's tables give it. The sync marker is derived from the file's name, so
 * writing the same content to the same key twice gives the same bytes.
 */

type Schema = Record<string, unknown>;

const optional = (name: string, id: number, type: unknown) => ({ name, type: ['null', type], default: null, 'field-id': id });
const required = (name: string, id: number, type: unknown) => ({ name, type, 'field-id': id });
const idMap = (name: string, id: number, keyId: number, valueId: number, valueType: unknown) =>
  optional(name, id, {
    type: 'array',
    logicalType: 'map',
    items: { type: 'record', name: `k${keyId}_v${valueId}`, fields: [required('key', keyId, 'int'), required('value', valueId, valueType)] },
  });
const list = (name: string, id: number, elementId: number, items: string) => optional(name, id, { type: 'array', items, 'element-id': elementId });

/** `manifest_entry` for format v2, unpartitioned (the partition struct r102 has no fields). */
export const MANIFEST_ENTRY_SCHEMA: Schema = {
  type: 'record',
  name: 'manifest_entry',
  fields: [
    required('status', 0, 'int'),
    optional('snapshot_id', 1, 'long'),
    optional('sequence_number', 3, 'long'),
    optional('file_sequence_number', 4, 'long'),
    required('data_file', 2, {
      type: 'record',
      name: 'r2',
      fields: [
        required('content', 134, 'int'),
        required('file_path', 100, 'string'),
        required('file_format', 101, 'string'),
        required('partition', 102, { type: 'record', name: 'r102', fields: [] }),
        required('record_count', 103, 'long'),
        required('file_size_in_bytes', 104, 'long'),
        idMap('column_sizes', 108, 117, 118, 'long'),
        idMap('value_counts', 109, 119, 120, 'long'),
        idMap('null_value_counts', 110, 121, 122, 'long'),
        idMap('nan_value_counts', 137, 138, 139, 'long'),
        idMap('lower_bounds', 125, 126, 127, 'bytes'),
        idMap('upper_bounds', 128, 129, 130, 'bytes'),
        optional('key_metadata', 131, 'bytes'),
        list('split_offsets', 132, 133, 'long'),
        list('equality_ids', 135, 136, 'int'),
        optional('sort_order_id', 140, 'int'),
        optional('referenced_data_file', 143, 'string'),
      ],
    }),
  ],
};

/** `manifest_file` (a manifest list's record) for format v2. */
export const MANIFEST_FILE_SCHEMA: Schema = {
  type: 'record',
  name: 'manifest_file',
  fields: [
    required('manifest_path', 500, 'string'),
    required('manifest_length', 501, 'long'),
    required('partition_spec_id', 502, 'int'),
    required('content', 517, 'int'),
    required('sequence_number', 515, 'long'),
    required('min_sequence_number', 516, 'long'),
    required('added_snapshot_id', 503, 'long'),
    required('added_files_count', 504, 'int'),
    required('existing_files_count', 505, 'int'),
    required('deleted_files_count', 506, 'int'),
    required('added_rows_count', 512, 'long'),
    required('existing_rows_count', 513, 'long'),
    required('deleted_rows_count', 514, 'long'),
    optional('partitions', 507, {
      type: 'array',
      'element-id': 508,
      items: {
        type: 'record',
        name: 'r508',
        fields: [
          required('contains_null', 509, 'boolean'),
          optional('contains_nan', 518, 'boolean'),
          optional('lower_bound', 510, 'bytes'),
          optional('upper_bound', 511, 'bytes'),
        ],
      },
    }),
    optional('key_metadata', 519, 'bytes'),
  ],
};

/** A data or delete file as a manifest lists it (the fields sluice writes). */
export interface DataFileRecord {
  content: 0 | 1 | 2;
  file_path: string;
  file_format: 'PARQUET';
  partition: Record<string, never>;
  record_count: number;
  file_size_in_bytes: number;
  equality_ids: number[] | null;
  [other: string]: unknown;
}

export interface ManifestEntry {
  /** 0 existing, 1 added, 2 deleted. */
  status: 0 | 1 | 2;
  snapshot_id: number | null;
  /** Data sequence number; null on added entries (inherited from the manifest list). */
  sequence_number: number | null;
  file_sequence_number: number | null;
  data_file: DataFileRecord;
}

export interface ManifestFile {
  manifest_path: string;
  manifest_length: number;
  partition_spec_id: number;
  /** 0 data, 1 deletes. */
  content: 0 | 1;
  sequence_number: number;
  min_sequence_number: number;
  added_snapshot_id: number;
  added_files_count: number;
  existing_files_count: number;
  deleted_files_count: number;
  added_rows_count: number;
  existing_rows_count: number;
  deleted_rows_count: number;
  partitions: null;
  key_metadata: null;
}

const MAGIC = Buffer.from('Obj\x01', 'latin1');
const headerType = avro.Type.forSchema({
  type: 'record',
  name: 'org.apache.avro.file.Header',
  fields: [
    { name: 'magic', type: { type: 'fixed', name: 'Magic', size: 4 } },
    { name: 'meta', type: { type: 'map', values: 'bytes' } },
    { name: 'sync', type: { type: 'fixed', name: 'Sync', size: 16 } },
  ],
});
const longType = avro.Type.forSchema('long');
/**
 * Avro `long` kept exact: a number where it is safe, a bigint beyond 2^53 (other writers' snapshot
 * ids use all 63 bits; avsc's own long refuses them).
 */
const exactLong = avro.types.LongType.__with({
  fromBuffer: (buffer: Buffer) => {
    const n = buffer.readBigInt64LE();
    return n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n;
  },
  toBuffer: (n: number | bigint) => {
    const buffer = Buffer.alloc(8);
    buffer.writeBigInt64LE(BigInt(n));
    return buffer;
  },
  fromJSON: (n: number | bigint) => n,
  toJSON: (n: number | bigint) => Number(n),
  isValid: (n: unknown) => (typeof n === 'number' && Number.isInteger(n)) || typeof n === 'bigint',
  compare: (a: number | bigint, b: number | bigint) => (a === b ? 0 : a < b ? -1 : 1),
});
const registry = () => ({ long: exactLong });
const types = new Map<Schema, avro.Type>();
const typeOf = (schema: Schema) => {
  const type = types.get(schema) ?? avro.Type.forSchema(schema as avro.Schema, { registry: registry() });
  types.set(schema, type);
  return type;
};

/** An Avro container file (codec null) holding `records`, with `metadata` in its header. */
export function writeAvroFile(schema: Schema, records: readonly unknown[], metadata: Record<string, string>, name: string): Buffer {
  const sync = createHash('sha256').update(name).digest().subarray(0, 16);
  const meta: Record<string, Buffer> = { 'avro.schema': Buffer.from(JSON.stringify(schema)), 'avro.codec': Buffer.from('null') };
  for (const [key, value] of Object.entries(metadata)) meta[key] = Buffer.from(value);
  const parts: Buffer[] = [headerType.toBuffer({ magic: MAGIC, meta, sync })];
  const type = typeOf(schema);
  const BLOCK = 1000;
  for (let i = 0; i < records.length; i += BLOCK) {
    const block = Buffer.concat(records.slice(i, i + BLOCK).map((record) => type.toBuffer(record)));
    parts.push(longType.toBuffer(Math.min(BLOCK, records.length - i)), longType.toBuffer(block.length), block, sync);
  }
  return Buffer.concat(parts);
}

/**
 * The records and header metadata of an Avro container file: sluice's (codec null) or a Java
 * writer's (Iceberg compresses manifests with `deflate` by default), decoded with the file's own schema.
 */
export function readAvroFile<T>(bytes: Uint8Array): { records: T[]; metadata: Record<string, string> } {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const { value: header, offset: start } = headerType.decode(buffer, 0) as {
    value: { magic: Buffer; meta: Record<string, Buffer>; sync: Buffer };
    offset: number;
  };
  if (!header?.magic.equals(MAGIC)) throw new Error('not an Avro container file');
  const metadata = Object.fromEntries(Object.entries(header.meta).map(([k, v]) => [k, v.toString('utf8')]));
  const codec = metadata['avro.codec'] ?? 'null';
  if (codec !== 'null' && codec !== 'deflate')
    throw new Error(`Avro codec ${codec} is not supported here (null and deflate are: Iceberg's write.avro.compression-codec gzip or uncompressed)`);
  const type = avro.Type.forSchema(JSON.parse(metadata['avro.schema'] ?? '{}'), { registry: registry() });
  const records: T[] = [];
  let offset = start;
  while (offset < buffer.length) {
    const count = longType.decode(buffer, offset) as { value: number; offset: number };
    const size = longType.decode(buffer, count.offset) as { value: number; offset: number };
    const raw = buffer.subarray(size.offset, size.offset + size.value);
    const block = codec === 'deflate' ? inflateRawSync(raw) : raw;
    let at = 0;
    for (let i = 0; i < Math.abs(count.value); i++) {
      const decoded = type.decode(block, at) as { value: T; offset: number };
      records.push(decoded.value);
      at = decoded.offset;
    }
    offset = size.offset + size.value + 16;
  }
  return { records, metadata };
}
