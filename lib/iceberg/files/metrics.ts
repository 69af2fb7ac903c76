import type { IcebergField } from './schema.ts';

/*
 * Column statistics of a data or delete file, as a manifest's data_file carries them (value,
 * null and NaN counts, lower and upper bounds), so that readers skip files by value and the merge
 * finds the files that can hold a key. The rows are aggregated by DuckDB (`metricsSelect`, over the
 * rows being written, not the Parquet footer); this module turns the aggregates into the spec's
 * single-value binary serialization (format/spec.md, appendix D — Iceberg Java's
 * `Conversions.toByteBuffer`) and back into SQL literals for pruning.
 *
 * Strings and binaries are truncated as Iceberg's default metrics mode `truncate(16)` does
 * (MetricsConfig `write.metadata.metrics.default`; UnicodeUtil / BinaryUtil): the lower bound is
 * the first 16 code points (bytes), the upper bound the same prefix with its last code point (byte)
 * that can be incremented incremented, and no upper bound when none can. Position delete files keep
 * full bounds (MetricsConfig.forPositionDelete): readers match their `file_path` exactly.
 */

/** How much of a string or binary bound to keep: `truncate(n)` (Iceberg's default is 16) or `full`. */
export type MetricsMode = { readonly truncate: number } | 'full';

/** Iceberg's default metrics mode. */
export const DEFAULT_METRICS: MetricsMode = { truncate: 16 };

/** The statistics maps of one file, keyed by field id (bounds serialized). */
export interface FileMetrics {
  readonly valueCounts: ReadonlyMap<number, number>;
  readonly nullValueCounts: ReadonlyMap<number, number>;
  readonly nanValueCounts: ReadonlyMap<number, number>;
  readonly lowerBounds: ReadonlyMap<number, Uint8Array>;
  readonly upperBounds: ReadonlyMap<number, Uint8Array>;
}

const isFloating = (type: string) => type === 'float' || type === 'double';
const decimalOf = (type: string) => /^decimal\((\d+),\s*(\d+)\)$/.exec(type);

/**
 * SQL of a value of `type` in the domain bounds are compared and serialized in: numbers stay
 * numbers, dates are days and timestamps microseconds since the epoch, binaries uppercase hex (its
 * order is the bytes' unsigned order), booleans and decimals as they are.
 */
export function boundDomain(type: string, expr: string): string {
  if (type === 'date') return `(${expr} - DATE '1970-01-01')`;
  if (type === 'timestamp' || type === 'timestamptz') return `epoch_us(${expr})`;
  if (type === 'binary') return `hex(${expr})`;
  return expr;
}

/** The aggregates `metricsFrom` reads, for `column` (SQL) of each field: one SELECT list over the file's rows. */
export function metricsSelect(fields: readonly { field: IcebergField; column: string }[], mode: MetricsMode): string {
  const parts = ['count(*) AS n'];
  fields.forEach(({ field, column }, i) => {
    parts.push(`count(${column}) AS v${i}`);
    const domain = boundDomain(field.type, column);
    const limit = mode === 'full' ? undefined : mode.truncate;
    if (isFloating(field.type)) {
      parts.push(`count(*) FILTER (WHERE isnan(${column})) AS nan${i}`);
      // DOUBLE holds a float32 exactly, and JavaScript numbers are doubles.
      const filter = `FILTER (WHERE NOT isnan(${column}))`;
      parts.push(`CAST(min(${column}) ${filter} AS DOUBLE) AS lo${i}`, `CAST(max(${column}) ${filter} AS DOUBLE) AS hi${i}`);
    } else if (limit !== undefined && (field.type === 'string' || field.type === 'binary')) {
      // One unit more than kept tells whether the greatest value was cut; a prefix keeps the order.
      const unit = field.type === 'binary' ? 2 : 1;
      parts.push(`min(left(${domain}, ${unit * limit})) AS lo${i}`, `max(left(${domain}, ${unit * (limit + 1)})) AS hi${i}`);
    } else parts.push(`CAST(min(${domain}) AS VARCHAR) AS lo${i}`, `CAST(max(${domain}) AS VARCHAR) AS hi${i}`);
  });
  return parts.join(', ');
}

