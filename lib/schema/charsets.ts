/**
 * MariaDB 10.11 character sets: default collation and bytes per character, from
 * `SELECT CHARACTER_SET_NAME, DEFAULT_COLLATE_NAME, MAXLEN FROM information_schema.CHARACTER_SETS`.
 * Every collation name starts with its charset's name and `_` (checked over all 506 collations),
 * except `binary`.
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
};

/** `utf8` means utf8mb3 on MariaDB 10.6+ (old_mode UTF8_IS_UTF8MB3, the default). */
function canonical(name: string): string {
  const lower = name.toLowerCase();
  if (lower === 'utf8') return 'utf8mb3';
  if (lower.startsWith('utf8_')) return `utf8mb3_${lower.slice(5)}`;
  return lower;
}

/** The charset's canonical name, or undefined when MariaDB 10.11 has no such charset. */
export function charsetName(name: string): string | undefined {
  const c = canonical(name);
  return c in CHARSETS ? c : undefined;
}

export function defaultCollation(charset: string): string | undefined {
  return CHARSETS[canonical(charset)]?.[0];
}

export function maxBytesPerChar(charset: string): number | undefined {
  return CHARSETS[canonical(charset)]?.[1];
}

/** The collation's canonical name and its charset (the longest charset name it starts with). */
export function collationInfo(name: string): { collation: string; charset: string } | undefined {
  const collation = canonical(name);
  if (collation === 'binary') return { collation, charset: 'binary' };
  let best: string | undefined;
  for (const charset of Object.keys(CHARSETS)) if (collation.startsWith(`${charset}_`) && (!best || charset.length > best.length)) best = charset;
  return best ? { collation, charset: best } : undefined;
}
