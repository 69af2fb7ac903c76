import type { Cursor, ValueOptions } from './values.ts';

/*
 * DATE, TIME, DATETIME and TIMESTAMP values of a row image, in each of their binlog formats (the
 * classic ones, MariaDB 5.3's "hires" ones and MySQL 5.6.4's TIME2/DATETIME2/TIMESTAMP2), as zongji
 * reads them: text under mysql2's `dateStrings`, else a Date in the connection's `timezone`. Ported
 * from zongji 0.9.0 (lib/common.js readMysqlValue, lib/datetime_decode.js); what it prints wrong
 * (negative TIME2) stays so here, the reader has those columns handed over raw (raw-values.ts).
 */

/** A fraction of a second: its digits as an integer, how many, and the milliseconds they begin with. */
interface Fraction {
  readonly value: number;
  readonly precision: number;
  readonly milliseconds: number;
}

const fractionOf = (value: number, precision: number): Fraction => ({
  value,
  precision,
  milliseconds: precision > 3 ? Math.floor(value / 10 ** (precision - 3)) : precision < 3 ? value * 10 ** (3 - precision) : value,
});

/** The last `size` characters of `num` left-padded with zeros (zongji's zeroPad, which also cuts). */
const zeroPad = (num: number, size: number) => {
  const text = String(num);
  return text.length >= size ? text.slice(text.length - size) : '0'.repeat(size - text.length) + text;
};
const pad2 = (num: number) => zeroPad(num, 2);
const hours = (hour: number) => zeroPad(hour, hour > 99 ? 3 : 2);
const fractionText = (fraction: Fraction | undefined) => (fraction ? `.${zeroPad(fraction.value, fraction.precision)}` : '');
const dateText = (year: number, month: number, day: number) => `${zeroPad(year, 4)}-${pad2(month)}-${pad2(day)}`;

/** Bits [start, end) of a 32-bit integer. */
const sliceBits = (input: number, start: number, end: number) => (input & (((1 << end) - 1) ^ ((1 << start) - 1))) >> start;

/** A TIME2/DATETIME2/TIMESTAMP2 fraction: ceil(fsp / 2) bytes, big-endian, read signed. */
function readFraction(cur: Cursor, fsp: number): Fraction | undefined {
  if (!fsp) return undefined;
  const size = Math.ceil(fsp / 2);
  let value = cur.buf.readIntBE(cur.pos, size);
  cur.pos += size;
  if (fsp % 2 !== 0) value /= 10;
  if (value < 0) value *= -1;
  return fractionOf(value, fsp);
}

/** The fraction digits of a MariaDB 5.3 "hires" column: logged under the classic codes, only its definition tells ('datetime(3) /* mariadb-5.3 *\/'). */
export function hiresPrecision(columnType: string): number {
  const match = /^(?:time|datetime|timestamp)\((\d)\)/.exec(columnType);
  return match ? Number.parseInt(match[1] as string, 10) : 0;
}

/** `±hh:mm:ss` offset in minutes; null for 'local', 'Z' or anything else. */
function offsetMinutes(timezone: string | undefined): number | null {
  const match = timezone ? /^([+-])(\d\d):(\d\d)$/.exec(timezone) : null;
  if (!match) return null;
  return (match[1] === '-' ? -1 : 1) * (Number.parseInt(match[2] as string, 10) * 60 + Number.parseInt(match[3] as string, 10));
}

/** A Date of the parts, read in `timezone` (month 0 gives an invalid Date, as it means no month). */
function dateOf(
  parts: [year: number, month: number, day: number, hour: number, minute: number, second: number, ms: number],
  timezone: string | undefined,
): Date {
  const [year, month, day, hour, minute, second, ms] = parts;
  const jsMonth = month > 0 ? month - 1 : Number.NaN;
  if (!timezone || timezone === 'local') return new Date(year, jsMonth, day, hour, minute, second, ms);
  const utc = Date.UTC(year, jsMonth, day, hour, minute, second, ms);
  if (timezone === 'Z') return new Date(utc);
  const offset = offsetMinutes(timezone);
  if (offset === null) return new Date(year, jsMonth, day, hour, minute, second, ms);
  return new Date(utc - offset * 60000);
}

