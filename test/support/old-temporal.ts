import mysql from 'mysql2/promise';

/**
 * MariaDB 5.3's temporal columns (classic type codes in the binlog, fraction digits only in the
 * table definition), which tests copy with `CREATE TABLE … LIKE` (it keeps the formats).
 *
 * Only a global switch, mysql56_temporal_format, makes them, and while it is off every CREATE TABLE
 * on the server makes them: a test file that switched it beside another gave that file's tables
 * these columns (ddl-schema's scan then hung, #18). So the global setup makes this table once,
 * before any test file runs.
 */
export const OLD_TEMPORAL_TEMPLATE = '`sluice_test_fixtures`.`old_temporal`';

/** The template's columns after `id INT PRIMARY KEY, v INT`, by name. */
export const OLD_TEMPORAL_COLUMNS = {
  t0: 'TIME',
  t3: 'TIME(3)',
  t6: 'TIME(6)',
  dt0: 'DATETIME',
  dt3: 'DATETIME(3)',
  dt6: 'DATETIME(6)',
  ts0: 'TIMESTAMP NULL',
  ts6: 'TIMESTAMP(6) NULL',
} as const;

/** Makes OLD_TEMPORAL_TEMPLATE; call only while no test runs on the server. */
export async function createOldTemporalTemplate(adminUrl: string): Promise<void> {
  const conn = await mysql.createConnection({ uri: adminUrl });
  try {
    const columns = Object.entries(OLD_TEMPORAL_COLUMNS).map(([name, type]) => `\`${name}\` ${type}`);
    await conn.query('CREATE DATABASE IF NOT EXISTS `sluice_test_fixtures`');
    await conn.query('SET GLOBAL mysql56_temporal_format = OFF');
    try {
      await conn.query(`CREATE OR REPLACE TABLE ${OLD_TEMPORAL_TEMPLATE} (id INT PRIMARY KEY, v INT, ${columns.join(', ')})`);
    } finally {
      await conn.query('SET GLOBAL mysql56_temporal_format = ON');
    }
  } finally {
    await conn.end();
  }
}
