import { MysqlType } from '../../../core/mysql-types.ts';
import { decimalText } from '../../../format/binlog-columns.ts';

/*
 * MySQL's binary JSON as MySQL itself prints it (what a SELECT of the column returns), and partial
 * updates of it (binlog_row_value_options=PARTIAL_JSON). The document is decoded into a tree that
 * keeps what printing needs: members in stored order (by key length, then key bytes: MySQL's
 * order, which a JavaScript object would lose for integer-like keys), scalars already printed.
 * Offsets are always followed, never assumed contiguous: a document updated in place (partial
 * updates) has gaps and reused space. Layout: sql-common/json_binary.cc; printing:
 * sql-common/json_dom.cc wrapper_to_string.
 */

/** A document's tree: an object's members in order, an array's values, or a scalar as printed. */
export type JsonTree = { readonly object: [key: string, value: JsonTree][] } | { readonly array: JsonTree[] } | { readonly text: string };

const SMALL_OBJECT = 0;
const LARGE_OBJECT = 1;
const SMALL_ARRAY = 2;
const LARGE_ARRAY = 3;
const LITERAL = 4;
const INT16 = 5;
const UINT16 = 6;
const INT32 = 7;
const UINT32 = 8;
const INT64 = 9;
const UINT64 = 10;
const DOUBLE = 11;
const STRING = 12;
const OPAQUE = 15;

/** Value types stored in the value entry itself, not at an offset. */
const INLINE_SMALL = new Set([LITERAL, INT16, UINT16]);
const INLINE_LARGE = new Set([LITERAL, INT16, UINT16, INT32, UINT32]);

/** A variable-length length: 7 bits per byte, low group first, high bit set on every byte but the last (at most 5 bytes). */
function readVarlen(input: Buffer, at: number): { length: number; next: number } {
  let length = 0;
  for (let i = 0; i < 5; i++) {
    const byte = input[at + i];
    if (byte === undefined) throw new Error('Truncated JSON length');
    length += (byte & 0x7f) * 2 ** (7 * i);
    if ((byte & 0x80) === 0) return { length, next: at + i + 1 };
  }
  throw new Error('JSON length longer than 5 bytes');
}

/** A JSON string as MySQL quotes it (json_dom.cc double_quote): ", \ and the control characters escaped, everything else as it is. */
const quoteJson = (text: string) => JSON.stringify(text);

/** MySQL's base64_encode (mysys/base64.cc): a newline every 76 characters. */
const mysqlBase64 = (data: Buffer) => data.toString('base64').replace(/(.{76})(?=.)/g, '$1\n');

/**
 * A double as MySQL prints it (my_gcvt, strings/dtoa.cc): the shortest digits that read back to it,
 * in fixed notation while the decimal point position decpt (value = 0.ddd × 10^decpt) is within
 * -14…15 or the digits run past it, else d.ddde±x with no '+'; ".0" added when neither a point nor
 * an exponent was written (json_dom.cc).
 */
export function doubleText(value: number): string {
  if (value === 0) return Object.is(value, -0) ? '-0.0' : '0.0';
  const [mantissa = '', exponent] = Math.abs(value).toExponential().split('e');
  const digits = mantissa.replace('.', '');
  const decpt = Number(exponent) + 1;
  let text: string;
  if (decpt >= -14 && decpt <= 0) text = `0.${'0'.repeat(-decpt)}${digits}`;
  else if (decpt > 0 && (decpt <= 15 || digits.length > decpt))
    text = digits.length <= decpt ? digits + '0'.repeat(decpt - digits.length) : `${digits.slice(0, decpt)}.${digits.slice(decpt)}`;
  else text = `${digits[0]}${digits.length > 1 ? `.${digits.slice(1)}` : ''}e${decpt - 1}`;
  if (!/[.e]/.test(text)) text += '.0';
  return (value < 0 ? '-' : '') + text;
}

const pad2 = (n: number) => String(n).padStart(2, '0');

/**
 * A DATE, DATETIME, TIMESTAMP or TIME opaque value: MySQL's packed 8-byte integer (my_time.cc
 * TIME_to_longlong_*_packed), printed as my_TIME_to_str(…, 6) prints it, in double quotes.
 */
