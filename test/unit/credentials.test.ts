import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config/config.ts';
import { redact, scrub } from '../../lib/source/mysql/target.ts';

const PASSWORD = 'Top@Sec/ret:%41';
const base = { SLUICE_SOURCE_ID: 's', SLUICE_STATE_TABLE: 'state', SLUICE_BUCKET: 'lake' };
/** Every piece of the password a leak could show. */
const pieces = ['Top@Sec', 'Sec/ret', 'ret:%41', 'Top%40Sec', 'Sec%2Fret', '%2541'];

describe('MySQL credentials in text', () => {
  it('masks the password however the URL writes it', () => {
    const written = [
      `mysql://sluice:${encodeURIComponent(PASSWORD)}@db.example:3306/`, // percent-encoded, as it must be
      `mysql://sluice:${PASSWORD}@db.example:3306/`, // raw: @ / : % as typed
      'mysql://sluice:p@ss:w@rd@db.example/',
      'mysql://sluice:%ZZ%@db.example/',
    ];
    for (const url of written) {
      const shown = redact(url);
      expect(shown).toMatch(/^mysql:\/\/sluice:\*\*\*@db\.example(:3306)?\/$/);
      for (const piece of [...pieces, 'p@ss', 'w@rd', '%ZZ']) expect(shown).not.toContain(piece);
    }
    expect(redact('mysql://sluice@db.example/')).toBe('mysql://sluice@db.example/');
    expect(redact('mysql://db.example/')).toBe('mysql://db.example/');
  });

  it('hides the password in driver and network messages, decoded or encoded', () => {
    const uri = `mysql://sluice:${encodeURIComponent(PASSWORD)}@db.example:3306/`;
    const message = `getaddrinfo ENOTFOUND x; password ${PASSWORD} or ${encodeURIComponent(PASSWORD)}`;
    const clean = scrub(message, uri);
    expect(clean).toBe('getaddrinfo ENOTFOUND x; password *** or ***');
  });

  it('refuses a URL whose password cannot be read as written, without repeating it', () => {
    for (const url of [`mysql://sluice:${PASSWORD}@db.example:3306/`, 'mysql://sluice:a%zzb@db.example/', 'mysql://sluice:a#b@db.example/']) {
      let message = '';
      try {
        loadConfig({ ...base, SLUICE_MYSQL_URL: url });
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toMatch(/SLUICE_MYSQL_URL: the credentials hold a character a URL cannot carry as written: percent-encode/);
      for (const piece of [...pieces, 'a%zzb', 'a#b']) expect(message).not.toContain(piece);
    }
    // Encoded, the same password is accepted, and raw @ and : (which a URL parser reads right) too.
    expect(loadConfig({ ...base, SLUICE_MYSQL_URL: `mysql://sluice:${encodeURIComponent(PASSWORD)}@db.example:3306/` }).mysqlUrl).toBeDefined();
    expect(loadConfig({ ...base, SLUICE_MYSQL_URL: 'mysql://sluice:p@ss:w@db.example/' }).mysqlUrl).toBeDefined();
  });
});
