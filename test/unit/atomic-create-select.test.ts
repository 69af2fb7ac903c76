import { describe, expect, it } from 'vitest';
import { isAtomicCreateSelect } from '../../lib/source/mysql/ddl/atomic-create-select.ts';

describe('MySQL’s atomic CREATE TABLE … SELECT statement', () => {
  it('is the CREATE TABLE MySQL 8.0.21+ logs after BEGIN, ending in START TRANSACTION (as a live 8.0.31 writes it)', () => {
    expect(isAtomicCreateSelect('CREATE TABLE `t` (\n  `id` int NOT NULL,\n  `v` varchar(10) DEFAULT NULL\n) START TRANSACTION')).toBe(true);
    expect(isAtomicCreateSelect('create table if not exists `d`.`t` (`a` int) ENGINE=InnoDB start  transaction ;')).toBe(true);
    expect(isAtomicCreateSelect('CREATE TABLE "t" ("a" int) START TRANSACTION')).toBe(true);
  });

  it('is no other statement: DML, a comment or string that says START TRANSACTION, another CREATE', () => {
    expect(isAtomicCreateSelect('INSERT INTO t VALUES (1) /* START TRANSACTION */')).toBe(false);
    expect(isAtomicCreateSelect("CREATE TABLE t (a int) COMMENT 'START TRANSACTION'")).toBe(false);
    expect(isAtomicCreateSelect('CREATE TABLE t (a int) /* START TRANSACTION */')).toBe(false);
    expect(isAtomicCreateSelect('CREATE VIEW v AS SELECT 1 AS START_TRANSACTION')).toBe(false);
    expect(isAtomicCreateSelect('CREATE TABLE t (a int) START TRANSACTION `unterminated')).toBe(false);
  });
});
