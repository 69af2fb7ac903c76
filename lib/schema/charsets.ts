/**
 * Character sets: each one's default collation and bytes per character, as the server in use has
 * them (`CharsetTable.fromServer`, read at run start and kept in the schema catalog), falling back
 * to the table below where the server said nothing. MySQL 8 and MariaDB differ: MySQL's `utf8mb4`
 * defaults to `utf8mb4_0900_ai_ci`, MariaDB 11.2+ picks defaults by `character_set_collations`.
 *
 * The fallback: MariaDB 10.11's `SELECT CHARACTER_SET_NAME, DEFAULT_COLLATE_NAME, MAXLEN FROM
 * information_schema.CHARACTER_SETS`, and MySQL 8's gb18030 (the one charset MariaDB lacks).
 * Every collation name starts with its charset's name and `_` (checked over all 506 collations of
 * MariaDB 10.11, and true of MySQL 8.4's), except `binary`.
 */
const CHARSETS: Record<string, readonly [defaultCollation: string, maxBytes: number]> = {
  armscii8: ['armscii8_general_ci', 1],
  ascii: ['ascii_general_ci', 1],
  big5: ['big5_chinese_ci', 2],
  binary: ['binary', 1],
  cp1250: ['cp1250_general_ci', 1],
  cp1251: ['cp1251_general_ci', 1],
  cp1256: ['cp1256_general_ci', 1],
  cp1257: ['cp1257_general_ci', 1],
  cp850: ['cp850_general_ci', 1],
  cp852: ['cp852_general_ci', 1],
  cp866: ['cp866_general_ci', 1],
  cp932: ['cp932_japanese_ci', 2],
  dec8: ['dec8_swedish_ci', 1],
  eucjpms: ['eucjpms_japanese_ci', 3],
  euckr: ['euckr_korean_ci', 2],
  gb2312: ['gb2312_chinese_ci', 2],
  gbk: ['gbk_chinese_ci', 2],
  geostd8: ['geostd8_general_ci', 1],
  greek: ['greek_general_ci', 1],
  hebrew: ['hebrew_general_ci', 1],
  hp8: ['hp8_english_ci', 1],
  keybcs2: ['keybcs2_general_ci', 1],
  koi8r: ['koi8r_general_ci', 1],
  koi8u: ['koi8u_general_ci', 1],
  latin1: ['latin1_swedish_ci', 1],
  latin2: ['latin2_general_ci', 1],
  latin5: ['latin5_turkish_ci', 1],
  latin7: ['latin7_general_ci', 1],
  macce: ['macce_general_ci', 1],
  macroman: ['macroman_general_ci', 1],
  sjis: ['sjis_japanese_ci', 2],
  swe7: ['swe7_swedish_ci', 1],
  tis620: ['tis620_thai_ci', 1],
  ucs2: ['ucs2_general_ci', 2],
  ujis: ['ujis_japanese_ci', 3],
  utf16: ['utf16_general_ci', 4],
  utf16le: ['utf16le_general_ci', 4],
  utf32: ['utf32_general_ci', 4],
  utf8mb3: ['utf8mb3_general_ci', 3],
  utf8mb4: ['utf8mb4_general_ci', 4],
  gb18030: ['gb18030_chinese_ci', 4],
};

/** `utf8` means utf8mb3 on MariaDB 10.6+ (old_mode UTF8_IS_UTF8MB3, the default) and on MySQL 8. */
function canonical(name: string): string {
  const lower = name.toLowerCase();
  if (lower === 'utf8') return 'utf8mb3';
  if (lower.startsWith('utf8_')) return `utf8mb3_${lower.slice(5)}`;
  return lower;
}

/** One charset as the server describes it. */
export interface CharsetRow {
  readonly charset: string;
  readonly defaultCollation: string;
  readonly maxlen: number;
}

/** The character sets of one server (or the fallback): every lookup the schema model makes. */
export class CharsetTable {
  private readonly byName: ReadonlyMap<string, readonly [string, number]>;

  private constructor(readonly rows: readonly CharsetRow[]) {
    const map = new Map<string, readonly [string, number]>(Object.entries(CHARSETS));
    for (const row of rows) map.set(canonical(row.charset), [canonical(row.defaultCollation), row.maxlen]);
    this.byName = map;
  }

  /** The fallback alone (MariaDB 10.11, plus gb18030). */
  static readonly fallback = new CharsetTable([]);

  /**
   * The server's table: information_schema.CHARACTER_SETS rows, each charset's default collation
   * replaced by MariaDB 11.2+'s `character_set_collations` where it names one (`utf8mb4=uca1400_ai_ci,…`,
   * short names meaning `<charset>_<name>`). Charsets the server did not list keep the fallback.
   */
  static fromServer(rows: readonly CharsetRow[], characterSetCollations = ''): CharsetTable {
    const chosen = new Map<string, string>();
    for (const pair of characterSetCollations.split(',')) {
      const [charset, collation] = pair.split('=').map((x) => x.trim().toLowerCase());
      if (!charset || !collation) continue;
      chosen.set(canonical(charset), collation.startsWith(`${canonical(charset)}_`) ? collation : `${canonical(charset)}_${collation}`);
    }
    return new CharsetTable(
      rows.map((row) => {
        const collation = chosen.get(canonical(row.charset));
        return collation ? { ...row, defaultCollation: collation } : row;
      }),
    );
  }

  /** The table a catalog recorded (undefined: none recorded, the fallback). */
  static of(rows: readonly CharsetRow[] | undefined): CharsetTable {
    return rows?.length ? new CharsetTable(rows) : CharsetTable.fallback;
  }

  /** The charset's canonical name, or undefined when the server has no such charset. */
  charsetName(name: string): string | undefined {
    const c = canonical(name);
    return this.byName.has(c) ? c : undefined;
  }

  defaultCollation(charset: string): string | undefined {
    return this.byName.get(canonical(charset))?.[0];
  }

  maxBytesPerChar(charset: string): number | undefined {
    return this.byName.get(canonical(charset))?.[1];
  }

  /** The collation's canonical name and its charset (the longest charset name it starts with). */
  collationInfo(name: string): { collation: string; charset: string } | undefined {
    const collation = canonical(name);
    if (collation === 'binary') return { collation, charset: 'binary' };
    let best: string | undefined;
    for (const charset of this.byName.keys()) if (collation.startsWith(`${charset}_`) && (!best || charset.length > best.length)) best = charset;
    return best ? { collation, charset: best } : undefined;
  }

  /** Whether two tables give every charset the same default collation and size. */
  equals(other: CharsetTable): boolean {
    if (other.byName.size !== this.byName.size) return false;
    for (const [name, [collation, max]] of this.byName) {
      const theirs = other.byName.get(name);
      if (theirs?.[0] !== collation || theirs[1] !== max) return false;
    }
    return true;
  }
}

/** The charset's canonical name in the fallback table. */
export function charsetName(name: string): string | undefined {
  return CharsetTable.fallback.charsetName(name);
}

/** The charset's default collation in the fallback table. */
export function defaultCollation(charset: string): string | undefined {
  return CharsetTable.fallback.defaultCollation(charset);
}

/** Bytes per character of the charset (the same on every server that has it). */
export function maxBytesPerChar(charset: string): number | undefined {
  return CharsetTable.fallback.maxBytesPerChar(charset);
}

/** The collation's canonical name and its charset, by the fallback table's charset names. */
export function collationInfo(name: string): { collation: string; charset: string } | undefined {
  return CharsetTable.fallback.collationInfo(name);
}
