import { type EncodedShape, type Op, type Row, rowProperty } from './event.ts';
import { type ColumnKind, hasFraction, valueEncoder } from './types.ts';

/*
 * Change-event lines written as UTF-8 bytes straight into a staging buffer (StagingObject.reserve),
 * the same bytes `eventLine` makes as text: the parts constant per table shape (`{"op":…,"db":…,
 * "table":…,"key":`, each `"column":`) and per transaction (`,"source":{…},"seq":"<prefix>`) are
 * encoded once, and values are written as they are encoded — the common ones (safe integers, plain
 * ASCII strings, decimal and temporal text) without a string of their own, any other through their
 * column's `valueEncoder` text. Building each line as a string and flattening it into the buffer
 * was the largest single cost of encoding (docs/PERFORMANCE.md).
 *
 * Every writer takes a `limit` and returns -1 instead of writing past it: the caller then writes
 * the line as text (`eventLine`), which has no size bound.
 */

/** Writes one value's JSON text at `at`; returns where it ends, or -1 if it might pass `limit`. */
type ValueWriter = (out: Buffer, at: number, limit: number, value: unknown) => number;

/** Writes one row image (or key) as a JSON object; -1 as for values. */
export type ObjectWriter = (out: Buffer, at: number, limit: number, row: Row) => number;

/** Printable ASCII except `"` and `\`: JSON text is such a string in quotes, byte for byte. */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
const INTEGER = /^-?\d+$/;

/** `text` (JSON text) as UTF-8; at most 3 bytes per UTF-16 unit. */
function writeText(out: Buffer, at: number, limit: number, text: string): number {
  if (at + text.length * 3 > limit) return -1;
  return at + out.write(text, at, 'utf8');
}

/** Returned by `writePlain` for a string that is not PLAIN. */
const NOT_PLAIN = -2;

/**
 * A PLAIN string, in quotes when `quote`, one byte per character: checked and copied in one pass
 * (a regular expression and a native write cost more for the short values of most columns);
 * NOT_PLAIN at its first other character, -1 if it might pass `limit`.
 */
function writePlain(out: Buffer, at: number, limit: number, text: string, quote: boolean): number {
  const length = text.length;
  const end = at + length + (quote ? 2 : 0);
  if (end > limit) return -1;
  if (length > 64) {
    if (!PLAIN.test(text)) return NOT_PLAIN;
    if (quote) out[at++] = 34;
    at += out.write(text, at, 'latin1');
  } else {
    if (quote) out[at++] = 34;
    for (let i = 0; i < length; i++) {
      const c = text.charCodeAt(i);
      if (c < 0x20 || c > 0x7e || c === 34 || c === 92) return NOT_PLAIN;
      out[at + i] = c;
    }
    at += length;
  }
  if (quote) out[at] = 34;
  return end;
}

/** A string value in quotes: PLAIN text as it is, any other through its encoder. */
function writeQuoted(out: Buffer, at: number, limit: number, text: string, generic: ValueWriter): number {
  const end = writePlain(out, at, limit, text, true);
  return end === NOT_PLAIN ? generic(out, at, limit, text) : end;
}

/** Copies a constant part: a short one by a loop, which costs less than a native copy's call. */
function put(out: Buffer, at: number, part: Buffer): number {
  const length = part.length;
  if (length > 16) out.set(part, at);
  else for (let i = 0; i < length; i++) out[at + i] = part[i] as number;
  return at + length;
}

/** A safe integer's decimal digits (as `String(n)`: `-0` is "0"). */
function writeInteger(out: Buffer, at: number, limit: number, n: number): number {
  if (at + 17 > limit) return -1;
  if (n < 0) {
    out[at++] = 45;
    n = -n;
  }
  let digits = 1;
  for (let rest = n; rest >= 10; rest = Math.floor(rest / 10)) digits++;
  for (let i = at + digits - 1; i >= at; i--) {
    out[i] = 48 + (n % 10);
    n = Math.floor(n / 10);
  }
  return at + digits;
}

/** `n` (≥ 0) as exactly `width` digits, zero-padded (seq's change index). */
export function writeDigits(out: Buffer, at: number, n: number, width: number): number {
  for (let i = at + width - 1; i >= at; i--) {
    out[i] = 48 + (n % 10);
    n = Math.floor(n / 10);
  }
  return at + width;
}

/**
 * A column's writer: the bytes of `valueEncoder(kind, fsp)`'s text. The fast paths take only
 * values whose text is known without the encoder (test/unit/line-bytes.test.ts compares all kinds).
 */
function valueWriter(kind: ColumnKind, fsp: number | undefined): ValueWriter {
  const encode = valueEncoder(kind, fsp);
  const generic: ValueWriter = (out, at, limit, value) => writeText(out, at, limit, encode(value));
  switch (kind) {
    case 'int':
      return (out, at, limit, value) => {
        if (typeof value === 'number' && Number.isSafeInteger(value)) return writeInteger(out, at, limit, value);
        // BIGINT comes as a string: its digits (and sign) are its text; anything else is the encoder's to judge.
        if (typeof value === 'string' && INTEGER.test(value)) {
          const end = writePlain(out, at, limit, value, false);
          if (end !== NOT_PLAIN) return end;
        }
        return generic(out, at, limit, value);
      };
    case 'string':
    case 'date':
      return (out, at, limit, value) => (typeof value === 'string' ? writeQuoted(out, at, limit, value, generic) : generic(out, at, limit, value));
    case 'decimal':
      // As valueEncoder: leading zeros (ZEROFILL) take the generic path.
      return (out, at, limit, value) => {
        if (typeof value !== 'string') return generic(out, at, limit, value);
        const sign = value.charCodeAt(0) === 45 ? 1 : 0;
        const next = value.charCodeAt(sign + 1);
        const padded = value.charCodeAt(sign) === 48 && next >= 48 && next <= 57;
        return padded ? generic(out, at, limit, value) : writeQuoted(out, at, limit, value, generic);
      };
    case 'datetime':
    case 'time':
      return (out, at, limit, value) =>
        typeof value === 'string' && (fsp === undefined || hasFraction(value, fsp))
          ? writeQuoted(out, at, limit, value, generic)
          : generic(out, at, limit, value);
    default:
      return generic;
  }
}

