import { describe, expect, it } from 'vitest';
import { parseServerFlavor } from '../../lib/source/mysql/dialect/dialect.ts';

describe('parseServerFlavor', () => {
  it('reads MySQL, Aurora and MariaDB versions as /*!NNNNN*/ numbers', () => {
    expect(parseServerFlavor('8.0.46', 'MySQL Community Server - GPL')).toEqual({ kind: 'mysql', version: 80046, text: '8.0.46' });
    expect(parseServerFlavor('8.4.3', 'Source distribution').version).toBe(80403);
    expect(parseServerFlavor('9.6.0', '').version).toBe(90600);
    expect(parseServerFlavor('10.11.19-MariaDB-0+deb12u1', 'Debian 12')).toMatchObject({ kind: 'mariadb', version: 101119 });
    expect(parseServerFlavor('5.5.5-10.11.19-MariaDB', '')).toMatchObject({ kind: 'mariadb', version: 101119 });
    expect(parseServerFlavor('11.4.2', 'mariadb.org binary distribution')).toMatchObject({ kind: 'mariadb', version: 110402 });
  });
});
