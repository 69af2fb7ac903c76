/**
 * Lossless value encoding, shared by every path that produces rows (binlog events and snapshot pages).
 * Values are written as JSON text directly: integers beyond 2^53 must stay unquoted numbers with
 * exact digits, which JSON.stringify cannot do on Node 20.
 */
export type ColumnKind =
  | 'int' // every integer size, signed or unsigned → JSON number, exact digits
  | 'decimal' // → string exactly as MySQL prints it (without ZEROFILL's padding)
  | 'float' // → shortest decimal that round-trips to the stored float32
  | 'double' // → shortest round-trip number
  | 'year' // → number; 0 for the zero year
  | 'bit' // → number
  | 'date' // → "YYYY-MM-DD" (zero dates kept as text)
  | 'datetime' // → "YYYY-MM-DD HH:MM:SS[.f]", no time-zone conversion
  | 'timestamp' // → "YYYY-MM-DDTHH:MM:SS[.f]Z"
  | 'time' // → "[-]HH:MM:SS[.f]"
  | 'string' // CHAR/VARCHAR/TEXT/ENUM/SET/JSON → string
  | 'binary' // BINARY/VARBINARY/BLOB, spatial types (SRID + WKB) → base64
  | 'uuid' // MariaDB UUID → "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as the server prints it
  | 'inet4' // MariaDB INET4 → "a.b.c.d"
  | 'inet6'; // MariaDB INET6 → text as the server prints it (RFC 5952, IPv4-mapped in dotted form)

/** MariaDB types the binlog logs as BINARY(n); only information_schema tells them apart. */
export type LogicalType = Extract<ColumnKind, 'uuid' | 'inet4' | 'inet6'>;

export interface Column {
  readonly name: string;
  readonly kind: ColumnKind;
  /** The SQL type, for the manifest's schema (e.g. `decimal(38,10)`, `datetime(6)`). */
  readonly sqlType: string;
  /** Fraction digits of DATETIME/TIMESTAMP/TIME columns. */
  readonly fsp?: number;
}

/**
 * Exactly `fsp` fraction digits. The binlog always carries them; MySQL's binary protocol omits an
 * all-zero fraction ("12:00:00" for DATETIME(6)), so the snapshot path needs this (found by chaos).
 */
function withFraction(text: string, fsp: number): string {
  const dot = text.lastIndexOf('.');
  const colon = text.lastIndexOf(':');
  if (dot > colon)
    return fsp
      ? `${text.slice(0, dot + 1)}${text
          .slice(dot + 1)
          .padEnd(fsp, '0')
          .slice(0, fsp)}`
      : text.slice(0, dot);
  return fsp ? `${text}.${'0'.repeat(fsp)}` : text;
}

/** JavaScript's shortest round-trip spelling, keeping the sign of a negative zero (`String(-0)` is "0"). */
export const numberText = (value: number) => (Object.is(value, -0) ? '-0' : String(value));

/** Shortest decimal that parses back to the same float32 (MySQL FLOAT). */
export function float32Text(value: number): string {
  const target = Math.fround(value);
  if (target === 0) return numberText(target); // toPrecision drops the sign of -0
  for (let precision = 1; precision < 10; precision++) {
    const text = Number(target.toPrecision(precision));
    if (Math.fround(text) === target) return numberText(text);
  }
  return numberText(target);
}

const hex = (bytes: Buffer, from: number, to: number) => bytes.toString('hex', from, to);

/** The 16 bytes of a MariaDB UUID (stored in text order) as the server prints them. */
export function uuidText(bytes: Buffer): string {
  return `${hex(bytes, 0, 4)}-${hex(bytes, 4, 6)}-${hex(bytes, 6, 8)}-${hex(bytes, 8, 10)}-${hex(bytes, 10, 16)}`;
}

/**
 * The 16 bytes of an INET6 as MariaDB prints them (Inet6::to_string): the longest run of zero groups
 * (the leftmost of equals; unlike RFC 5952 even a single group) becomes "::", and an address whose
 * first 96 bits are zero, or zero then ffff, ends in dotted IPv4 form ("::1.2.3.4", "::ffff:1.2.3.4").
 */
export function inet6Text(bytes: Buffer): string {
  const words = Array.from({ length: 8 }, (_, i) => bytes.readUInt16BE(i * 2));
  let gap = { at: -1, length: 0 };
  for (let i = 0; i < 8; ) {
    let end = i;
    while (end < 8 && words[end] === 0) end++;
    if (end - i > gap.length) gap = { at: i, length: end - i };
    i = end === i ? i + 1 : end;
  }
  if (gap.at === 0 && (gap.length === 6 || (gap.length === 5 && words[5] === 0xffff))) {
    return `::${gap.length === 5 ? 'ffff:' : ''}${bytes[12]}.${bytes[13]}.${bytes[14]}.${bytes[15]}`;
  }
  if (gap.at < 0) return words.map((w) => w.toString(16)).join(':');
  const head = words.slice(0, gap.at).map((w) => w.toString(16));
  const tail = words.slice(gap.at + gap.length).map((w) => w.toString(16));
  return `${head.join(':')}::${tail.join(':')}`;
}

