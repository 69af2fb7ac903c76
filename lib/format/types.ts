/**
 * Lossless value encoding, shared by every path that produces rows (binlog events and snapshot pages).
 * Values are written as JSON text directly: integers beyond 2^53 must stay unquoted numbers with
 * exact digits, which JSON.stringify cannot do on Node 20.
 */
export type ColumnKind =
  | 'int' // every integer size, signed or unsigned → JSON number, exact digits
  | 'decimal' // → string exactly as MySQL prints it
  | 'float' // → shortest decimal that round-trips to the stored float32
  | 'double' // → shortest round-trip number
  | 'year' // → number
  | 'bit' // → number
  | 'date' // → "YYYY-MM-DD" (zero dates kept as text)
  | 'datetime' // → "YYYY-MM-DD HH:MM:SS[.f]", no time-zone conversion
  | 'timestamp' // → "YYYY-MM-DDTHH:MM:SS[.f]Z"
  | 'time' // → "[-]HH:MM:SS[.f]"
  | 'string' // CHAR/VARCHAR/TEXT/ENUM/SET/JSON → string
  | 'binary'; // BINARY/VARBINARY/BLOB → base64

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

/** Shortest decimal that parses back to the same float32 (MySQL FLOAT). */
export function float32Text(value: number): string {
  const target = Math.fround(value);
  for (let precision = 1; precision < 10; precision++) {
    const text = Number(target.toPrecision(precision));
    if (Math.fround(text) === target) return String(text);
  }
  return String(target);
}

const INTEGER = /^-?\d+$/;

function bitText(value: Buffer): string {
  let n = 0n;
  for (const byte of value) n = (n << 8n) | BigInt(byte);
  return n.toString();
}

/** Encodes one column value as JSON text. */
export function encodeValue(kind: ColumnKind, value: unknown, fsp?: number): string {
  if (value === null || value === undefined) return 'null';
  if (fsp !== undefined && (kind === 'datetime' || kind === 'timestamp' || kind === 'time')) value = withFraction(String(value), fsp);
  switch (kind) {
    case 'int':
    case 'year': {
      const text = String(value);
      if (!INTEGER.test(text)) throw new TypeError(`integer column holds non-integer value ${text}`);
      return text;
    }
    case 'double':
      return String(Number(value));
    case 'float':
      return float32Text(Number(value));
    case 'bit':
      return Buffer.isBuffer(value) ? bitText(value) : String(value);
    case 'binary':
      return `"${(Buffer.isBuffer(value) ? value : Buffer.from(String(value), 'binary')).toString('base64')}"`;
    case 'timestamp': {
      const text = String(value);
      // Zero timestamps have no instant; keep MySQL's text, as for zero dates.
      return JSON.stringify(text.startsWith('0000-00-00') ? text : `${text.replace(' ', 'T')}Z`);
    }
    default:
      return JSON.stringify(Buffer.isBuffer(value) ? value.toString('utf8') : String(value));
  }
}
