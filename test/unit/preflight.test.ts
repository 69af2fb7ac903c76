import { describe, expect, it } from 'vitest';
import { settingsProblem } from '../../lib/source/mysql/server.ts';

/*
 * Preflight over recorded `SHOW GLOBAL VARIABLES` answers. Only MariaDB runs here, so the MySQL 8
 * sets are written the way MySQL 8.0 reports them (log_bin ON/OFF, binlog_transaction_compression
 * ON/OFF, binlog_row_value_options '' or PARTIAL_JSON; MySQL 8's default binlog_row_metadata is
 * MINIMAL); the MariaDB set is what the test server reports.
 */
const mariadb1011 = { log_bin: 'ON', binlog_format: 'ROW', binlog_row_image: 'FULL', binlog_row_metadata: 'FULL' };
const mysql80 = { ...mariadb1011, binlog_transaction_compression: 'OFF', binlog_row_value_options: '' };

describe('preflight settings (recorded variable sets)', () => {
  it('accepts MariaDB 10.11 and MySQL 8.0 configured for CDC', () => {
    expect(settingsProblem(mariadb1011)).toBeUndefined();
    expect(settingsProblem(mysql80)).toBeUndefined();
  });

  it('accepts MySQL 8 binlog_transaction_compression=ON and binlog_row_value_options=PARTIAL_JSON: the reader decodes both', () => {
    expect(settingsProblem({ ...mysql80, binlog_transaction_compression: 'ON', binlog_row_value_options: 'PARTIAL_JSON' })).toBeUndefined();
    expect(settingsProblem({ ...mysql80, binlog_transaction_compression: 'ON', binlog_row_image: 'MINIMAL' })?.code).toBe('PREFLIGHT_BINLOG_ROW_IMAGE');
  });

  it('refuses each missing CDC setting with its own code', () => {
    expect(settingsProblem({ ...mysql80, log_bin: 'OFF' })?.code).toBe('PREFLIGHT_LOG_BIN');
    expect(settingsProblem({ ...mariadb1011, binlog_format: 'MIXED' })?.code).toBe('PREFLIGHT_BINLOG_FORMAT');
    expect(settingsProblem({ ...mariadb1011, binlog_row_image: 'NOBLOB' })?.code).toBe('PREFLIGHT_BINLOG_ROW_IMAGE');
    expect(settingsProblem({ ...mysql80, binlog_row_metadata: 'MINIMAL' })?.message).toContain("SET GLOBAL binlog_row_metadata = 'FULL'");
    // MySQL 5.7 / 8.0.13 have no binlog_row_metadata at all.
    const { binlog_row_metadata: _, ...mysql57 } = mysql80;
    expect(settingsProblem(mysql57)?.code).toBe('PREFLIGHT_VERSION');
  });
});