/** Buffers (the binlog's bytes) are printed the server's way; strings are already the server's text. */
const textOf = (value: unknown, print: (bytes: Buffer) => string) => JSON.stringify(Buffer.isBuffer(value) ? print(value) : String(value));

const INTEGER = /^-?\d+$/;
const LEADING_ZEROS = /^(-?)0+(?=\d)/;

function bitText(value: Buffer): string {
  let n = 0n;
  for (const byte of value) n = (n << 8n) | BigInt(byte);
  return n.toString();
}

/** Encodes one column value as JSON text. */
export function encodeValue(kind: ColumnKind, value: unknown, fsp?: number): string {
  if (value === null || value === undefined) return 'null';
  // A driver that decodes a type into an object (spatial values, parsed JSON) would otherwise be
  // written as "[object Object]": refuse loudly instead.
  if (typeof value === 'object' && !Buffer.isBuffer(value))
    throw new TypeError(`cannot encode a ${kind} column's ${value.constructor?.name ?? 'object'} value`);
  if (fsp !== undefined && (kind === 'datetime' || kind === 'timestamp' || kind === 'time')) value = withFraction(String(value), fsp);
  switch (kind) {
    case 'int':
    case 'year': {
      const text = String(value);
      if (!INTEGER.test(text)) throw new TypeError(`integer column holds non-integer value ${text}`);
      // YEAR holds 1901–2155 or the zero year; the binlog's value reader and YEAR() (the snapshot's read of
      // YEAR(2)) both add 1900 to the stored byte, so 1900 can only mean the zero year.
      return kind === 'year' && text === '1900' ? '0' : text;
    }
    case 'double':
      return numberText(Number(value));
    case 'float':
      return float32Text(Number(value));
    case 'bit':
      return Buffer.isBuffer(value) ? bitText(value) : String(value);
    case 'decimal':
      // ZEROFILL pads DECIMAL with leading zeros in the snapshot's reads, never in the binlog.
      return JSON.stringify(String(value).replace(LEADING_ZEROS, '$1'));
    case 'binary':
      return `"${(Buffer.isBuffer(value) ? value : Buffer.from(String(value), 'binary')).toString('base64')}"`;
    case 'uuid':
      return textOf(value, uuidText);
    case 'inet4':
      return textOf(value, (bytes) => bytes.join('.'));
    case 'inet6':
      return textOf(value, inet6Text);
    case 'timestamp': {
      const text = String(value);
      // Zero timestamps have no instant; keep MySQL's text, as for zero dates.
      return JSON.stringify(text.startsWith('0000-00-00') ? text : `${text.replace(' ', 'T')}Z`);
    }
    default:
      return JSON.stringify(Buffer.isBuffer(value) ? value.toString('utf8') : String(value));
  }
}

/** Whether DATETIME/TIME text has exactly `fsp` fraction digits, so `encodeValue` keeps it as it is. */
export function hasFraction(text: string, fsp: number): boolean {
  const dot = text.lastIndexOf('.');
  return fsp === 0 ? dot < 0 : dot === text.length - fsp - 1 && dot > text.lastIndexOf(':');
}

/** One column's encoder: `encodeValue` for its kind, with the common cases of each kind up front. */
export type ValueEncoder = (value: unknown) => string;

/**
 * `encodeValue(kind, ·, fsp)` as a function made once per column: the values drivers hand over for
 * most columns (a safe integer, a string) are encoded without the generic checks; anything else
 * takes `encodeValue` itself, so the text is the same either way.
 */
export function valueEncoder(kind: ColumnKind, fsp?: number): ValueEncoder {
  const generic: ValueEncoder = (value) => encodeValue(kind, value, fsp);
  switch (kind) {
    case 'int':
      // BIGINT arrives as a string from the snapshot's binary protocol (bigNumberStrings).
      return (value) =>
        typeof value === 'number' && Number.isSafeInteger(value) ? String(value) : typeof value === 'string' && INTEGER.test(value) ? value : generic(value);
    case 'double':
      return (value) => (typeof value === 'number' ? numberText(value) : generic(value));
    case 'string':
      return (value) => (typeof value === 'string' ? JSON.stringify(value) : generic(value));
    case 'decimal':
      // Only leading zeros (ZEROFILL: a "0" followed by a digit, after an optional "-") need the generic path.
      return (value) => {
        if (typeof value !== 'string') return generic(value);
        const at = value.charCodeAt(0) === 45 ? 1 : 0;
        const next = value.charCodeAt(at + 1);
        return value.charCodeAt(at) === 48 && next >= 48 && next <= 57 ? generic(value) : JSON.stringify(value);
      };
    case 'date':
      return (value) => (typeof value === 'string' ? JSON.stringify(value) : generic(value));
    case 'datetime':
    case 'time':
      // Text that already has exactly `fsp` fraction digits (what the binlog gives) is kept as it is.
      return (value) =>
        typeof value === 'string' ? JSON.stringify(fsp === undefined || hasFraction(value, fsp) ? value : withFraction(value, fsp)) : generic(value);
    default:
      return generic;
  }
}
