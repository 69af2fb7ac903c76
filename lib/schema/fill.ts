import { encodeValue } from '../format/types.ts';
import type { ColumnType, TypeDescriptor } from './column-type.ts';
import type { ColumnDefinition, Literal } from './definition.ts';

/**
 * The value rows existing at an ADD COLUMN hold for the new column, as the JSON text sluice's
 * encoder writes for it (`encodeValue`): the constant default, NULL, or the implicit default of a
 * NOT NULL column. The binlog never shows these values, so a wrong fill would silently corrupt
 * every old row: whatever is not certain is `derivable: false`, and the table is re-snapshotted.
 *
 * Certain means: checked against the real server (test/integration/ddl-schema.test.ts) for the
 * forms accepted here. Refused on purpose: expressions and functions (CURRENT_TIMESTAMP, UUID()),
 * AUTO_INCREMENT, generated columns, JSON/UUID/INET/geometry columns, TIMESTAMP literals (stored in
 * the ALTER session's time zone), strings with backslash escapes (sql_mode dependent), text whose
 * characters the column's charset may not hold, values the server would round, clip or convert in
 * ways not modelled here (FLOAT(M,D), YEAR from strings, dates in other formats…).
 */
export type Fill = { readonly derivable: true; readonly json: string } | { readonly derivable: false; readonly reason: string };

export interface FillContext {
  /** explicit_defaults_for_timestamp of the server (ON by default since MariaDB 10.10). Unknown → TIMESTAMP NOT NULL is not derivable. */
  readonly explicitDefaultsForTimestamp?: boolean;
}

const no = (reason: string): Fill => ({ derivable: false, reason });

/** Integer ranges by type. */
const INT_BITS: Record<string, number> = { tinyint: 8, smallint: 16, mediumint: 24, int: 32, bigint: 64 };

/** The fill of a column added as `column`, whose normalized type is `type`. */
export function addColumnFill(column: ColumnDefinition, type: ColumnType, nullable: boolean, context: FillContext = {}): Fill {
  if (column.generated) return no('a generated column is computed from each row');
  if (column.autoIncrement) return no('AUTO_INCREMENT numbers the existing rows');
  const base = column.type.base;
  if (
    ['json', 'uuid', 'inet4', 'inet6', 'vector'].includes(base) ||
    type.type.startsWith('geom') ||
    base === 'point' ||
    /polygon|linestring|multipoint/.test(base)
  )
    return no(`${base} columns are not derived`);
  const d = column.default;
  switch (d.kind) {
    case 'expression':
      return no('the default is an expression');
    case 'null':
      return nullable ? { derivable: true, json: 'null' } : no('NOT NULL DEFAULT NULL');
    case 'none':
      if (nullable) return { derivable: true, json: 'null' };
      return implicitDefault(column.type, type, context);
    case 'literal':
      return literalFill(d.literal, column.type, type);
  }
}

/** What MariaDB stores in existing rows for a NOT NULL column without a default. */
function implicitDefault(d: TypeDescriptor, type: ColumnType, context: FillContext): Fill {
  const fsp = type.fsp ?? 0;
  const fraction = fsp ? `.${'0'.repeat(fsp)}` : '';
  switch (type.kind) {
    case 'int':
    case 'float':
    case 'double':
    case 'bit':
    case 'year':
      return { derivable: true, json: '0' };
    case 'decimal':
      return { derivable: true, json: encodeValue('decimal', decimalText('0', d.scale ?? 0)) };
    case 'date':
      return { derivable: true, json: encodeValue('date', '0000-00-00') };
    case 'datetime':
      return { derivable: true, json: encodeValue('datetime', `0000-00-00 00:00:00${fraction}`, fsp) };
    case 'timestamp':
      return context.explicitDefaultsForTimestamp === true
        ? { derivable: true, json: encodeValue('timestamp', `0000-00-00 00:00:00${fraction}`, fsp) }
        : no('TIMESTAMP NOT NULL without a default is CURRENT_TIMESTAMP unless explicit_defaults_for_timestamp');
    case 'time':
      return { derivable: true, json: encodeValue('time', `00:00:00${fraction}`, fsp) };
    case 'string':
      if (d.base === 'enum') return { derivable: true, json: encodeValue('string', d.values?.[0] ?? '') };
      return { derivable: true, json: '""' };
    case 'binary':
      if (d.base === 'binary' || (d.base === 'char' && d.charset === 'binary'))
        return { derivable: true, json: encodeValue('binary', Buffer.alloc(d.length ?? 1)) };
      return { derivable: true, json: '""' };
    case 'uuid':
    case 'inet4':
    case 'inet6':
      return no(`an implicit ${type.kind} default (not verified against the server)`);
  }
}

const DECIMAL_TEXT = /^([+-]?)(\d*)(?:\.(\d*))?$/;