function temporalText(fieldType: number, data: Buffer): string {
  if (data.length < 8) throw new Error('Truncated JSON temporal value');
  let packed = data.readBigInt64LE(0);
  const negative = packed < 0n;
  if (negative) packed = -packed;
  const micros = Number(packed & 0xffffffn);
  const whole = packed >> 24n;
  const fraction = `.${String(micros).padStart(6, '0')}`;
  if (fieldType === MysqlType.TIME) {
    const hms = Number(whole);
    const hour = Math.floor(hms / 4096) % 1024;
    return quoteJson(`${negative ? '-' : ''}${pad2(hour)}:${pad2((hms >> 6) % 64)}:${pad2(hms % 64)}${fraction}`);
  }
  const ymd = Number(whole >> 17n);
  const hms = Number(whole % (1n << 17n));
  const yearMonth = Math.floor(ymd / 32);
  const date = `${String(Math.floor(yearMonth / 13)).padStart(4, '0')}-${pad2(yearMonth % 13)}-${pad2(ymd % 32)}`;
  if (fieldType === MysqlType.DATE) return quoteJson(date);
  return quoteJson(`${date} ${pad2(hms >> 12)}:${pad2((hms >> 6) % 64)}:${pad2(hms % 64)}${fraction}`);
}

function opaqueText(fieldType: number, data: Buffer): string {
  switch (fieldType) {
    case MysqlType.NEWDECIMAL:
      // Precision, scale, then the DECIMAL's own bytes.
      return decimalText(data.subarray(2), data[0] as number, data[1] as number);
    case MysqlType.DATE:
    case MysqlType.TIME:
    case MysqlType.DATETIME:
    case MysqlType.TIMESTAMP:
      return temporalText(fieldType, data);
    case MysqlType.VAR_STRING:
      // Printed as the string it holds (wrapper_to_string).
      return quoteJson(data.toString('utf8'));
    default:
      return quoteJson(`base64:type${fieldType}:${mysqlBase64(data)}`);
  }
}

/** The value of `type` whose bytes start at `at` (scalars) or whose container starts at `at` (objects, arrays: offsets are relative to it). */
function treeOf(input: Buffer, type: number, at: number): JsonTree {
  switch (type) {
    case SMALL_OBJECT:
    case LARGE_OBJECT:
    case SMALL_ARRAY:
    case LARGE_ARRAY:
      return containerOf(input, type, at);
    case LITERAL: {
      const literal = input[at] as number;
      if (literal > 2) throw new Error(`Unknown JSON literal ${literal}`);
      return { text: ['null', 'true', 'false'][literal] as string };
    }
    case INT16:
      return { text: String(input.readInt16LE(at)) };
    case UINT16:
      return { text: String(input.readUInt16LE(at)) };
    case INT32:
      return { text: String(input.readInt32LE(at)) };
    case UINT32:
      return { text: String(input.readUInt32LE(at)) };
    case INT64:
      return { text: input.readBigInt64LE(at).toString() };
    case UINT64:
      return { text: input.readBigUInt64LE(at).toString() };
    case DOUBLE:
      return { text: doubleText(input.readDoubleLE(at)) };
    case STRING: {
      const { length, next } = readVarlen(input, at);
      if (next + length > input.length) throw new Error('Truncated JSON string');
      return { text: quoteJson(input.toString('utf8', next, next + length)) };
    }
    case OPAQUE: {
      const fieldType = input[at] as number;
      const { length, next } = readVarlen(input, at + 1);
      if (next + length > input.length) throw new Error('Truncated JSON opaque value');
      return { text: opaqueText(fieldType, input.subarray(next, next + length)) };
    }
    default:
      throw new Error(`Unknown JSON value type ${type}`);
  }
}

function containerOf(input: Buffer, type: number, at: number): JsonTree {
  const large = type === LARGE_OBJECT || type === LARGE_ARRAY;
  const isObject = type === SMALL_OBJECT || type === LARGE_OBJECT;
  const size = large ? 4 : 2;
  const read = (offset: number) => (large ? input.readUInt32LE(offset) : input.readUInt16LE(offset));
  const count = read(at);
  const bytes = read(at + size);
  if (at + bytes > input.length) throw new Error('Truncated JSON container');
  const keyEntries = at + 2 * size;
  const valueEntries = keyEntries + (isObject ? count * (size + 2) : 0);
  const inline = large ? INLINE_LARGE : INLINE_SMALL;
  const values: JsonTree[] = [];
  for (let i = 0; i < count; i++) {
    const entry = valueEntries + i * (1 + size);
    const valueType = input[entry] as number;
    values.push(treeOf(input, valueType, inline.has(valueType) ? entry + 1 : at + read(entry + 1)));
  }
  if (!isObject) return { array: values };
  const members: [string, JsonTree][] = [];
  for (let i = 0; i < count; i++) {
    const entry = keyEntries + i * (size + 2);
    const keyStart = at + read(entry);
    members.push([input.toString('utf8', keyStart, keyStart + input.readUInt16LE(entry + size)), values[i] as JsonTree]);
  }
  return { object: members };
}

