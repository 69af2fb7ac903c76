import { closeSync, fstatSync, openSync, readSync, renameSync, writeSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { decompress } from 'fzstd';
import { AssertionError } from '../../errors.ts';
import { decodeStruct, encodeStruct, field, removeField, setField, T, type ThriftList, type ThriftStruct } from './thrift.ts';

/*
 * The Iceberg spec stores decimal(P,S) with P > 18 as a Parquet FIXED_LEN_BYTE_ARRAY of the minimum
 * number of bytes that can hold P digits (9 for decimal(20,0), BIGINT UNSIGNED's type). DuckDB 1.5
 * has no option for it: its writer gives every DECIMAL of width 19..38 (a hugeint inside) 16 bytes
 * (extension/parquet/parquet_writer.cpp sets `type_length = 16` for PhysicalType::INT128, and
 * writer/decimal_column_writer.cpp writes each value from a 16-byte buffer). So a file that has such
 * a column is rewritten here, once DuckDB has written it, touching only those column chunks:
 *
 *   - each page is decompressed, each 16-byte big-endian two's-complement value cut to its low
 *     `n` bytes (the bytes cut must be its sign extension, else the value has more than P digits),
 *     and the page compressed again with GZIP (Node 20 has no zstd compressor; every Parquet reader
 *     reads GZIP, and a chunk's codec is its own);
 *   - the chunk's statistics are cut the same way, its schema element gets `type_length = n`;
 *   - every other byte of the file is copied as it was, and the offsets that point past a rewritten
 *     chunk (pages, bloom filters, row groups) move by what the chunks before them shrank.
 *
 * It accepts only what DuckDB writes for these columns — flat schema, PLAIN data pages v1, no
 * dictionary, no page index, ZSTD or no compression — and fails loudly on anything else rather than
 * guess (a DuckDB upgrade that changes this is caught by the tests that read the footer back).
 */

const FIXED_LEN_BYTE_ARRAY = 7n;
const OPTIONAL = 1n;
const CONVERTED_DECIMAL = 5n;
const CODEC = { UNCOMPRESSED: 0n, GZIP: 2n, ZSTD: 6n } as const;
const DATA_PAGE = 0n;
const PLAIN = 0n;

/** Bytes of the smallest two's-complement integer that holds every unscaled value of `precision` digits. */
export function decimalBytes(precision: number): number {
  const max = 10n ** BigInt(precision) - 1n;
  let bytes = 1;
  while ((1n << BigInt(8 * bytes - 1)) - 1n < max) bytes++;
  return bytes;
}

/** Whether a Parquet file of an Iceberg `decimal(P,S)` column needs rewriting after DuckDB wrote it. */
export function needsNarrowing(icebergType: string): boolean {
  const precision = Number(/^decimal\((\d+),\s*\d+\)$/.exec(icebergType)?.[1] ?? 0);
  return precision > 18 && decimalBytes(precision) < 16;
}

/**
 * Copies the low `n` bytes of each of `count` 16-byte big-endian two's-complement values from
 * `from` to `to`, checking that the bytes left out are only the value's sign extension.
 */
function cut(source: Uint8Array, from: number, count: number, n: number, target: Uint8Array, to: number): void {
  const pad = 16 - n;
  for (let v = 0; v < count; v++) {
    const at = from + v * 16;
    const sign = (source[at + pad] as number) & 0x80 ? 0xff : 0x00;
    for (let i = at; i < at + pad; i++)
      if (source[i] !== sign) throw new AssertionError(`a decimal value needs more than ${n} bytes: the file holds more digits than its precision`);
    const out = to + v * n;
    for (let i = 0; i < n; i++) target[out + i] = source[at + pad + i] as number;
  }
}

function cutStatistics(stats: ThriftStruct | undefined, n: number): void {
  if (!stats) return;
  for (const id of [1, 2, 5, 6]) {
    const value = field(stats, id);
    if (!(value instanceof Uint8Array)) continue;
    if (value.length !== 16) throw new AssertionError(`a decimal statistic has ${value.length} bytes, not 16`);
    const out = new Uint8Array(n);
    cut(value, 0, 1, n, out, 0);
    setField(stats, id, T.BINARY, out);
  }
}

const big = (value: unknown) => (typeof value === 'bigint' ? value : undefined);

/** Rewrites one column chunk's pages; returns the new bytes and their size uncompressed (headers included). */
function narrowChunk(chunk: Uint8Array, codec: bigint, optional: boolean, n: number): { bytes: Uint8Array; uncompressed: number } {
  const parts: Uint8Array[] = [];
  let uncompressed = 0;
  let at = 0;
  while (at < chunk.length) {
    const { struct: header, end } = decodeStruct(chunk, at);
    const size = Number(big(field(header, 3)) ?? -1n);
    const page = field(header, 5) as ThriftStruct | undefined;
    if (big(field(header, 1)) !== DATA_PAGE || !page || big(field(page, 2)) !== PLAIN || size < 0 || end + size > chunk.length)
      throw new AssertionError('a wide decimal column chunk holds a page other than a PLAIN data page (v1)');
    const body = chunk.subarray(end, end + size);
    const raw = codec === CODEC.ZSTD ? decompress(body) : body;
    if (raw.length !== Number(big(field(header, 2)))) throw new AssertionError('a decimal page does not decompress to its stated size');
    // Definition levels (only for an optional column) come first, prefixed by their byte length.
    const levels = optional ? 4 + new DataView(raw.buffer, raw.byteOffset, 4).getUint32(0, true) : 0;
    const values = (raw.length - levels) / 16;
    if (!Number.isInteger(values) || values > Number(big(field(page, 1))))
      throw new AssertionError('a decimal page does not hold whole 16-byte values after its levels');
    const narrowed = new Uint8Array(levels + values * n);
    narrowed.set(raw.subarray(0, levels));
    cut(raw, levels, values, n, narrowed, levels);
    // Level 1: on these values it compresses as well as the default level, eight times faster.
    const compressed = gzipSync(narrowed, { level: 1 });
    cutStatistics(field(page, 5) as ThriftStruct | undefined, n);
    setField(header, 2, T.I32, BigInt(narrowed.length));
    setField(header, 3, T.I32, BigInt(compressed.length));
    removeField(header, 4); // a CRC of the old bytes
    const encoded = encodeStruct(header);
    parts.push(encoded, compressed);
    // Parquet's chunk sizes count the page headers too.
    uncompressed += encoded.length + narrowed.length;
    at = end + size;
  }
  return { bytes: Buffer.concat(parts), uncompressed };
}

interface Target {
  readonly column: number;
  readonly bytes: number;
  readonly optional: boolean;
}

/** The leaf columns (in chunk order) that are decimals wider than 18 digits stored in more bytes than they need. */
function targets(schema: ThriftStruct[]): Target[] {
  const leaves = schema.slice(1);
  if (leaves.some((element) => field(element, 5) !== undefined))
    throw new AssertionError('a Parquet file with nested columns cannot have its decimals narrowed (sluice writes flat files)');
  const out: Target[] = [];
  leaves.forEach((element, column) => {
    const precision = Number(big(field(element, 8)) ?? 0n);
    const length = Number(big(field(element, 2)) ?? 0n);
    if (big(field(element, 1)) !== FIXED_LEN_BYTE_ARRAY || big(field(element, 6)) !== CONVERTED_DECIMAL || precision <= 18) return;
    const bytes = decimalBytes(precision);
    if (bytes >= length) return;
    setField(element, 2, T.I32, BigInt(bytes));
    out.push({ column, bytes, optional: big(field(element, 3)) === OPTIONAL });
  });
  return out;
}

function readAt(fd: number, position: number, length: number): Uint8Array {
  const buffer = Buffer.alloc(length);
  let done = 0;
  while (done < length) {
    const read = readSync(fd, buffer, done, length - done, position + done);
    if (read === 0) throw new AssertionError('the Parquet file ends early');
    done += read;
  }
  return buffer;
}

/** Writes the file `fd` holds to `path` with each of `rewrites` (sorted) in place of its byte range, and `meta` as its footer. */
function writeNarrowed(
  fd: number,
  path: string,
  rewrites: readonly { start: number; end: number; bytes: Uint8Array }[],
  footerStart: number,
  meta: ThriftStruct,
): void {
  const out = openSync(path, 'w');
  try {
    const write = (bytes: Uint8Array) => {
      let done = 0;
      while (done < bytes.length) done += writeSync(out, bytes, done);
    };
    const copy = (from: number, to: number) => {
      for (let at = from; at < to; at += 1 << 22) write(readAt(fd, at, Math.min(1 << 22, to - at)));
    };
    let at = 0;
    for (const r of rewrites) {
      copy(at, r.start);
      write(r.bytes);
      at = r.end;
    }
    copy(at, footerStart);
    const footer = encodeStruct(meta);
    const trailer = Buffer.alloc(8);
    trailer.writeUInt32LE(footer.length, 0);
    trailer.write('PAR1', 4, 'latin1');
    write(footer);
    write(trailer);
  } finally {
    closeSync(out);
  }
}

/**
 * Rewrites the Parquet file at `path` in place so that every DECIMAL column with more than 18
 * digits uses the minimum fixed width for its precision. Returns how many column chunks changed;
 * a file without such a column is left as it was.
 */
export function narrowDecimals(path: string): number {
  const fd = openSync(path, 'r');
  let changed = 0;
  try {
    const size = fstatSync(fd).size;
    const tail = readAt(fd, size - 8, 8);
    const footerLength = new DataView(tail.buffer, tail.byteOffset, 8).getUint32(0, true);
    if (Buffer.from(tail.subarray(4)).toString('latin1') !== 'PAR1') throw new AssertionError(`${path} is not a Parquet file`);
    const footerStart = size - 8 - footerLength;
    const { struct: meta } = decodeStruct(readAt(fd, footerStart, footerLength));
    const schema = (field(meta, 2) as ThriftList).items as ThriftStruct[];
    const wide = targets(schema);
    if (!wide.length) return 0;

    // Each rewritten chunk: its original byte range and what it becomes.
    const rewrites: { start: number; end: number; bytes: Uint8Array }[] = [];
    for (const group of (field(meta, 4) as ThriftList).items as ThriftStruct[]) {
      const chunks = (field(group, 1) as ThriftList).items as ThriftStruct[];
      let compressedDelta = 0;
      let uncompressedDelta = 0;
      for (const chunk of chunks)
        if (field(chunk, 4) !== undefined || field(chunk, 6) !== undefined || field(chunk, 8) !== undefined)
          throw new AssertionError('a Parquet file with a page index or encryption cannot have its decimals narrowed');
      for (const target of wide) {
        const chunk = chunks[target.column] as ThriftStruct;
        const column = field(chunk, 3) as ThriftStruct;
        const codec = big(field(column, 4)) ?? -1n;
        if (field(column, 11) !== undefined || (codec !== CODEC.ZSTD && codec !== CODEC.UNCOMPRESSED))
          throw new AssertionError('a wide decimal column chunk has a dictionary or a codec other than ZSTD');
        const start = Number(big(field(column, 9)));
        const length = Number(big(field(column, 7)));
        const { bytes, uncompressed } = narrowChunk(readAt(fd, start, length), codec, target.optional, target.bytes);
        rewrites.push({ start, end: start + length, bytes });
        compressedDelta += bytes.length - length;
        uncompressedDelta += uncompressed - Number(big(field(column, 6)));
        setField(column, 4, T.I32, CODEC.GZIP);
        setField(column, 6, T.I64, BigInt(uncompressed));
        setField(column, 7, T.I64, BigInt(bytes.length));
        cutStatistics(field(column, 12) as ThriftStruct | undefined, target.bytes);
        changed++;
      }
      const add = (struct: ThriftStruct, id: number, delta: number) => {
        const value = big(field(struct, id));
        if (value !== undefined) setField(struct, id, T.I64, value + BigInt(delta));
      };
      add(group, 2, uncompressedDelta);
      add(group, 6, compressedDelta);
    }
    rewrites.sort((a, b) => a.start - b.start);

    // Offsets at or past a rewritten chunk's end move by the size change of every chunk before them.
    const shift = (offset: bigint) => {
      let delta = 0;
      for (const r of rewrites) if (r.end <= offset) delta += r.bytes.length - (r.end - r.start);
      return offset + BigInt(delta);
    };
    const move = (struct: ThriftStruct, id: number) => {
      const value = big(field(struct, id));
      if (value !== undefined && value > 0n) setField(struct, id, T.I64, shift(value));
    };
    for (const group of (field(meta, 4) as ThriftList).items as ThriftStruct[]) {
      move(group, 5);
      for (const chunk of (field(group, 1) as ThriftList).items as ThriftStruct[]) {
        move(chunk, 2);
        const column = field(chunk, 3) as ThriftStruct;
        for (const id of [9, 10, 11, 14]) move(column, id);
      }
    }

    writeNarrowed(fd, `${path}.narrow`, rewrites, footerStart, meta);
  } finally {
    closeSync(fd);
  }
  // Even with no chunk (a file of no rows) the schema's widths changed.
  renameSync(`${path}.narrow`, path);
  return changed;
}