/** Rounds a decimal text to `scale` digits, half away from zero (MariaDB's DECIMAL rounding). */
function decimalText(text: string, scale: number): string {
  const m = DECIMAL_TEXT.exec(text);
  if (!m) throw new RangeError(`not a decimal: ${text}`);
  const fraction = (m[3] ?? '').padEnd(scale + 1, '0');
  const kept = BigInt(`${m[2] || '0'}${fraction.slice(0, scale)}`);
  const rounded = Number(fraction[scale]) >= 5 ? kept + 1n : kept;
  const digits = rounded.toString().padStart(scale + 1, '0');
  const out = scale ? `${digits.slice(0, -scale)}.${digits.slice(-scale)}` : digits;
  return m[1] === '-' && rounded !== 0n ? `-${out}` : out;
}

function integerDigits(text: string): number {
  return (/^-?(\d+)/.exec(text)?.[1] ?? '').replace(/^0+/, '').length;
}

/** A literal's numeric text, when it is a plain decimal number (or a string holding one). */
function numericText(literal: Literal): string | undefined {
  if (literal.kind === 'boolean') return literal.value ? '1' : '0';
  const text = literal.kind === 'number' ? literal.text : literal.kind === 'string' && !literal.escaped ? literal.value : undefined;
  return text !== undefined && DECIMAL_TEXT.test(text) && /\d/.test(text) ? text : undefined;
}