/** A binary JSON document (type byte, then its value) as a tree. */
export function decodeJsonTree(input: Buffer): JsonTree {
  if (input.length === 0) throw new Error('Empty JSON document');
  return treeOf(input, input[0] as number, 1);
}

/** A tree as MySQL prints the document. */
export function jsonTreeToText(node: JsonTree): string {
  if ('text' in node) return node.text;
  if ('array' in node) return `[${node.array.map(jsonTreeToText).join(', ')}]`;
  return `{${node.object.map(([key, value]) => `${quoteJson(key)}: ${jsonTreeToText(value)}`).join(', ')}}`;
}

/** A binary JSON document as MySQL prints it. */
export function jsonBinaryToText(input: Buffer): string {
  return jsonTreeToText(decodeJsonTree(input));
}

/** One change of a partial update (sql/json_diff.h Json_diff). */
export interface JsonDiff {
  readonly operation: 'REPLACE' | 'INSERT' | 'REMOVE';
  readonly path: string;
  readonly value?: JsonTree;
}

const OPERATIONS = ['REPLACE', 'INSERT', 'REMOVE'] as const;

/** A length-coded integer (the protocol's net_field_length) at `at`. */
function lengthCoded(bytes: Buffer, at: number): { value: number; next: number } {
  const first = bytes[at];
  if (first === undefined) throw new Error('Truncated JSON diff');
  if (first < 251) return { value: first, next: at + 1 };
  if (first === 252) return { value: bytes.readUInt16LE(at + 1), next: at + 3 };
  if (first === 253) return { value: bytes.readUIntLE(at + 1, 3), next: at + 4 };
  if (first === 254) return { value: bytes.readUInt32LE(at + 1) + bytes.readUInt32LE(at + 5) * 2 ** 32, next: at + 9 };
  throw new Error('Invalid length coded number');
}

/** A JSON column's diffs as a partial update logs them (json_diff.cc, per diff: operation byte, length-coded path, and unless REMOVE a length-coded binary JSON value). */
export function readJsonDiffs(bytes: Buffer): JsonDiff[] {
  const diffs: JsonDiff[] = [];
  for (let at = 0; at < bytes.length; ) {
    const operation = OPERATIONS[bytes[at] as number];
    if (!operation) throw new Error('Unknown JSON diff operation');
    const path = lengthCoded(bytes, at + 1);
    const pathEnd = path.next + path.value;
    const text = bytes.toString('utf8', path.next, pathEnd);
    at = pathEnd;
    if (operation === 'REMOVE') {
      diffs.push({ operation, path: text });
      continue;
    }
    const value = lengthCoded(bytes, at);
    diffs.push({ operation, path: text, value: decodeJsonTree(bytes.subarray(value.next, value.next + value.value)) });
    at = value.next + value.value;
  }
  return diffs;
}