/** The statistics from the one row `metricsSelect` returned. */
export function metricsFrom(row: Record<string, unknown>, fields: readonly IcebergField[], mode: MetricsMode): FileMetrics {
  const rows = Number(row.n);
  const valueCounts = new Map<number, number>();
  const nullValueCounts = new Map<number, number>();
  const nanValueCounts = new Map<number, number>();
  const lowerBounds = new Map<number, Uint8Array>();
  const upperBounds = new Map<number, Uint8Array>();
  fields.forEach((field, i) => {
    // value_counts include nulls and NaNs (spec: "including null and NaN values").
    valueCounts.set(field.id, rows);
    nullValueCounts.set(field.id, rows - Number(row[`v${i}`]));
    if (isFloating(field.type)) nanValueCounts.set(field.id, Number(row[`nan${i}`]));
    const lo = row[`lo${i}`];
    const hi = row[`hi${i}`];
    if (lo === null || lo === undefined || hi === null || hi === undefined) return;
    const limit = mode === 'full' ? undefined : mode.truncate;
    if (field.type === 'string') {
      lowerBounds.set(field.id, toBound('string', String(lo)));
      const upper = limit === undefined ? String(hi) : truncateStringMax(String(hi), limit);
      if (upper !== undefined) upperBounds.set(field.id, toBound('string', upper));
    } else if (field.type === 'binary') {
      lowerBounds.set(field.id, Buffer.from(String(lo), 'hex'));
      const bytes = Buffer.from(String(hi), 'hex');
      const upper = limit === undefined ? bytes : truncateBinaryMax(bytes, limit);
      if (upper !== undefined) upperBounds.set(field.id, upper);
    } else if (isFloating(field.type)) {
      // -0.0 sorts below 0.0 for Iceberg's comparators: a zero lower bound is -0.0, a zero upper bound 0.0.
      lowerBounds.set(field.id, toBound(field.type, Number(lo) === 0 ? -0 : Number(lo)));
      upperBounds.set(field.id, toBound(field.type, Number(hi) === 0 ? 0 : Number(hi)));
    } else {
      lowerBounds.set(field.id, toBound(field.type, String(lo)));
      upperBounds.set(field.id, toBound(field.type, String(hi)));
    }
  });
  return { valueCounts, nullValueCounts, nanValueCounts, lowerBounds, upperBounds };
}

/**
 * A value in Iceberg's single-value binary serialization (spec appendix D). `value` is the text
 * of the bound domain (`boundDomain`): integers, days, microseconds and decimals as their decimal
 * text, booleans as `true`/`false`, strings as they are; floats as numbers; binaries as bytes.
 */
export function toBound(type: string, value: string | number | bigint | boolean | Uint8Array): Uint8Array {
  const fixed = (size: number, write: (view: DataView) => void) => {
    const bytes = new Uint8Array(size);
    write(new DataView(bytes.buffer));
    return bytes;
  };
  if (value instanceof Uint8Array) {
    if (type !== 'binary') throw new Error(`a ${type} bound cannot be given as bytes`);
    return value;
  }
  if (type === 'int' || type === 'date') return fixed(4, (v) => v.setInt32(0, Number(value), true));
  if (type === 'long' || type === 'timestamp' || type === 'timestamptz') return fixed(8, (v) => v.setBigInt64(0, BigInt(value), true));
  if (type === 'float') return fixed(4, (v) => v.setFloat32(0, Number(value), true));
  if (type === 'double') return fixed(8, (v) => v.setFloat64(0, Number(value), true));
  if (type === 'boolean') return Uint8Array.of(value === true || value === 'true' ? 1 : 0);
  if (type === 'string') return new TextEncoder().encode(String(value));
  if (type === 'binary') return Buffer.from(String(value), 'hex');
  if (decimalOf(type)) return twosComplement(unscaled(String(value)));
  throw new Error(`no bound serialization for Iceberg type ${type}`);
}

