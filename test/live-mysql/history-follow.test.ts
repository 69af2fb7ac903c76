import { describe, expect, it } from 'vitest';
import type { BinlogPosition } from '../../lib/core/position.ts';
import { mysqlExecutedAt } from '../../lib/source/mysql/dialect/mysql.ts';
import {
  caughtUp,
  expectIcebergEqual,
  expectVerified,
  one,
  pair,
  promote,
  replicate,
  type Server,
  type Source,
  server,
  sourceOn,
  stop,
} from '../support/history-source.ts';

/*
 * Following the transactions to another binlog history on MySQL 8.0.31 (lib/capture/follow.ts): a
 * primary and a replica that copies it by GTID auto-positioning (../support/history-source.ts),
 * each with its own server_uuid, file names and offsets. What proves continuity is the replica's
 * gtid_executed (it holds the set sluice read and has purged nothing after it) and the time its
 * binlog gives the last transaction read; what is missing stays POSITION_FOREIGN. MariaDB's are
 * test/integration/history-follow.test.ts.
 */

const executed = async (s: Server) => (await one(s, 'SELECT @@GLOBAL.gtid_executed AS v'))?.replace(/\s/g, '');

const source = (s: Server): Promise<Source> => sourceOn(s.instance.url, 'mf', s.env);

