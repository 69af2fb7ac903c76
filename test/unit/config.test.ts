import { describe, expect, it } from 'vitest';
import { loadConfig, tableFilter } from '../../lib/config/config.ts';
import { comparePositions, parsePosition } from '../../lib/core/position.ts';
import { ConfigError } from '../../lib/errors.ts';
import { dataKey, manifestKey } from '../../lib/sink/s3/keys.ts';

const valid = {
  SLUICE_SOURCE_ID: 'orders-db',
  SLUICE_MYSQL_URL: 'mysql://u:p@db:3306/',
  SLUICE_STATE_TABLE: 'sluice-state',
  SLUICE_BUCKET: 'lake',
};

describe('configuration', () => {
  it('applies defaults and normalizes the prefix', () => {
    const config = loadConfig({ ...valid, SLUICE_PREFIX: '/cdc/raw/' });
    expect(config.prefix).toBe('cdc/raw/');
    expect(config.startup).toEqual({ mode: 'initial' });
    expect(config.batch.maxAgeMs).toBe(20_000);
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('names every missing variable', () => {
    const error = (() => {
      try {
        loadConfig({ SLUICE_SOURCE_ID: 'x' });
      } catch (e) {
        return e as Error;
      }
    })();
    expect(error).toBeInstanceOf(ConfigError);
    expect(error?.message).toMatch(/SLUICE_MYSQL_URL: is required/);
    expect(error?.message).toMatch(/SLUICE_STATE_TABLE: is required/);
    expect(error?.message).toMatch(/SLUICE_BUCKET: is required/);
  });

  it('names the variable and the accepted values for a bad value', () => {
    expect(() => loadConfig({ ...valid, SLUICE_STARTUP: 'yesterday' })).toThrow(
      /SLUICE_STARTUP: expected initial, initial-only, latest, earliest, position:<file>:<pos>, gtid:<set> or timestamp:<ISO-8601>/,
    );
    expect(() => loadConfig({ ...valid, SLUICE_STARTUP: 'position:binlog:12' })).toThrow(/SLUICE_STARTUP: "binlog:12" is not a binlog position/);
    expect(() => loadConfig({ ...valid, SLUICE_INCLUDE: 'shop\\.(' })).toThrow(/SLUICE_INCLUDE: "shop\\\.\(" is not a valid regular expression/);
    expect(() => loadConfig({ ...valid, SLUICE_BATCH_MAX_EVENTS: '-3' })).toThrow(/SLUICE_BATCH_MAX_EVENTS/);
    expect(() => loadConfig({ ...valid, SLUICE_SOURCE_ID: 'has space' })).toThrow(/SLUICE_SOURCE_ID: use 1-64 letters/);
  });

  it('parses a start position', () => {
    expect(loadConfig({ ...valid, SLUICE_STARTUP: 'position:binlog.000003:1234' }).startup).toEqual({
      mode: 'position',
      position: { file: 'binlog.000003', pos: 1234 },
    });
  });

  it('filters db.table by anchored regexes; exclude wins', () => {
    const accept = tableFilter(loadConfig({ ...valid, SLUICE_INCLUDE: 'shop\\..*, crm\\.users', SLUICE_EXCLUDE: 'shop\\.tmp_.*' }));
    expect(accept('shop', 'orders')).toBe(true);
    expect(accept('shop', 'tmp_1')).toBe(false);
    expect(accept('crm', 'users')).toBe(true);
    expect(accept('crm', 'users_old')).toBe(false);
    expect(accept('myshop', 'orders')).toBe(false);
  });

  it("never captures the server's own schemas, even with no include filter", () => {
    const accept = tableFilter(loadConfig(valid));
    expect(accept('shop', 'orders')).toBe(true);
    expect(accept('mysql', 'user')).toBe(false);
  });
});

describe('positions and keys', () => {
  it('orders positions by file number, then offset', () => {
    expect(comparePositions(parsePosition('binlog.000010:4'), parsePosition('binlog.000009:900'))).toBeGreaterThan(0);
    expect(comparePositions(parsePosition('binlog.000009:4'), parsePosition('binlog.000009:900'))).toBeLessThan(0);
  });

  it('derives final keys from source and commit sequence only, sorting in commit order', () => {
    expect(dataKey('cdc/', 'shop', 'orders', 'db1', 42)).toBe('cdc/tables/shop/orders/db1-000000000042.jsonl.gz');
    expect(manifestKey('', 'db1', 9) < manifestKey('', 'db1', 10)).toBe(true);
  });
});