const EMPTY = Buffer.from('{}');

/**
 * A JSON object of the given columns, made once per shape like event.ts's encoders: one function
 * reading each column by its literal name, the `"name":` parts as bytes. The constant bytes are
 * kept clear of `limit` from the start, so only values need checking.
 */
function objectWriter(shape: EncodedShape, indexes: readonly number[]): ObjectWriter {
  const parts = indexes.map((index, i) => Buffer.from((i === 0 ? '{' : ',') + (shape.names[index] as string)));
  const constant = parts.reduce((n, part) => n + part.length, 0) + (indexes.length ? 1 : 2);
  if (!indexes.length) return (out, at, limit) => (at + EMPTY.length > limit ? -1 : at + EMPTY.copy(out, at));
  const writers = indexes.map((index) => {
    const column = shape.columns[index];
    if (!column) throw new Error(`no column ${index}`);
    return valueWriter(column.kind, column.fsp);
  });
  const steps = indexes.map(
    (index, i) =>
      `at = w${i}(o, put(o, at, p${i}), l, r[${JSON.stringify(rowProperty((shape.columns[index] as { name: string }).name))}]); if (at < 0) return -1;`,
  );
  const make = new Function(
    'put',
    ...parts.map((_, i) => `p${i}`),
    ...writers.map((_, i) => `w${i}`),
    `return (o, at, limit, r) => { const l = limit - ${constant}; if (at > l) return -1; ${steps.join(' ')} o[at] = 125; return at + 1; };`,
  );
  return make(put, ...parts, ...writers) as ObjectWriter;
}

/** A shape's line parts as bytes and its row and key writers, made once per shape. */
export interface ShapeBytes {
  /** `{"op":"<op>","db":…,"table":…,"key":` per op. */
  readonly head: Readonly<Record<Op, Buffer>>;
  readonly row: ObjectWriter;
  /** Null for a table without a key (`"key":null`). */
  readonly key: ObjectWriter | null;
  /** `"` (closing the seq), `,"schema":n` when versioned, `}` and the newline. */
  readonly end: Buffer;
}

const shapes = new WeakMap<EncodedShape, ShapeBytes>();

export function shapeBytes(shape: EncodedShape): ShapeBytes {
  let bytes = shapes.get(shape);
  if (!bytes) {
    const head = (op: Op) => Buffer.from(`{"op":"${op}",${shape.header},"key":`);
    bytes = {
      head: { c: head('c'), u: head('u'), d: head('d'), r: head('r') },
      row: objectWriter(
        shape,
        shape.columns.map((_, i) => i),
      ),
      key: shape.key ? objectWriter(shape, shape.key) : null,
      end: Buffer.from(`"${shape.schema === undefined ? '' : `,"schema":${shape.schema}`}}\n`),
    };
    shapes.set(shape, bytes);
  }
  return bytes;
}

const NULL = Buffer.from('null');
const BEFORE = Buffer.from(',"before":');
const AFTER = Buffer.from(',"after":');
/** The most a line's constant parts beyond the head, the transaction's part and the end take. */
const FRAME = NULL.length * 3 + BEFORE.length + AFTER.length;

/** The transaction's part of its lines: `,"source":<source>,"seq":"<seq prefix>` (the change index follows). */
export function transactionBytes(source: string, seqPrefix: string): Buffer {
  return Buffer.from(`,"source":${source},"seq":"${seqPrefix}`);
}

/**
 * One line, as `eventLine(op, shape, key, before, after, source, seq)` writes it with the key from
 * `keyRow` and the seq `<prefix><index>` (`indexWidth` digits); returns its end, or -1 if it might
 * pass `limit` (then nothing is promised of the bytes from `at`).
 */
export function writeLine(
  out: Buffer,
  at: number,
  limit: number,
  bytes: ShapeBytes,
  op: Op,
  keyRow: Row,
  before: Row | null,
  after: Row | null,
  transaction: Buffer,
  index: number,
  indexWidth: number,
): number {
  const head = bytes.head[op];
  const l = limit - (head.length + FRAME + transaction.length + indexWidth + bytes.end.length);
  if (at > l) return -1;
  at = put(out, at, head);
  if (bytes.key) at = bytes.key(out, at, l, keyRow);
  else {
    at = put(out, at, NULL);
  }
  if (at < 0) return -1;
  at = put(out, at, BEFORE);
  if (before) at = bytes.row(out, at, l, before);
  else {
    at = put(out, at, NULL);
  }
  if (at < 0) return -1;
  at = put(out, at, AFTER);
  if (after) at = bytes.row(out, at, l, after);
  else {
    at = put(out, at, NULL);
  }
  if (at < 0) return -1;
  at = writeDigits(out, put(out, at, transaction), index, indexWidth);
  return put(out, at, bytes.end);
}