function dateValue(opts: ValueOptions, year: number, month: number, day: number): string | Date {
  return opts.dateStrings.DATE ? dateText(year, month, day) : dateOf([year, month, day, 0, 0, 0, 0], opts.timezone);
}

function datetimeValue(opts: ValueOptions, parts: [number, number, number, number, number, number], fraction: Fraction | undefined): string | Date {
  const [year, month, day, hour, minute, second] = parts;
  if (!opts.dateStrings.DATETIME) return dateOf([...parts, fraction ? fraction.milliseconds : 0], opts.timezone);
  return `${dateText(year, month, day)} ${pad2(hour)}:${pad2(minute)}:${pad2(second)}${fractionText(fraction)}`;
}

/** A TIMESTAMP (seconds since the epoch) printed in the connection's time zone; 0 is MySQL's zero timestamp. */
function timestampValue(opts: ValueOptions, seconds: number, fraction: Fraction | undefined): string | Date {
  const date = new Date(seconds * 1000 + (fraction ? fraction.milliseconds : 0));
  if (!opts.dateStrings.TIMESTAMP) return date;
  if (seconds === 0 && (!fraction || fraction.value === 0)) return `0000-00-00 00:00:00${fractionText(fraction)}`;
  const timezone = opts.timezone;
  const offset = offsetMinutes(timezone);
  let text: string;
  if (timezone === 'Z' || offset !== null) {
    const utc = offset === null ? date : new Date(date.getTime() + offset * 60000);
    text = `${dateText(utc.getUTCFullYear(), utc.getUTCMonth() + 1, utc.getUTCDate())} ${pad2(utc.getUTCHours())}:${pad2(utc.getUTCMinutes())}:${pad2(utc.getUTCSeconds())}`;
  } else {
    text = `${dateText(date.getFullYear(), date.getMonth() + 1, date.getDate())} ${pad2(date.getHours())}:${pad2(date.getMinutes())}:${pad2(date.getSeconds())}`;
  }
  return text + fractionText(fraction);
}

/** DATE: 3 bytes little-endian, day in bits 0-4, month 5-8, year 9-23. */
export function readDate(cur: Cursor, opts: ValueOptions): string | Date {
  const raw = cur.buf.readUIntLE(cur.pos, 3);
  cur.pos += 3;
  return dateValue(opts, sliceBits(raw, 9, 24), sliceBits(raw, 5, 9), sliceBits(raw, 0, 5));
}

/** Classic TIME (±HHMMSS in 3 bytes little-endian), or MariaDB's hires TIME of `hires` fraction digits. */
export function readTime(cur: Cursor, hires: number): string {
  if (hires > 0) {
    // One big-endian unsigned count of 10^-hires seconds, offset by 3020400 s so that it sorts.
    const bytes = [3, 4, 4, 5, 5, 5, 6][hires] as number;
    const scale = 10 ** hires;
    let stored = cur.buf.readUIntBE(cur.pos, bytes) - 3020400 * scale;
    cur.pos += bytes;
    const negative = stored < 0;
    if (negative) stored = -stored;
    const fraction = fractionOf(stored % scale, hires);
    const total = Math.floor(stored / scale);
    const hour = Math.floor(total / 3600);
    return `${negative ? '-' : ''}${hours(hour)}:${pad2(Math.floor((total % 3600) / 60))}:${pad2(total % 60)}${fractionText(fraction)}`;
  }
  let raw = cur.buf.readUIntLE(cur.pos, 3);
  cur.pos += 3;
  const negative = (raw & (1 << 23)) !== 0;
  if (negative) raw ^= (1 << 24) - 1;
  const second = (raw % 100) + (negative ? 1 : 0);
  return `${negative ? '-' : ''}${hours(Math.floor(raw / 10000))}:${pad2(Math.floor((raw % 10000) / 100))}:${pad2(second)}`;
}