/** Characters the column's charset certainly stores unchanged. */
function storable(value: string, charset: string | undefined): boolean {
  const wellFormed = !/[\ud800-\udfff]/u.test(value);
  if (charset === 'utf8mb4') return wellFormed;
  if (charset === 'utf8mb3') return wellFormed && ![...value].some((ch) => (ch.codePointAt(0) ?? 0) > 0xffff);
  // Other charsets: ASCII only (ucs2/utf16/utf32 hold it too).
  return charset !== undefined && /^[\x20-\x7e]*$/.test(value);
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATETIME = /^(\d{4})-(\d{2})-(\d{2})(?: (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?)?$/;
const TIME = /^(-?)(\d{1,3}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$/;

function validDate(y: number, m: number, d: number): boolean {
  if (y === 0 && m === 0 && d === 0) return true;
  if (y < 1000 || m < 1 || m > 12 || d < 1) return false;
  return d <= new Date(Date.UTC(y, m, 0)).getUTCDate();
}

function literalFill(literal: Literal, d: TypeDescriptor, type: ColumnType): Fill {
  const fsp = type.fsp ?? 0;
  switch (type.kind) {
    case 'int': {
      const text = numericText(literal);
      if (text === undefined || !/^[+-]?\d+$/.test(text)) return no('an integer default that is not a plain integer');
      const value = BigInt(text);
      const bits = INT_BITS[d.base] ?? 0;
      const [min, max] = d.unsigned ? [0n, (1n << BigInt(bits)) - 1n] : [-(1n << BigInt(bits - 1)), (1n << BigInt(bits - 1)) - 1n];
      if (value < min || value > max) return no('an integer default out of range');
      return { derivable: true, json: value.toString() };
    }
    case 'decimal': {
      const text = numericText(literal);
      if (text === undefined) return no('a DECIMAL default that is not a plain number');
      const scale = d.scale ?? 0;
      const precision = d.precision ?? 10;
      const rounded = decimalText(text, scale);
      if (integerDigits(rounded) > precision - scale) return no('a DECIMAL default out of range');
      if (d.unsigned && rounded.startsWith('-')) return no('a negative default of an UNSIGNED column');
      return { derivable: true, json: encodeValue('decimal', rounded) };
    }
    case 'float':
    case 'double': {
      if (d.scale !== undefined) return no('FLOAT(M,D)/DOUBLE(M,D) round their values');
      const text = numericText(literal) ?? (literal.kind === 'number' ? literal.text : undefined);
      const value = text === undefined ? Number.NaN : Number(text);
      if (!Number.isFinite(value) || (type.kind === 'float' && !Number.isFinite(Math.fround(value))))
        return no('a floating-point default that is not a plain number');
      if (d.unsigned && value < 0) return no('a negative default of an UNSIGNED column');
      return { derivable: true, json: encodeValue(type.kind, value) };
    }
    case 'bit': {
      let value: bigint;
      if (literal.kind === 'bits') value = literal.digits ? BigInt(`0b${literal.digits}`) : 0n;
      else if (literal.kind === 'hex') value = literal.digits ? BigInt(`0x${literal.digits}`) : 0n;
      else if (literal.kind === 'number' && /^\d+$/.test(literal.text)) value = BigInt(literal.text);
      else return no('a BIT default that is not a bit, hex or integer literal');
      if (value >= 1n << BigInt(d.length ?? 1)) return no('a BIT default wider than the column');
      return { derivable: true, json: encodeValue('bit', value.toString()) };
    }
    case 'year': {
      if (literal.kind !== 'number' || !/^\d{4}$/.test(literal.text)) return no('a YEAR default that is not four digits');
      const y = Number(literal.text);
      if (y !== 0 && (y < 1901 || y > 2155)) return no('a YEAR default out of range');
      return { derivable: true, json: String(y) };
    }
    case 'date': {
      const m = literal.kind === 'string' && !literal.escaped ? DATE.exec(literal.value) : null;
      if (!m || !validDate(Number(m[1]), Number(m[2]), Number(m[3]))) return no('a DATE default not written YYYY-MM-DD');
      return { derivable: true, json: encodeValue('date', literal.kind === 'string' ? literal.value : '') };
    }
    case 'datetime':
    case 'timestamp': {
      const m = literal.kind === 'string' && !literal.escaped ? DATETIME.exec(literal.value) : null;
      if (!m || !validDate(Number(m[1]), Number(m[2]), Number(m[3]))) return no('a DATETIME default not written YYYY-MM-DD[ HH:MM:SS[.f]]');
      const [h, mi, s] = [Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0)];
      if (h > 23 || mi > 59 || s > 59) return no('a DATETIME default out of range');
      const zero = m[1] === '0000';
      if (type.kind === 'timestamp' && !(zero && h === 0 && mi === 0 && s === 0 && !/[1-9]/.test(m[7] ?? '')))
        return no('a TIMESTAMP default is stored in the session time zone');
      // MariaDB truncates extra fraction digits (TIME_ROUND_FRACTIONAL is off by default).
      const text = `${m[1]}-${m[2]}-${m[3]} ${m[4] ?? '00'}:${m[5] ?? '00'}:${m[6] ?? '00'}${fsp ? `.${(m[7] ?? '').padEnd(fsp, '0').slice(0, fsp)}` : ''}`;
      return { derivable: true, json: encodeValue(type.kind, text, fsp) };
    }
    case 'time': {
      const m = literal.kind === 'string' && !literal.escaped ? TIME.exec(literal.value) : null;
      if (!m) return no('a TIME default not written [-]HH:MM:SS[.f]');
      const [h, mi, s] = [Number(m[2]), Number(m[3]), Number(m[4])];
      const frac = fsp ? (m[5] ?? '').padEnd(fsp, '0').slice(0, fsp) : '';
      if (mi > 59 || s > 59 || h > 838 || (h === 838 && (mi > 59 || s > 59))) return no('a TIME default out of range');
      if (m[1] === '-' && h === 0 && mi === 0 && s === 0 && !/[1-9]/.test(frac)) return no('a negative zero TIME default');
      const text = `${m[1]}${String(h).padStart(2, '0')}:${m[3]}:${m[4]}${fsp ? `.${frac}` : ''}`;
      return { derivable: true, json: encodeValue('time', text, fsp) };
    }
    case 'string':
      return stringFill(literal, d, type);
    case 'binary': {
      let bytes: Buffer;
      if (literal.kind === 'hex') bytes = Buffer.from(literal.digits.length % 2 ? `0${literal.digits}` : literal.digits, 'hex');
      else if (literal.kind === 'string' && !literal.escaped && /^[\x20-\x7e]*$/.test(literal.value)) bytes = Buffer.from(literal.value, 'latin1');
      else return no('a binary default that is not ASCII text or a hex literal');
      const length = d.length;
      if ((d.base === 'binary' || d.base === 'varbinary' || d.base === 'char' || d.base === 'varchar') && length !== undefined && bytes.length > length)
        return no('a binary default longer than the column');
      if (d.base === 'binary' || d.base === 'char') bytes = Buffer.concat([bytes, Buffer.alloc((length ?? 1) - bytes.length)]);
      if (d.base === 'tinyblob' && bytes.length > 255) return no('a default longer than the column');
      return { derivable: true, json: encodeValue('binary', bytes) };
    }
    case 'uuid':
    case 'inet4':
    case 'inet6':
      return no(`a ${type.kind} default (not verified against the server)`);
  }
}

function stringFill(literal: Literal, d: TypeDescriptor, type: ColumnType): Fill {
  if (literal.kind !== 'string') return no('a text default that is not a string literal');
  if (literal.escaped) return no('a string with backslash escapes (their meaning depends on sql_mode)');
  const value = literal.value;
  if (!storable(value, type.charset)) return no(`characters the column's charset ${type.charset ?? '(unknown)'} may not store unchanged`);
  const chars = [...value].length;
  switch (d.base) {
    case 'char':
      if (chars > (d.length ?? 1)) return no('a default longer than the column');
      // CHAR pads with spaces and strips them when read.
      return { derivable: true, json: encodeValue('string', value.replace(/ +$/, '')) };
    case 'varchar':
      if (chars > (d.length ?? 0)) return no('a default longer than the column');
      return { derivable: true, json: encodeValue('string', value) };
    case 'tinytext':
    case 'text':
    case 'mediumtext':
    case 'longtext':
      if (d.base === 'tinytext' && Buffer.byteLength(value) > 255) return no('a default longer than the column');
      return { derivable: true, json: encodeValue('string', value) };
    case 'enum': {
      const found = d.values?.find((v) => v === value);
      if (found === undefined) return no('an ENUM default that is not exactly one of its values');
      return { derivable: true, json: encodeValue('string', found) };
    }
    case 'set': {
      const members = value === '' ? [] : value.split(',');
      const values = d.values ?? [];
      if (!members.every((member) => values.includes(member))) return no('a SET default that is not made of its values exactly');
      return { derivable: true, json: encodeValue('string', values.filter((v) => members.includes(v)).join(',')) };
    }
    default:
      return no(`a default of a ${d.base} column`);
  }
}
