import { describe, expect, it } from 'vitest';
import { writtenTables } from '../../lib/source/mysql/ddl/written-tables.ts';
import { mariadbComments } from '../support/comment-rules.ts';

const V = mariadbComments(101119);
const w = (sql: string, db = 'app') => writtenTables(sql, db, V);

describe('tables a statement-logged DML writes', () => {
  it('finds INSERT, REPLACE and LOAD DATA targets, qualified or in the default database', () => {
    expect(w("INSERT INTO t VALUES (1, 'x')")).toEqual([{ db: 'app', table: 't' }]);
    expect(w('INSERT LOW_PRIORITY IGNORE shop.orders (id) SELECT id FROM other.src')).toEqual([{ db: 'shop', table: 'orders' }]);
    expect(w('REPLACE INTO `a.b`.`c/d` VALUES (1)')).toEqual([{ db: 'a.b', table: 'c/d' }]);
    expect(w("LOAD DATA LOCAL INFILE '/tmp/x' REPLACE INTO TABLE s.t FIELDS TERMINATED BY ','")).toEqual([{ db: 's', table: 't' }]);
  });

  it('finds every table an UPDATE or DELETE names before SET / WHERE, multi-table forms included, and not the ones it only reads', () => {
    expect(w('UPDATE t SET v = 1 WHERE id IN (SELECT id FROM r)')).toEqual([{ db: 'app', table: 't' }]);
    expect(w('UPDATE LOW_PRIORITY a AS x JOIN b y ON x.id = y.id SET x.v = y.v')).toEqual([
      { db: 'app', table: 'a' },
      { db: 'app', table: 'b' },
    ]);
    expect(w('DELETE FROM s.t WHERE id = 1 LIMIT 1')).toEqual([{ db: 's', table: 't' }]);
    expect(w('DELETE t1, t2 FROM t1 INNER JOIN t2 ON t1.id = t2.id WHERE t1.v = 0')).toEqual([
      { db: 'app', table: 't1' },
      { db: 'app', table: 't2' },
      { db: 'app', table: 't1' },
      { db: 'app', table: 't2' },
    ]);
  });

  it('keywords are never tables, and XA or SET statements write none', () => {
    expect(w("XA COMMIT X'7831',X'',1")).toEqual([]);
    expect(w('SET @a = 1')).toEqual([]);
    expect(w('INSERT INTO secretdb.s VALUES (1)')).toEqual([{ db: 'secretdb', table: 's' }]);
  });

  it('says it cannot tell (null) for CALL, unreadable text and table lists with subqueries', () => {
    expect(w('CALL p()')).toBeNull();
    expect(w("INSERT INTO t VALUES ('unterminated")).toBeNull();
    expect(w('UPDATE (SELECT 1) AS x SET v = 1')).toBeNull();
  });
});