/** A path of a JSON diff as the server writes it (Json_path::to_string): '$', then legs '.member', '."quoted member"' or '[index]'. */
function parseDiffPath(path: string): (string | number)[] {
  const unsupported = () => new Error(`Unsupported JSON diff path ${path}`);
  if (path[0] !== '$') throw unsupported();
  const legs: (string | number)[] = [];
  for (let at = 1; at < path.length; ) {
    if (path[at] === '[') {
      const end = path.indexOf(']', at);
      const index = path.slice(at + 1, end);
      if (end < 0 || !/^\d+$/.test(index)) throw unsupported();
      legs.push(Number(index));
      at = end + 1;
    } else if (path[at] === '.' && path[at + 1] === '"') {
      let end = at + 2;
      while (end < path.length && path[end] !== '"') end += path[end] === '\\' ? 2 : 1;
      if (end >= path.length) throw unsupported();
      legs.push(JSON.parse(path.slice(at + 1, end + 1)) as string);
      at = end + 1;
    } else if (path[at] === '.') {
      const match = /^[^.[]+/.exec(path.slice(at + 1));
      if (!match) throw unsupported();
      legs.push(match[0]);
      at += 1 + match[0].length;
    } else {
      throw unsupported();
    }
  }
  return legs;
}

/** MySQL's member order: shorter keys first, then by their UTF-8 bytes. */
function compareKeys(a: string, b: string): number {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length - y.length || Buffer.compare(x, y);
}

/**
 * Applies a partial update's diffs (REPLACE, INSERT, REMOVE at a path) to the tree of the before
 * image, as the server applied them to the column (sql/json_diff.cc apply_json_diffs): the after
 * image's tree. A diff that does not fit the document is an error, never skipped.
 */
export function applyJsonDiffs(tree: JsonTree, diffs: readonly JsonDiff[]): JsonTree {
  let root = tree;
  for (const { operation, path, value } of diffs) {
    const legs = parseDiffPath(path);
    const fail = () => new Error(`JSON diff ${operation} at ${path} does not fit the document`);
    if (legs.length === 0) {
      if (operation !== 'REPLACE') throw new Error(`JSON diff ${operation} of the whole document`);
      root = value as JsonTree;
      continue;
    }
    let parent = root;
    for (const leg of legs.slice(0, -1)) {
      const next =
        typeof leg === 'number'
          ? 'array' in parent
            ? parent.array[leg]
            : undefined
          : 'object' in parent
            ? parent.object.find(([key]) => key === leg)?.[1]
            : undefined;
      if (!next) throw new Error(`JSON diff path ${path} is not in the document`);
      parent = next;
    }
    const last = legs[legs.length - 1] as string | number;
    if (typeof last === 'number') {
      if (!('array' in parent)) throw fail();
      if (operation === 'INSERT') parent.array.splice(Math.min(last, parent.array.length), 0, value as JsonTree);
      else if (last >= parent.array.length) throw fail();
      else if (operation === 'REPLACE') parent.array[last] = value as JsonTree;
      else parent.array.splice(last, 1);
      continue;
    }
    if (!('object' in parent)) throw fail();
    const at = parent.object.findIndex(([key]) => key === last);
    if (operation === 'REMOVE') {
      if (at < 0) throw fail();
      parent.object.splice(at, 1);
    } else if (at >= 0) {
      parent.object[at] = [last, value as JsonTree];
    } else if (operation === 'INSERT') {
      const before = parent.object.findIndex(([key]) => compareKeys(key, last) > 0);
      parent.object.splice(before < 0 ? parent.object.length : before, 0, [last, value as JsonTree]);
    } else {
      throw fail();
    }
  }
  return root;
}

/** A MySQL JSON column's value in a row image, as zongji hands it over (the document's bytes): its text, NULL for an empty one. */
export function jsonValue(value: unknown): unknown {
  if (!Buffer.isBuffer(value)) return value;
  return value.length === 0 ? null : jsonBinaryToText(value);
}

/** Each named JSON column the row holds, as its text (`jsonValue`); a column the image leaves out stays absent. */
export function jsonText(row: Record<string, unknown>, names: readonly string[]): void {
  for (const name of names) {
    const value = row[name];
    if (Buffer.isBuffer(value)) row[name] = jsonValue(value);
  }
}

/**
 * A JSON column's after image in a partial update (its diffs' bytes) with its before image (the
 * document's bytes, if the image holds it): the document after, as MySQL prints it; without a
 * before image (binlog_row_image=MINIMAL) `{ jsonDiff: [...] }`, the change, which no document can
 * be made of.
 */
export function partialJsonValue(before: unknown, diffBytes: Buffer): string | { jsonDiff: { operation: string; path: string; value: string | undefined }[] } {
  const diffs = readJsonDiffs(diffBytes);
  if (!Buffer.isBuffer(before) || before.length === 0)
    return { jsonDiff: diffs.map(({ operation, path, value }) => ({ operation, path, value: value && jsonTreeToText(value) })) };
  return jsonTreeToText(applyJsonDiffs(decodeJsonTree(before), diffs));
}

/**
 * A partial update's row: each named JSON column whose after image is a diff (zongji's
 * `{ partialJson: bytes }`) gets the document after it, from its before image (`partialJsonValue`).
 */
export function applyPartialJson(before: Record<string, unknown>, after: Record<string, unknown>, names: readonly string[]): void {
  for (const name of names) {
    const value = after[name];
    if (value !== null && typeof value === 'object' && 'partialJson' in value && Buffer.isBuffer(value.partialJson))
      after[name] = partialJsonValue(before[name], value.partialJson);
  }
}
