import { describe, expect, it } from 'vitest';
import { checkSourceSettings, isDue, sourceConfig, sourcePrefix } from '../../lib/fleet/source-config.ts';

/** A stack's environment: its own source, and operational tuning every registered source inherits. */
const stack = {
  SLUICE_SOURCE_ID: 'main',
  SLUICE_MYSQL_URL: 'mysql://stack:stackpw@stack-db:3306/',
  SLUICE_MYSQL_TLS: 'required',
  SLUICE_INCLUDE: 'shop\\..*',
  SLUICE_STARTUP: 'latest',
  SLUICE_STATE_TABLE: 'sluice-state',
  SLUICE_BUCKET: 'lake',
  SLUICE_PREFIX: 'cdc/',
  SLUICE_BATCH_MAX_EVENTS: '500',
  SLUICE_LEASE_SECONDS: '40',
  AWS_REGION: 'eu-west-1',
};

describe('a registered source’s configuration', () => {
  it('takes its source settings from the record alone and the operational ones from the stack, its output under <prefix><id>/', () => {
    const config = sourceConfig(stack, { id: 'orders', settings: { SLUICE_MYSQL_URL: 'mysql://u:p@orders-db:3306/', SLUICE_BATCH_MAX_EVENTS: '900' } });
    expect(config).toMatchObject({
      sourceId: 'orders',
      mysqlUrl: 'mysql://u:p@orders-db:3306/',
      // Not the stack's own source's: TLS, filters and startup are the source's, with the defaults.
      mysqlTls: 'off',
      include: [],
      startup: { mode: 'initial' },
      prefix: 'cdc/orders/',
      bucket: 'lake',
      stateTable: 'sluice-state',
      leaseMs: 40_000,
      batch: { maxEvents: 900 },
    });
    expect(sourceConfig({ ...stack, SLUICE_PREFIX: '' }, { id: 'a', settings: { SLUICE_MYSQL_SECRET_ID: 's' } }).prefix).toBe('a/');
    expect(sourcePrefix({ SLUICE_PREFIX: '/cdc/' }, { id: 'a', settings: {} })).toBe('cdc/a/');
    // A source's own prefix would let two share one: refused.
    expect(() => sourceConfig(stack, { id: 'a', settings: { SLUICE_MYSQL_SECRET_ID: 's', SLUICE_PREFIX: 'old/place' } })).toThrow(
      /SLUICE_PREFIX: is the stack's/,
    );
  });

  it('a quiet source’s run ends once caught up; one with a latency target reads the whole invocation; neither inherits the stack’s', () => {
    const running = { ...stack, SLUICE_STOP_WHEN_CAUGHT_UP: 'false', SLUICE_TARGET_LATENCY_MS: '1000' };
    const quiet = sourceConfig(running, { id: 'quiet', settings: { SLUICE_MYSQL_URL: 'mysql://u:p@db:3306/' } });
    expect([quiet.stopWhenCaughtUp, quiet.batch.targetLatencyMs]).toEqual([true, undefined]);
    const live = sourceConfig(stack, { id: 'live', settings: { SLUICE_MYSQL_URL: 'mysql://u:p@db:3306/', SLUICE_TARGET_LATENCY_MS: '2000' } });
    expect([live.stopWhenCaughtUp, live.batch.targetLatencyMs]).toEqual([false, 2000]);
    const own = sourceConfig(stack, { id: 'own', settings: { SLUICE_MYSQL_URL: 'mysql://u:p@db:3306/', SLUICE_STOP_WHEN_CAUGHT_UP: 'false' } });
    expect(own.stopWhenCaughtUp).toBe(false);
  });

  it('a source without a connection of its own is refused, never given the stack’s', () => {
    expect(() => sourceConfig(stack, { id: 'orders', settings: { SLUICE_INCLUDE: 'orders\\..*' } })).toThrow(
      /^source orders: invalid configuration:\n {2}SLUICE_MYSQL_URL: is required \(or SLUICE_MYSQL_SECRET_ID.*\n.*sluice sources set orders KEY=VALUE/,
    );
  });

  it('a bad value gets the configuration’s own message, naming the variable', () => {
    expect(() => sourceConfig(stack, { id: 'x', settings: { SLUICE_MYSQL_SECRET_ID: 's', SLUICE_STARTUP: 'yesterday' } })).toThrow(
      /SLUICE_STARTUP: expected initial, .* got "yesterday"/,
    );
    expect(() => sourceConfig(stack, { id: 'not ok', settings: { SLUICE_MYSQL_SECRET_ID: 's' } })).toThrow(/SLUICE_SOURCE_ID: use 1-64 letters/);
  });

  it('a Glue stack’s source names its own Glue database (or its own catalog), and then inherits none of the stack’s catalog', () => {
    const glue = { ...stack, SLUICE_GLUE_DATABASE: 'main_db', SLUICE_ICEBERG_MAINTENANCE: 'catalog' };
    const own = { SLUICE_MYSQL_SECRET_ID: 's' };
    expect(() => sourceConfig(glue, { id: 'x', settings: own })).toThrow(/SLUICE_GLUE_DATABASE: is required with SLUICE_ICEBERG_CATALOG=glue/);
    expect(sourceConfig(glue, { id: 'x', settings: { ...own, SLUICE_GLUE_DATABASE: 'x_db' } }).iceberg).toMatchObject({
      catalog: { kind: 'glue', database: 'x_db' },
      maintenance: 'catalog',
    });
    expect(sourceConfig(glue, { id: 'x', settings: { ...own, SLUICE_ICEBERG_CATALOG: 'file' } }).iceberg).toMatchObject({
      catalog: { kind: 'file' },
      maintenance: 'sluice',
    });
  });
});

describe('the settings a source may hold', () => {
  it('refuses the stack’s settings and unknown names, each with why, all at once', () => {
    let message = '';
    try {
      checkSourceSettings({ SLUICE_BUCKET: 'other', SLUICE_SOURCE_ID: 'y', SLUICE_MYSQL_URLS: 'x', AWS_REGION: 'us-east-1', SLUICE_INCLUDE: '' });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message.split('\n')).toEqual([
      'invalid source settings:',
      "  SLUICE_BUCKET: is the stack's, not a source's (every source writes to the stack's bucket (under its own prefix))",
      "  SLUICE_SOURCE_ID: is the stack's, not a source's (a registered source is the id it is registered under)",
      '  SLUICE_MYSQL_URLS: is not a setting sluice knows; see README "Configuration"',
      '  AWS_REGION: is not a setting sluice knows (a source holds SLUICE_* settings only); see README "Configuration"',
      "  SLUICE_INCLUDE: is empty: leave it out (a source's own setting is then unset, any other is the stack's)",
    ]);
    expect(() => checkSourceSettings({ SLUICE_MYSQL_URL: 'mysql://u:p@h/', SLUICE_RUN_SECONDS: '30' })).not.toThrow();
    expect(() => sourceConfig(stack, { id: 'x', settings: { SLUICE_MYSQL_SECRET_ID: 's', SLUICE_STATE_TABLE: 't' } })).toThrow(
      /SLUICE_STATE_TABLE: is the stack's/,
    );
  });
});

describe('which tick runs a source', () => {
  const minute = 60_000;
  const at = (n: number) => n * minute + 7_000; // a tick a few seconds into its minute
  const due = (everyMinutes: number, paused = false) =>
    Array.from({ length: 12 }, (_, n) => n)
      .filter((n) => isDue({ paused, everyMinutes }, at(29_000_000 + n)))
      .map((n) => (29_000_000 + n) % 60);

  it('every tick, every N minutes by the minute since the epoch, never when paused', () => {
    expect(due(1)).toHaveLength(12);
    expect(due(5)).toEqual([20, 25, 30]); // minute 29,000,000 since the epoch is :20 past an hour
    expect(due(7)).toEqual([26]); // 29,000,006 = 7 × 4,142,858
    expect(due(60)).toEqual([]);
    expect(due(1, true)).toEqual([]);
  });
});
