import { type Config, tableFilter } from '../../config/config.ts';
import { listTables } from './schema.ts';
import type { SqlConnection } from './server.ts';

/** A pattern as the user wrote it (config.ts compiles `part` into `^(?:part)$`). */
const written = (pattern: RegExp) => pattern.source.replace(/^\^\(\?:/, '').replace(/\)\$$/, '');

/**
 * Warnings for SLUICE_INCLUDE / SLUICE_EXCLUDE patterns that match no table on the server: a typo in
 * an include captures nothing, one in an exclude captures what was meant to stay out; neither fails.
 */
export async function filterWarnings(conn: SqlConnection, config: Pick<Config, 'include' | 'exclude'>): Promise<string[]> {
  if (!config.include.length && !config.exclude.length) return [];
  const tables = await listTables(conn, () => true);
  const names = tables.map((t) => `${t.db}.${t.table}`);
  const warnings: string[] = [];
  for (const [variable, patterns] of [
    ['SLUICE_INCLUDE', config.include],
    ['SLUICE_EXCLUDE', config.exclude],
  ] as const) {
    for (const pattern of patterns) {
      if (!names.some((name) => pattern.test(name))) warnings.push(`${variable} pattern "${written(pattern)}" matches no table on the server`);
    }
  }
  const captured = tableFilter(config);
  if (!warnings.length && !tables.some((t) => captured(t.db, t.table))) warnings.push('SLUICE_INCLUDE and SLUICE_EXCLUDE together leave no table to capture');
  return warnings;
}
