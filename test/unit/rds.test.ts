import { describe, expect, it } from 'vitest';
import { rdsBinlogRetention, retentionWarning } from '../../lib/source/mysql/rds.ts';
import type { SqlConnection } from '../../lib/source/mysql/server.ts';

/*
 * `binlog retention hours` over fake connections answering as the RDS and Aurora user guides show
 * ("Setting and showing binary log configuration": CALL mysql.rds_show_configuration returns rows
 * name / value / description, value NULL by default) and as a server without the procedure answers
 * (ER_SP_DOES_NOT_EXIST, 1305: MariaDB, MySQL outside RDS). mysql2 returns a CALL's result sets
 * followed by the statement's status.
 */
function server(
  answer: { rows: { name: string; value: string | null; description: string }[] } | { errno: number; message: string },
  basedir = '/rdsdbbin/mysql-8.0.39.R2/',
): SqlConnection {
  return {
    async query(sql: string) {
      if (sql === 'SELECT @@basedir AS basedir') return [[{ basedir }], []];
      expect(sql).toBe('CALL mysql.rds_show_configuration');
      if ('errno' in answer) throw Object.assign(new Error(answer.message), { errno: answer.errno });
      return [[answer.rows, { fieldCount: 0, affectedRows: 0 }], undefined];
    },
    async end() {},
  };
}
const DESCRIPTION = 'binlog retention hours specifies the duration in hours before binary logs are automatically deleted.';
const rds = (value: string | null) =>
  server({
    rows: [
      { name: 'binlog retention hours', value, description: DESCRIPTION },
      { name: 'source delay', value: '0', description: 'source delay specifies how many seconds the replica should delay' },
    ],
  });

describe('RDS / Aurora binlog retention hours', () => {
  it('a server without the procedure is not RDS, and gets no warning (MariaDB, self-managed MySQL)', async () => {
    const retention = await rdsBinlogRetention(server({ errno: 1305, message: 'PROCEDURE mysql.rds_show_configuration does not exist' }));
    expect(retention).toEqual({ kind: 'not-rds' });
    expect(retentionWarning(retention)).toBeUndefined();
  });

  it('NULL (the default) warns that binlogs are purged as soon as possible and says how to set it', async () => {
    const retention = await rdsBinlogRetention(rds(null));
    expect(retention).toEqual({ kind: 'hours', hours: null });
    expect(retentionWarning(retention)).toMatch(
      /^RDS\/Aurora binlog retention hours is NULL: binlogs are purged as soon as possible .*CALL mysql\.rds_set_configuration\('binlog retention hours', 168\);/,
    );
  });

  it('below 24 h warns with the value; 24 h and more is quiet', async () => {
    const short = await rdsBinlogRetention(rds('12'));
    expect(short).toEqual({ kind: 'hours', hours: 12 });
    expect(retentionWarning(short)).toMatch(/binlog retention hours is 12, below 24 h.*CALL mysql\.rds_set_configuration\('binlog retention hours', 168\);/);
    expect(retentionWarning(await rdsBinlogRetention(rds('24')))).toBeUndefined();
    expect(retentionWarning(await rdsBinlogRetention(rds('2160')))).toBeUndefined();
  });

  it('a procedure the user may not run: on RDS (installed under /rdsdbbin/) the warning says to check it as the master user; elsewhere the same answer means nothing', async () => {
    const denied = { errno: 1370, message: "execute command denied to user 'sluice'@'%' for routine 'mysql.rds_show_configuration'" };
    // MariaDB and MySQL answer 1370 to such a user whether the procedure exists or not.
    expect(await rdsBinlogRetention(server(denied, '/usr/'))).toEqual({ kind: 'not-rds' });
    const retention = await rdsBinlogRetention(server(denied));
    expect(retention).toMatchObject({ kind: 'unreadable' });
    expect(retentionWarning(retention)).toMatch(/cannot read RDS\/Aurora binlog retention hours \(execute command denied.*as the master user.*at least 24 h/);
    expect(await rdsBinlogRetention(server({ rows: [] }))).toMatchObject({
      kind: 'unreadable',
      reason: expect.stringMatching(/lists no "binlog retention hours"/),
    });
  });
});
