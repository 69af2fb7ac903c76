import { type Config, loadConfig, REST_SETTINGS, SETTING_NAMES } from '../config/config.ts';
import { ConfigError } from '../errors.ts';
import type { SourceRecord } from './registry.ts';

/*
 * A registered source's configuration is the stack's environment with the source's settings over
 * it, under three rules:
 * - What makes a source itself (where it connects, what it captures, where it starts, where its
 *   tables are published by name) comes from its settings alone, never from the stack's own
 *   source: a source that forgot its URL must fail, not capture the stack's database as itself.
 * - What belongs to the stack (its state table, bucket, snapshot function) a source cannot set.
 * - Everything else (batching, leases, run length, Iceberg tuning, the catalog's endpoint and
 *   credentials) is the stack's, unless the settings override it. The catalog settings go as a
 *   group: a source naming its own SLUICE_ICEBERG_CATALOG inherits none of them, and otherwise the
 *   stack's catalog is named explicitly, so a Glue stack's source without its own
 *   SLUICE_GLUE_DATABASE is refused instead of silently left out of Glue.
 * Its output goes under `<stack prefix><id>/`, never elsewhere (one source per prefix, inside the
 * stack's grants). Its capture
 * run ends once caught up (SLUICE_STOP_WHEN_CAUGHT_UP=true), unless its settings give it a
 * SLUICE_TARGET_LATENCY_MS, which keeps its poller reading for the whole invocation.
 */

/** Settings a source has only from its own record, never inherited from the stack's environment. */
export const SOURCE_SETTINGS: readonly string[] = Object.freeze([
  'SLUICE_MYSQL_URL',
  'SLUICE_MYSQL_SECRET_ID',
  'SLUICE_MYSQL_TLS',
  'SLUICE_MYSQL_CA',
  'SLUICE_MYSQL_SERVER_PUBLIC_KEY',
  'SLUICE_INCLUDE',
  'SLUICE_EXCLUDE',
  'SLUICE_STARTUP',
  'SLUICE_KEY_COLUMNS',
  'SLUICE_DDL_OVERRIDES',
  'SLUICE_GLUE_DATABASE',
  'SLUICE_ICEBERG_REST_NAMESPACE',
]);

/** Settings of the stack as a whole, with why a source cannot have its own. */
export const STACK_SETTINGS: Readonly<Record<string, string>> = Object.freeze({
  SLUICE_SOURCE_ID: 'a registered source is the id it is registered under',
  SLUICE_STATE_TABLE: "the stack's one state table holds every source's registry record and state",
  SLUICE_BUCKET: "every source writes to the stack's bucket (under its own prefix)",
  SLUICE_SNAPSHOT_FUNCTION: "the stack's snapshot function copies every source's tables",
  SLUICE_S3_FORCE_PATH_STYLE: 'how the stack reaches its bucket, the same for every source',
  SLUICE_PREFIX:
    "a source's output goes under <stack prefix><id>/: two sources sharing a prefix would share Iceberg tables and cleanup, and one outside the stack's prefix has no grants",
});

/** Where the Iceberg tables are published: inherited together, or not at all when the source names its own catalog. */
const CATALOG_SETTINGS: readonly string[] = [
  'SLUICE_ICEBERG_CATALOG',
  'SLUICE_ICEBERG_MAINTENANCE',
  'SLUICE_GLUE_OPTIMIZER_ROLE_ARN',
  'SLUICE_ICEBERG_REST_SCOPE',
  ...REST_SETTINGS.filter((name) => !SOURCE_SETTINGS.includes(name)),
];

/** The config of a registered source: the stack's env for operational defaults, the record's settings for the source itself. */
export function sourceConfig(env: Record<string, string | undefined>, record: Pick<SourceRecord, 'id' | 'settings'>): Config {
  checkSourceSettings(record.settings);
  const merged: Record<string, string | undefined> = { ...env };
  for (const name of SOURCE_SETTINGS) delete merged[name];
  if (record.settings.SLUICE_ICEBERG_CATALOG) for (const name of CATALOG_SETTINGS) delete merged[name];
  else if (!env.SLUICE_ICEBERG_CATALOG && env.SLUICE_GLUE_DATABASE) merged.SLUICE_ICEBERG_CATALOG = 'glue';
  merged.SLUICE_PREFIX = sourcePrefix(env, { id: record.id, settings: {} });
  // A quiet source costs about nothing: its run ends once caught up, unless it has a latency target
  // (its poller then runs the whole invocation) or says otherwise. Neither is the stack's to give.
  delete merged.SLUICE_TARGET_LATENCY_MS;
  merged.SLUICE_STOP_WHEN_CAUGHT_UP = record.settings.SLUICE_TARGET_LATENCY_MS ? 'false' : 'true';
  try {
    return loadConfig({ ...merged, ...record.settings, SLUICE_SOURCE_ID: record.id });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    throw new ConfigError(
      `source ${record.id}: ${error.message.replace(
        /\nSet these environment variables.*$/s,
        `\nA source's own settings (${SOURCE_SETTINGS.slice(0, 2).join(', ')}, filters, startup…) come from its record alone: \`sluice sources set ${record.id} KEY=VALUE\`; the rest from the stack's environment (README "Configuration").`,
      )}`,
    );
  }
}

/** Where a source's output goes: `<stack prefix><id>/` (records made before SLUICE_PREFIX was refused may still name one). */
export function sourcePrefix(env: Record<string, string | undefined>, record: Pick<SourceRecord, 'id' | 'settings'>): string {
  const trim = (prefix: string) => prefix.replace(/^\/+|\/+$/g, '');
  if (record.settings.SLUICE_PREFIX) return `${trim(record.settings.SLUICE_PREFIX)}/`;
  const stack = trim(env.SLUICE_PREFIX ?? '');
  return `${stack ? `${stack}/` : ''}${record.id}/`;
}

/** Whether a tick at `now` (ms) runs it: not paused, and the tick's minute (since the epoch) is a multiple of everyMinutes. */
export function isDue(record: Pick<SourceRecord, 'paused' | 'everyMinutes'>, now: number): boolean {
  return !record.paused && Math.floor(now / 60_000) % Math.max(1, Math.floor(record.everyMinutes)) === 0;
}

/** Refuses settings a source cannot have, naming each and why. */
export function checkSourceSettings(settings: Readonly<Record<string, string>>): void {
  const problems: string[] = [];
  for (const [name, value] of Object.entries(settings)) {
    const stack = STACK_SETTINGS[name];
    if (stack) problems.push(`  ${name}: is the stack's, not a source's (${stack})`);
    else if (!SETTING_NAMES.includes(name))
      problems.push(
        `  ${name}: is not a setting sluice knows${name.startsWith('SLUICE_') ? '' : ' (a source holds SLUICE_* settings only)'}; see README "Configuration"`,
      );
    else if (typeof value !== 'string' || value === '')
      problems.push(`  ${name}: is empty: leave it out (a source's own setting is then unset, any other is the stack's)`);
  }
  if (problems.length) throw new ConfigError(`invalid source settings:\n${problems.join('\n')}`);
}
