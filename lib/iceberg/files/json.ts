/*
 * Iceberg metadata JSON with its 64-bit integers kept exact. sluice's snapshot ids fit in 53 bits
 * (`stableId`), but other writers' do not: Java draws them from all 63 bits, and JSON.parse would
 * round them — a parent id rounded is a snapshot that does not exist, and a requirement on it
 * fails for ever. Integers beyond Number.MAX_SAFE_INTEGER are read as bigint and written back as
 * the same digits; every other value is JSON.parse's and JSON.stringify's.
 */

const MARK = '__sluice_int__:';

/** JSON.parse, integers beyond 2^53 as bigint. */
export function parseJson<T>(text: string): T {
  let out = '';
  let from = 0;
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    if (c === '"') {
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === '\\') i++;
      i++;
      continue;
    }
    if (c === '-' || (c >= '0' && c <= '9')) {
      let j = i + 1;
      while (j < text.length && /[0-9.eE+-]/.test(text[j] as string)) j++;
      const token = text.slice(i, j);
      if (/^-?\d{16,}$/.test(token) && !Number.isSafeInteger(Number(token))) {
        out += `${text.slice(from, i)}"${MARK}${token}"`;
        from = j;
      }
      i = j;
      continue;
    }
    i++;
  }
  out += text.slice(from);
  return JSON.parse(out, (_key, value) => (typeof value === 'string' && value.startsWith(MARK) ? BigInt(value.slice(MARK.length)) : value)) as T;
}

/** JSON.stringify, bigints as their digits. */
export function stringifyJson(value: unknown, space?: number): string {
  const text = JSON.stringify(value, (_key, v) => (typeof v === 'bigint' ? `${MARK}${v}` : v), space);
  return text.replace(new RegExp(`"${MARK}(-?\\d+)"`, 'g'), '$1');
}
