import { AssertionError, ErrorCode, SluiceError } from '../errors.ts';
import type { TableRef } from './table-ref.ts';

/*
 * Names in keys. A database or table name becomes ONE key segment by an injective encoding: the
 * name's UTF-8 bytes, `[A-Za-z0-9_]` kept, every other byte `%XX` (upper-case hex, `%` itself
 * included). So a segment never holds `/` (a name cannot reach into another folder), is never `.`
 * or `..` (no dot survives), and names differing in any byte get different segments: `a/b`+`c`
 * and `a`+`b/c` land in two folders. Ordinary names are unchanged. It is the escaping Hive uses for
 * partition values, so `x=y` (`x%3Dy`) is never read as a partition column.
 *
 * A leading `_` is encoded too (`_tmp` → `%5Ftmp`): Hive, Spark and Trino/Athena skip every path
 * component that starts with `_` or `.` as "hidden" (their own `_SUCCESS`, `_temporary` files), so a
 * table named `_tmp` would silently read as empty. No segment can then start with `_` or `.`, and
 * sluice's own folders that must never collide with a name can use a first character no segment
 * has (`_staging`, or `@` which is always `%40` inside a segment).
 */

const KEPT = /[A-Za-z0-9_]/;

/** A database or table name as one key segment (see above). MySQL names are never empty. */
export function segment(name: string): string {
  if (name === '') throw new AssertionError('an empty database or table name has no key segment');
  let out = '';
  for (const byte of Buffer.from(name, 'utf8')) {
    const char = String.fromCharCode(byte);
    out += KEPT.test(char) && !(out === '' && char === '_') ? char : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** The name a segment encodes; refuses any text `segment` would not have produced. */
export function unsegment(text: string): string {
  const invalid = (why: string): never => {
    throw new SluiceError(ErrorCode.TABLE_NAME, `key segment "${text}" is not an encoded name: ${why}`);
  };
  if (!/^(?:[A-Za-z0-9_]|%[0-9A-F]{2})+$/.test(text)) invalid('only letters, digits, "_" and %XX escapes may appear');
  const bytes: number[] = [];
  for (let i = 0; i < text.length; ) {
    if (text[i] === '%') {
      bytes.push(Number.parseInt(text.slice(i + 1, i + 3), 16));
      i += 3;
    } else bytes.push(text.charCodeAt(i++));
  }
  let name = '';
  try {
    name = new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(bytes));
  } catch {
    invalid('the bytes are not UTF-8');
  }
  // One encoding per name: a kept character written as %XX (or a leading "_" left bare) is not one.
  if (segment(name) !== text) invalid(`the name's own encoding is "${segment(name)}"`);
  return name;
}

/** A table's folder under `tables/`: `<db-seg>/<table-seg>`. Also its identity where one string must name it (snapshot chunks). */
export function tablePath(ref: TableRef): string {
  return `${segment(ref.db)}/${segment(ref.table)}`;
}
