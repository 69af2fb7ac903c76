import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { databaseFilter, loadConfig, tableFilter } from '../../lib/config/config.ts';
import { comparePositions, LOG_POS_MODULUS, parsePosition, unwrapLogPos } from '../../lib/core/position.ts';
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

  it('takes the Iceberg delete mode: position by default, equality on request, nothing else', () => {
    expect(loadConfig(valid).iceberg.deletes).toBe('position');
    expect(loadConfig({ ...valid, SLUICE_ICEBERG_DELETES: 'equality' }).iceberg.deletes).toBe('equality');
    expect(() => loadConfig({ ...valid, SLUICE_ICEBERG_DELETES: 'vectors' })).toThrow(/SLUICE_ICEBERG_DELETES: .*"position"\|"equality"/);
  });

  it('follows a change of binlog history by default, or stops and asks; nothing else', () => {
    expect(loadConfig(valid).onHistoryChange).toBe('follow');
    expect(loadConfig({ ...valid, SLUICE_ON_HISTORY_CHANGE: 'stop' }).onHistoryChange).toBe('stop');
    expect(() => loadConfig({ ...valid, SLUICE_ON_HISTORY_CHANGE: 'ask' })).toThrow(/SLUICE_ON_HISTORY_CHANGE: .*"follow"\|"stop"/);
  });

  it('re-copies the tables of DDL it cannot classify by default; stops on request, nothing else (#27)', () => {
    expect(loadConfig(valid).ddlUnknown).toBe('resnapshot');
    expect(loadConfig({ ...valid, SLUICE_DDL_UNKNOWN: 'stop' }).ddlUnknown).toBe('stop');
    expect(() => loadConfig({ ...valid, SLUICE_DDL_UNKNOWN: 'ignore' })).toThrow(/SLUICE_DDL_UNKNOWN/);
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

  it('rules a database out only when no table in it can pass the include patterns', () => {
    // The last three close the ^(?:…)$ around a pattern early: 'shop)?(?:crm\\..*' takes crm.orders.
    const patterns = [
      'shop\\..*',
      'crm\\.users',
      'sa.*',
      'a_b?c\\.t',
      'x|y\\..*',
      '[a-z]+\\.t',
      'dot\\.ted\\..*',
      'lit\\$\\.t',
      'q{2}\\.t',
      'shop)?(?:crm\\..*',
      'shop)*(?:crm\\..*',
      'shop\\\\)?(?:crm\\..*',
    ];
    const dbs = ['shop', 'shopx', 'crm', 'sa', 'sales', 'a_c', 'a_bc', 'a_bbc', 'x', 'y', 'zz', 'dot', 'dot.ted', 'lit$', 'lit', 'qq', 'q', 'mysql'];
    const tables = ['t', 'users', 'orders', 'ted.t', 'x'];
    let ruledOut = 0;
    for (const include of patterns) {
      const config = loadConfig({ ...valid, SLUICE_INCLUDE: include });
      const [accept, possible] = [tableFilter(config), databaseFilter(config)];
      // Sound: a database ruled out holds no table the filter takes.
      for (const db of dbs.filter((d) => !possible(d))) {
        ruledOut++;
        for (const table of tables) expect(accept(db, table), `${include}: ${db}.${table}`).toBe(false);
      }
    }
    expect(ruledOut).toBeGreaterThan(50);
    const possible = databaseFilter(loadConfig({ ...valid, SLUICE_INCLUDE: 'shop\\..*, crm\\.users' }));
    expect(['shop', 'crm', 'shopx', 'cr', 'elsewhere', 'mysql'].map(possible)).toEqual([true, true, false, false, false, false]);
    expect(databaseFilter(loadConfig(valid))('elsewhere')).toBe(true);
    expect(databaseFilter(loadConfig({ ...valid, SLUICE_INCLUDE: 'sa.*' }))('sales')).toBe(true);
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

  it('reads and orders offsets past 4 GiB exactly', () => {
    const past = parsePosition('binlog.000009:5000000123');
    expect(past.pos).toBe(5_000_000_123);
    expect(comparePositions(past, parsePosition('binlog.000009:4294967295'))).toBeGreaterThan(0);
  });

  it("unwraps an event header's 32-bit log_pos past the end of the event before it", () => {
    const G = LOG_POS_MODULUS;
    // Below 4 GiB the header is the offset.
    expect(unwrapLogPos(1_390, 1_359)).toBe(1_390);
    // The event that crosses 4 GiB: its header wrapped to a small number.
    expect(unwrapLogPos(37, G - 44)).toBe(G + 37);
    // One ending exactly at 4 GiB writes 0, and one at 8 GiB too.
    expect(unwrapLogPos(0, G - 31)).toBe(G);
    expect(unwrapLogPos(0, 2 * G - 31)).toBe(2 * G);
    // Past 4 GiB every later header is relative to the last 4 GiB multiple.
    expect(unwrapLogPos(2_309, G + 2_262)).toBe(G + 2_309);
    expect(unwrapLogPos(150, 2 * G + 100)).toBe(2 * G + 150);
    // A heartbeat at the position already reached stays there.
    expect(unwrapLogPos((G + 500) % G, G + 500)).toBe(G + 500);
  });

  it('derives final keys from source and commit sequence only, sorting in commit order', () => {
    expect(dataKey('cdc/', 'shop', 'orders', 'db1', 42)).toBe('cdc/tables/shop/orders/db1-000000000042.jsonl.gz');
    expect(manifestKey('', 'db1', 9) < manifestKey('', 'db1', 10)).toBe(true);
  });
});

describe('SLUICE_MYSQL_SERVER_PUBLIC_KEY (the pinned key for SHA-2 authentication without TLS)', () => {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const spki = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const dir = mkdtempSync(join(tmpdir(), 'sluice-key-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const message = (env: Record<string, string>) => {
    try {
      loadConfig({ ...valid, ...env });
    } catch (error) {
      return (error as Error).message;
    }
    return 'accepted';
  };

  it('takes PEM text (SPKI or PKCS#1) or a file, and keeps the key as SPKI PEM', () => {
    const file = join(dir, 'public_key.pem');
    writeFileSync(file, spki);
    expect(loadConfig({ ...valid, SLUICE_MYSQL_SERVER_PUBLIC_KEY: spki }).mysqlServerPublicKey).toBe(spki);
    expect(loadConfig({ ...valid, SLUICE_MYSQL_SERVER_PUBLIC_KEY: file }).mysqlServerPublicKey).toBe(spki);
    const pkcs1 = publicKey.export({ type: 'pkcs1', format: 'pem' }).toString();
    expect(loadConfig({ ...valid, SLUICE_MYSQL_SERVER_PUBLIC_KEY: pkcs1 }).mysqlServerPublicKey).toBe(spki);
    expect(loadConfig(valid).mysqlServerPublicKey).toBeUndefined();
  });

  it('refuses a missing file, a private key, a non-RSA key and garbage, naming the variable and what it takes', () => {
    expect(message({ SLUICE_MYSQL_SERVER_PUBLIC_KEY: join(dir, 'missing.pem') })).toMatch(
      /SLUICE_MYSQL_SERVER_PUBLIC_KEY: cannot read .*missing\.pem \(ENOENT\); expected the server's RSA public key as PEM text/,
    );
    const secret = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    expect(message({ SLUICE_MYSQL_SERVER_PUBLIC_KEY: secret })).toMatch(/SLUICE_MYSQL_SERVER_PUBLIC_KEY: the value holds no PEM public key/);
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).publicKey.export({ type: 'spki', format: 'pem' }).toString();
    expect(message({ SLUICE_MYSQL_SERVER_PUBLIC_KEY: ec })).toMatch(/SLUICE_MYSQL_SERVER_PUBLIC_KEY: the value is not an RSA public key \(a ec key, not RSA\)/);
    expect(message({ SLUICE_MYSQL_SERVER_PUBLIC_KEY: '-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----' })).toMatch(
      /SLUICE_MYSQL_SERVER_PUBLIC_KEY: the value is not an RSA public key/,
    );
  });

  it('is for SLUICE_MYSQL_TLS=off only: over TLS the server never takes an RSA-encrypted password', () => {
    for (const tls of ['required', 'verify'])
      expect(message({ SLUICE_MYSQL_SERVER_PUBLIC_KEY: spki, SLUICE_MYSQL_TLS: tls, SLUICE_MYSQL_CA: 'rds' })).toMatch(
        /SLUICE_MYSQL_SERVER_PUBLIC_KEY: is used only with SLUICE_MYSQL_TLS=off .*use SLUICE_MYSQL_TLS=verify/,
      );
    expect(message({ SLUICE_MYSQL_SERVER_PUBLIC_KEY: spki, SLUICE_MYSQL_TLS: 'off' })).toBe('accepted');
  });

  it("takes Glue's optimizer role only with the Glue catalog and the catalog's maintenance, naming the fix otherwise", () => {
    const role = 'arn:aws:iam::123456789012:role/optimizers';
    const glue = { ...valid, SLUICE_GLUE_DATABASE: 'sluice_prod', SLUICE_GLUE_OPTIMIZER_ROLE_ARN: role };
    expect(() => loadConfig(glue)).toThrow(/SLUICE_GLUE_OPTIMIZER_ROLE_ARN: .*set SLUICE_ICEBERG_MAINTENANCE=catalog, or unset this/);
    expect(() => loadConfig({ ...valid, SLUICE_GLUE_OPTIMIZER_ROLE_ARN: role })).toThrow(
      /SLUICE_GLUE_OPTIMIZER_ROLE_ARN: Glue table optimizers need the Glue catalog/,
    );
    expect(() => loadConfig({ ...glue, SLUICE_ICEBERG_MAINTENANCE: 'catalog', SLUICE_GLUE_OPTIMIZER_ROLE_ARN: 'optimizers' })).toThrow(
      /SLUICE_GLUE_OPTIMIZER_ROLE_ARN: expected an IAM role ARN/,
    );
    expect(loadConfig({ ...glue, SLUICE_ICEBERG_MAINTENANCE: 'catalog' }).iceberg.catalog).toEqual({
      kind: 'glue',
      database: 'sluice_prod',
      optimizerRoleArn: role,
    });
    expect(loadConfig({ ...valid, SLUICE_GLUE_DATABASE: 'sluice_prod', SLUICE_GLUE_OPTIMIZER_ROLE_ARN: '' }).iceberg.catalog).toEqual({
      kind: 'glue',
      database: 'sluice_prod',
      optimizerRoleArn: undefined,
    });
  });
});