/** The SQL literal (in `boundDomain`'s domain) of a serialized bound: what candidate pruning compares keys with. */
export function boundLiteral(type: string, bytes: Uint8Array): string {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // A file written before a promotion (int → long, float → double) keeps the narrower bound.
  if (type === 'int' || type === 'date' || (type === 'long' && bytes.length === 4)) return String(view.getInt32(0, true));
  if (type === 'long' || type === 'timestamp' || type === 'timestamptz') return String(view.getBigInt64(0, true));
  if (type === 'float' || (type === 'double' && bytes.length === 4)) return `CAST('${view.getFloat32(0, true)}' AS ${type === 'float' ? 'FLOAT' : 'DOUBLE'})`;
  if (type === 'double') return `CAST('${view.getFloat64(0, true)}' AS DOUBLE)`;
  if (type === 'boolean') return bytes[0] ? 'true' : 'false';
  if (type === 'string') return `'${new TextDecoder().decode(bytes).replaceAll("'", "''")}'`;
  if (type === 'binary') return `'${Buffer.from(bytes).toString('hex').toUpperCase()}'`;
  const decimal = decimalOf(type);
  if (decimal) {
    const scale = Number(decimal[2]);
    let value = 0n;
    for (const byte of bytes) value = (value << 8n) | BigInt(byte);
    if (bytes.length && (bytes[0] as number) & 0x80) value -= 1n << BigInt(8 * bytes.length);
    const digits = (value < 0n ? -value : value).toString().padStart(scale + 1, '0');
    const text = scale ? `${digits.slice(0, -scale)}.${digits.slice(-scale)}` : digits;
    return `CAST('${value < 0n ? '-' : ''}${text}' AS DECIMAL(${decimal[1]},${scale}))`;
  }
  throw new Error(`no bound literal for Iceberg type ${type}`);
}

/** A decimal's unscaled value from its text at the column's scale (DuckDB prints every scale digit). */
function unscaled(text: string): bigint {
  if (!/^-?\d+(\.\d+)?$/.test(text)) throw new Error(`${JSON.stringify(text)} is not a decimal`);
  return BigInt(text.replace('.', ''));
}

/** Two's-complement big-endian bytes, as few as hold the value (Java BigInteger.toByteArray). */
export function twosComplement(value: bigint): Uint8Array {
  let size = 1;
  while (value < -(1n << BigInt(8 * size - 1)) || value >= 1n << BigInt(8 * size - 1)) size++;
  const bytes = new Uint8Array(size);
  let rest = BigInt.asUintN(8 * size, value);
  for (let i = size - 1; i >= 0; i--) {
    bytes[i] = Number(rest & 0xffn);
    rest >>= 8n;
  }
  return bytes;
}

/**
 * Upper bound of strings whose greatest is `value`, in at most `length` code points (UnicodeUtil.
 * truncateStringMax): `value` itself when short enough, else the prefix with its last code point
 * that can be incremented incremented; undefined when none can. Unlike Java, an increment into the
 * surrogate range skips it (a lone surrogate is no UTF-8): the bound is only larger.
 */
export function truncateStringMax(value: string, length: number): string | undefined {
  const points = Array.from(value, (ch) => ch.codePointAt(0) as number);
  if (points.length <= length) return value;
  for (let i = length - 1; i >= 0; i--) {
    let next = (points[i] as number) + 1;
    if (next >= 0xd800 && next <= 0xdfff) next = 0xe000;
    if (next <= 0x10ffff) return String.fromCodePoint(...points.slice(0, i), next);
  }
  return undefined;
}

/** Lower bound in at most `length` code points (UnicodeUtil.truncateStringMin): the prefix. */
export function truncateStringMin(value: string, length: number): string {
  return Array.from(value).slice(0, length).join('');
}

/** Upper bound of binaries in at most `length` bytes (BinaryUtil.truncateBinaryMax); undefined when every byte is 0xFF. */
export function truncateBinaryMax(value: Uint8Array, length: number): Uint8Array | undefined {
  if (value.length <= length) return value;
  for (let i = length - 1; i >= 0; i--) {
    if (value[i] !== 0xff) {
      const out = Uint8Array.from(value.subarray(0, i + 1));
      out[i] = (out[i] as number) + 1;
      return out;
    }
  }
  return undefined;
}

/** The maps a manifest's data_file holds, in avsc's form (array of key/value records), sorted by field id. */
export function avroMap<V>(map: ReadonlyMap<number, V> | undefined, convert: (value: V) => unknown = (v) => v): { key: number; value: unknown }[] | null {
  if (!map) return null;
  return [...map].sort((a, b) => a[0] - b[0]).map(([key, value]) => ({ key, value: convert(value) }));
}

/** `avroMap` for bounds: avsc writes `bytes` from Buffers. */
export function avroBounds(map: ReadonlyMap<number, Uint8Array> | undefined): { key: number; value: unknown }[] | null {
  return avroMap(map, (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
}