describe('following the transactions to another binlog history (private MySQL 8.0.31)', () => {
  it('a promoted replica with an unread tail: the run moves by GTID set by itself, whatever its uuid and file names; exactly once, nothing copied again', async () => {
    const [primary, replica] = await pair();
    try {
      const src = await source(primary);
      await primary.admin.query('CREATE DATABASE mf; CREATE TABLE mf.t (id INT PRIMARY KEY, v VARCHAR(20))');
      await src.capture();
      await primary.admin.query("INSERT INTO mf.t VALUES (1, 'a'), (2, 'a'), (3, 'a'), (4, 'a'); FLUSH BINARY LOGS");
      await primary.admin.query("UPDATE mf.t SET v = 'b' WHERE id <= 2; FLUSH BINARY LOGS");
      await src.capture();
      // The unread tail.
      await primary.admin.query("UPDATE mf.t SET v = 'tail' WHERE id = 3; DELETE FROM mf.t WHERE id = 4; INSERT INTO mf.t VALUES (5, 'tail')");
      await caughtUp(primary, replica);
      await promote(replica);
      const stored = await src.state();
      expect(stored?.position?.gtidSet).toBeDefined();
      const [uuidA, uuidB] = [await one(primary, 'SELECT @@server_uuid AS v'), await one(replica, 'SELECT @@server_uuid AS v')];

      src.moveTo(replica.instance.url, replica.env);
      expect((await src.capture()).status).toBe('captured');
      const moved = await src.state();
      expect(moved?.epoch).toBe(1);
      expect(moved?.resync).toBeUndefined();
      expect(moved?.lastReposition).toMatchObject({
        gtid: stored?.position?.gtidSet,
        from: { serverId: 1, serverUuid: uuidA },
        to: { serverId: 2, serverUuid: uuidB },
      });
      expect(src.recorded.metrics.filter((m) => m.name === 'Repositions')).toEqual([{ name: 'Repositions', value: 1 }]);
      expect(await src.clients.snapshots.activeJobs(src.config.sourceId)).toEqual([]);
      const inserts = (await src.events()).filter((e) => e.op === 'c' && e.table === 't').map((e) => Number(e.key.id));
      expect(inserts.sort()).toEqual([1, 2, 3, 4, 5]);

      await replica.admin.query("INSERT INTO mf.t VALUES (6, 'after')");
      await src.capture();
      await expectVerified(src, ['mf.t']);
      await expectIcebergEqual(src, replica, ['t'], 'mf');
    } finally {
      await Promise.all([stop(replica), stop(primary)]);
    }
  });

  it('a source started mid-file, with no rotation before the failover: its first position carries the exact set executed there, so the run follows to a promoted replica and reads the tail exactly once', async () => {
    const [primary, replica] = await pair();
    try {
      await primary.admin.query("CREATE DATABASE mf; CREATE TABLE mf.t (id INT PRIMARY KEY, v VARCHAR(20)); INSERT INTO mf.t VALUES (1, 'before')");
      const src = await source(primary);
      await src.capture(); // starts at the server's end, in the middle of binlog.000001
      const first = await src.state();
      expect(first?.position?.file).toBe('binlog.000001');
      expect(first?.position?.gtidSet).toBe(await executed(primary));
      // Compressed transactions among them: their GTIDs count too.
      await primary.admin.query(
        "SET SESSION binlog_transaction_compression = ON; INSERT INTO mf.t VALUES (2, 'a'), (3, 'a'); UPDATE mf.t SET v = 'b' WHERE id = 1; SET SESSION binlog_transaction_compression = OFF",
      );
      await src.capture();
      // The unread tail.
      await primary.admin.query("UPDATE mf.t SET v = 'tail' WHERE id = 2; DELETE FROM mf.t WHERE id = 3; INSERT INTO mf.t VALUES (4, 'tail')");
      await caughtUp(primary, replica);
      await promote(replica);
      const stored = await src.state();
      expect(stored?.position?.file).toBe('binlog.000001'); // no rotation was read
      // The set the stream carried on equals the one read from the binlog at that position, a few events a page.
      expect(stored?.position?.gtidSet).toBe(await mysqlExecutedAt(primary.admin, stored?.position as BinlogPosition, 2));
      expect(stored?.position?.gtidSet).not.toBe(first?.position?.gtidSet);

      src.moveTo(replica.instance.url, replica.env);
      expect((await src.capture()).status).toBe('captured');
      expect(await src.state()).toMatchObject({ epoch: 1, lastReposition: { gtid: stored?.position?.gtidSet } });
      expect(await src.clients.snapshots.activeJobs(src.config.sourceId)).toEqual([]);
      const inserts = (await src.events()).filter((e) => e.op === 'c' && e.table === 't').map((e) => Number(e.key.id));
      expect(inserts.sort()).toEqual([2, 3, 4]);
      await replica.admin.query("INSERT INTO mf.t VALUES (5, 'after')");
      await src.capture();
      await expectVerified(src, ['mf.t']);
      await expectIcebergEqual(src, replica, ['t'], 'mf');
    } finally {
      await Promise.all([stop(replica), stop(primary)]);
    }
  });

  it('a replica lacking the last transactions read stays POSITION_FOREIGN, naming them; RESET MASTER and more transactions than before, in the same second, is told apart: the server that was read', async () => {
    const [primary, replica] = await pair();
    try {
      const src = await source(primary);
      await primary.admin.query('CREATE DATABASE mf; CREATE TABLE mf.t (id INT PRIMARY KEY, v VARCHAR(20))');
      await src.capture();
      // A position learns the set executed at it from a file it reads from the start (Previous_gtids).
      await primary.admin.query('FLUSH BINARY LOGS');
      await src.capture();
      await caughtUp(primary, replica);
      await promote(replica);
      await primary.admin.query("INSERT INTO mf.t VALUES (1, 'lost'); INSERT INTO mf.t VALUES (2, 'lost')");
      await src.capture();
      const stored = await src.state();
      const last = stored?.position?.gtid as string;
      const [uuid, gno] = [last.slice(0, last.lastIndexOf(':')), Number(last.slice(last.lastIndexOf(':') + 1))];

      src.moveTo(replica.instance.url, replica.env);
      const gap = (await src.capture().catch((error: Error & { code?: string }) => error)) as Error & { code?: string };
      expect(gap.code).toBe('POSITION_FOREIGN');
      expect(gap.message).toContain(`this server's gtid_executed lacks ${uuid}:${gno - 1}-${gno}, which sluice had read`);
      expect(await src.state()).toMatchObject({ epoch: 0, position: stored?.position });

      // Back on the primary, reset: its own uuid numbers new transactions from 1 again, past the
      // stored set, the stored one's written in the same second (the session's clock set to it).
      src.moveTo(primary.instance.url, primary.env);
      await primary.admin.query('RESET MASTER');
      await primary.admin.query(`SET timestamp = ${(stored?.position?.gtidTime as number) / 1000}`);
      for (let i = 0; i <= gno + 2; i++) await primary.admin.query(`INSERT INTO mf.t VALUES (${100 + i}, 'new') ON DUPLICATE KEY UPDATE v = 'new'`);
      await primary.admin.query('SET timestamp = DEFAULT');
      const reset = (await src.capture().catch((error: Error & { code?: string }) => error)) as Error & { code?: string };
      expect(reset.code).toBe('POSITION_FOREIGN');
      expect(reset.message).toMatch(
        new RegExp(`sluice did not move by itself: this is the server the position was read on \\(server_uuid ${uuid}\\), and its binlog started again`),
      );
      expect(await src.state()).toMatchObject({ epoch: 0, position: stored?.position });
    } finally {
      await Promise.all([stop(replica), stop(primary)]);
    }
  });

  it('another server whose GTIDs name other transactions written in the same second (the primary’s binlog reset, the replica rebuilt from it): their first commit times differ to the microsecond, so the run does not follow; POSITION_FOREIGN', async () => {
    const [primary, replica] = await pair();
    try {
      const src = await source(primary);
      await primary.admin.query('CREATE DATABASE mf; CREATE TABLE mf.t (id INT PRIMARY KEY, v VARCHAR(20)); FLUSH BINARY LOGS');
      await src.capture();
      await primary.admin.query("INSERT INTO mf.t VALUES (1, 'a'); INSERT INTO mf.t VALUES (2, 'b')");
      await src.capture();
      const stored = (await src.state())?.position as BinlogPosition;
      const last = stored.gtid as string;
      const gno = Number(last.slice(last.lastIndexOf(':') + 1));
      // Recorded with the position: the original commit time, to the microsecond.
      expect(Math.abs((stored.gtidCommitUs as number) / 1000 - (stored.gtidTime as number))).toBeLessThan(2_000);

      // The primary's binlog starts again and its uuid numbers as many transactions and more, the
      // stored one's in the very second it was written (the session's clock set to it); the
      // replica forgets its GTIDs, copies them all and is promoted.
      await replica.admin.query('STOP REPLICA; RESET REPLICA ALL; RESET MASTER');
      await primary.admin.query('RESET MASTER');
      await primary.admin.query(`SET timestamp = ${(stored.gtidTime as number) / 1000}`);
      for (let i = 0; i <= gno + 2; i++) await primary.admin.query(`INSERT INTO mf.t VALUES (${100 + i}, 'new')`);
      await primary.admin.query('SET timestamp = DEFAULT');
      await replicate(replica, primary);
      await caughtUp(primary, replica);
      await promote(replica);
      expect(await executed(replica)).toBe(await executed(primary));

      src.moveTo(replica.instance.url, replica.env);
      const failure = (await src.capture().catch((error: Error & { code?: string }) => error)) as Error & { code?: string };
      expect(failure.code).toBe('POSITION_FOREIGN');
      expect(failure.message).toMatch(new RegExp(`sluice did not move by itself: this server's ${last} was first committed at .*, the one sluice read at`));
      expect(await src.state()).toMatchObject({ epoch: 0, position: stored });
    } finally {
      await Promise.all([stop(replica), stop(primary)]);
    }
  });

  it('a server built from a dump (SET GLOBAL gtid_purged after RESET MASTER): the set a position learns from a Previous_gtids takes gtid_purged in, so no run finds its own past purged', async () => {
    const dumped = await server(['--server-id=3']);
    try {
      // What mysqldump's output does on a fresh server: those GTIDs are in no binlog file, and MySQL
      // leaves them out of every file's Previous_gtids.
      const elsewhere = '3e11fa47-71ca-11e1-9e33-c80aa9429562:1-40';
      await dumped.admin.query(
        `RESET MASTER; SET GLOBAL gtid_purged = '${elsewhere}'; CREATE DATABASE mf; CREATE TABLE mf.t (id INT PRIMARY KEY, v VARCHAR(20))`,
      );
      const src = await source(dumped);
      await src.capture(); // starts at latest: a position without a set
      await dumped.admin.query("INSERT INTO mf.t VALUES (1, 'a'); FLUSH BINARY LOGS; INSERT INTO mf.t VALUES (2, 'b')");
      await src.capture(); // reads binlog.000002 from its start: the set is learned there
      expect((await src.state())?.position?.gtidSet).toContain(elsewhere);
      await dumped.admin.query("INSERT INTO mf.t VALUES (3, 'c')");
      expect((await src.capture()).status).toBe('captured');
      expect((await src.state())?.error).toBeUndefined();
      await expectVerified(src, ['mf.t']);
    } finally {
      await stop(dumped);
    }
  });
});