/** TIME2: 3 bytes big-endian (sign bit set when positive), then the fraction. */
export function readTime2(cur: Cursor, fsp: number): string {
  let raw = cur.buf.readIntBE(cur.pos, 3);
  cur.pos += 3;
  const fraction = readFraction(cur, fsp);
  const negative = (raw & (1 << 23)) === 0;
  if (negative) raw ^= (1 << 24) - 1;
  let second = sliceBits(raw, 0, 6);
  if (negative && (fraction === undefined || fraction.value === 0)) second++;
  return `${negative ? '-' : ''}${hours(sliceBits(raw, 12, 22))}:${pad2(sliceBits(raw, 6, 12))}:${pad2(second)}${fractionText(fraction)}`;
}

/** Classic DATETIME (YYYYMMDDHHMMSS as an 8-byte integer), or MariaDB's hires one of `hires` fraction digits. */
export function readDatetime(cur: Cursor, hires: number, opts: ValueOptions): string | Date {
  const buf = cur.buf;
  if (hires > 0) {
    // pack_time() scaled to the fraction digits, big-endian, up to 8 bytes (past 2^53).
    const bytes = [5, 6, 6, 7, 7, 7, 8][hires] as number;
    let packed = 0n;
    for (let i = 0; i < bytes; i++) packed = (packed << 8n) | BigInt(buf[cur.pos + i] as number);
    cur.pos += bytes;
    const scale = 10n ** BigInt(hires);
    const fraction = fractionOf(Number(packed % scale), hires);
    let units = packed / scale;
    const parts: number[] = [];
    for (const radix of [60n, 60n, 24n, 32n, 13n]) {
      parts.push(Number(units % radix));
      units /= radix;
    }
    const [second, minute, hour, day, month] = parts as [number, number, number, number, number];
    return datetimeValue(opts, [Number(units), month, day, hour, minute, second], fraction);
  }
  const raw = buf.readUInt32LE(cur.pos) + buf.readUInt32LE(cur.pos + 4) * 2 ** 32;
  cur.pos += 8;
  const date = Math.floor(raw / 1000000);
  const time = raw % 1000000;
  const parts = [Math.floor(date / 10000), Math.floor((date % 10000) / 100), date % 100] as const;
  return datetimeValue(opts, [...parts, Math.floor(time / 10000), Math.floor((time % 10000) / 100), time % 100], undefined);
}

/** DATETIME2: 5 bytes big-endian (sign, year×13+month, day, hour, minute, second), then the fraction. */
export function readDatetime2(cur: Cursor, fsp: number, opts: ValueOptions): string | Date {
  // Two overlapping 32-bit reads cover the 40 bits.
  const high = cur.buf.readInt32BE(cur.pos);
  const low = cur.buf.readInt32BE(cur.pos + 1);
  cur.pos += 5;
  const fraction = readFraction(cur, fsp);
  const yearMonth = sliceBits(high, 14, 31);
  const parts = [Math.floor(yearMonth / 13), yearMonth % 13, sliceBits(low, 17, 22)] as const;
  return datetimeValue(opts, [...parts, sliceBits(low, 12, 17), sliceBits(low, 6, 12), sliceBits(low, 0, 6)], fraction);
}

/** Classic TIMESTAMP (4 bytes little-endian), or MariaDB's hires one: 4 bytes big-endian, then `hires` digits big-endian. */
export function readTimestamp(cur: Cursor, hires: number, opts: ValueOptions): string | Date {
  if (hires > 0) {
    const seconds = cur.buf.readUInt32BE(cur.pos);
    const bytes = [0, 1, 1, 2, 2, 3, 3][hires] as number;
    const fraction = fractionOf(cur.buf.readUIntBE(cur.pos + 4, bytes), hires);
    cur.pos += 4 + bytes;
    return timestampValue(opts, seconds, fraction);
  }
  const seconds = cur.buf.readUInt32LE(cur.pos);
  cur.pos += 4;
  return timestampValue(opts, seconds, undefined);
}

/** TIMESTAMP2: 4 bytes big-endian, then the fraction. */
export function readTimestamp2(cur: Cursor, fsp: number, opts: ValueOptions): string | Date {
  const seconds = cur.buf.readInt32BE(cur.pos);
  cur.pos += 4;
  return timestampValue(opts, seconds, readFraction(cur, fsp));
}
