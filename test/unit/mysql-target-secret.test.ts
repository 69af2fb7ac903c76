import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config/config.ts';
import { mysqlTarget, SECRET_REFRESH_MS } from '../../lib/source/mysql/target.ts';

const base = { SLUICE_SOURCE_ID: 's', SLUICE_STATE_TABLE: 'state', SLUICE_BUCKET: 'bucket' };

describe("a source's MySQL secret (lib/source/mysql/target.ts)", () => {
  it('is read once, then again once it is SECRET_REFRESH_MS old: a rotated password reaches a warm container', async () => {
    let password = 'first';
    let reads = 0;
    const secrets = () => ({
      send: async () => {
        reads++;
        return { SecretString: JSON.stringify({ username: 'sluice', password, host: 'db', port: 3306 }) };
      },
    });
    const config = loadConfig({ ...base, SLUICE_MYSQL_SECRET_ID: `rotating-${randomBytes(4).toString('hex')}` });
    let now = 1_000_000;
    const clock = () => now;
    const read = () => mysqlTarget(config, secrets as never, clock);
    expect((await read()).uri).toBe('mysql://sluice:first@db:3306/');
    password = 'second'; // rotated
    now += SECRET_REFRESH_MS - 1;
    expect((await read()).uri).toBe('mysql://sluice:first@db:3306/');
    expect(reads).toBe(1);
    now += 1;
    expect((await read()).uri).toBe('mysql://sluice:second@db:3306/');
    expect(reads).toBe(2);
  });

  it('a URL is never read again', async () => {
    const config = loadConfig({ ...base, SLUICE_MYSQL_URL: `mysql://u:p@db-${randomBytes(4).toString('hex')}:3306/` });
    let now = 0;
    const first = mysqlTarget(config, undefined, () => now);
    now += 10 * SECRET_REFRESH_MS;
    expect(mysqlTarget(config, undefined, () => now)).toBe(first);
  });
});
