import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { localServer, stackHome } from '../../lib/local/stack.ts';

describe('stackHome', () => {
  it('an empty SLUICE_HOME means the default home, not the current folder', () => {
    expect(stackHome({ SLUICE_HOME: '' })).toBe(join(process.cwd(), '.sluice'));
    expect(stackHome({ SLUICE_HOME: '/srv/sluice' })).toBe('/srv/sluice');
  });

  it('gives the MySQL stack a home of its own, so it does not fight the MariaDB one', () => {
    expect(stackHome({}, 'mysql')).toBe(join(process.cwd(), '.sluice', 'mysql'));
    expect(stackHome({ SLUICE_LOCAL_SERVER: 'mysql' })).toBe(join(process.cwd(), '.sluice', 'mysql'));
    expect(stackHome({ SLUICE_HOME: '/srv/sluice' }, 'mysql')).toBe('/srv/sluice');
  });
});

describe('localServer', () => {
  it('reads SLUICE_LOCAL_SERVER, MariaDB by default, and names the accepted values', () => {
    expect(localServer({})).toBe('mariadb');
    expect(localServer({ SLUICE_LOCAL_SERVER: 'mysql' })).toBe('mysql');
    expect(() => localServer({ SLUICE_LOCAL_SERVER: 'postgres' })).toThrow('SLUICE_LOCAL_SERVER: expected mariadb or mysql, got "postgres"');
  });
});
