import { describe, expect, it } from 'vitest';
import { testSource } from '../support/source.ts';

// MariaDB alone: MySQL 8.0 has no YEAR(2) (type-differential.test.ts covers the types both have).
describe('a key the snapshot reads through an expression (real MariaDB)', () => {
  it('refuses to page a snapshot by a key it reads through an expression (YEAR(2)) instead of skipping rows', async () => {
    await using source = await testSource('typekey');
    await source.sql('CREATE TABLE y2 (y YEAR(2) PRIMARY KEY); INSERT INTO y2 VALUES (1970), (2069)');
    await expect(source.snapshot({ tables: [`${source.db}.y2`] })).rejects.toMatchObject({
      code: 'SNAPSHOT_REFUSED',
      message: expect.stringMatching(/keyed by y \(year\(2\)\), which the snapshot cannot page by/),
    });
  });
});
