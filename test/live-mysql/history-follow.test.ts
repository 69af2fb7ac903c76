import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { describe, expect, it } from 'vitest';
import { type MySqlInstance, startMySql } from '../../lib/local/mysql.ts';
import { stopProcess } from '../../lib/local/process.ts';
import { expectIcebergEqual, expectVerified, type Server, type Source, sourceOn } from '../support/history-source.ts';
import { caughtUp as caughtUpNode, type ReplicationNode, replicate } from '../support/replication.ts';

/*
 * Following the transactions to another binlog history on MySQL 8.0.31 (lib/capture/follow.ts): a
 * primary and a replica that copies it by GTID auto-positioning, each with its own server_uuid,
 * file names and offsets. What proves continuity is the replica's gtid_executed (it holds the set
 * sluice read and has purged nothing after it) and the time its binlog gives the last transaction
 * read; what is missing stays POSITION_FOREIGN.
 */

interface MySqlServer extends Server {
  instance: MySqlInstance;
  /** How sluice reaches it: verified TLS with this server's own CA. */
  env: Record<string, string>;
}

async function mysqlServer(args: string[] = []): Promise<MySqlServer> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-follow-mysql-'));
  const instance = await startMySql(join(dir, 'db'), () => {}, args);
  const admin = await mysql.createConnection({ uri: instance.adminUrl, multipleStatements: true, dateStrings: true });
  return { instance, admin, dir, env: { SLUICE_MYSQL_TLS: 'verify', SLUICE_MYSQL_CA: instance.ca } };
}

async function stop(s: MySqlServer | undefined): Promise<void> {
  if (!s) return;
  await s.admin.end().catch(() => undefined);
  await stopProcess(s.instance.pid);
  rmSync(s.dir, { recursive: true, force: true });
}

const one = async (s: MySqlServer, sql: string) => ((await s.admin.query(sql)) as unknown as [{ v: string }[]])[0][0]?.v;
const executed = async (s: MySqlServer) => (await one(s, 'SELECT @@GLOBAL.gtid_executed AS v'))?.replace(/\s/g, '');

const node = (s: MySqlServer): ReplicationNode => ({ kind: 'mysql', admin: s.admin, port: s.instance.port, adminUrl: s.instance.adminUrl });

/** A primary and a replica of everything it writes from now on (the replica takes the primary's bootstrap as purged). */
async function pair(): Promise<[MySqlServer, MySqlServer]> {
  const [primary, replica] = await Promise.all([mysqlServer(), mysqlServer(['--server-id=2'])]);
  await replica.admin.query(`RESET MASTER; SET GLOBAL gtid_purged = '${await executed(primary)}'`);
  await replicate(node(replica), node(primary));
  return [primary, replica];
}

const caughtUp = (primary: MySqlServer, replica: MySqlServer): Promise<void> => caughtUpNode(node(primary), node(replica));

const source = (s: MySqlServer): Promise<Source> => sourceOn(s.instance.url, 'mf', s.env);

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
      await replica.admin.query('STOP REPLICA');
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

  it('a replica lacking the last transactions read stays POSITION_FOREIGN, naming them; RESET MASTER and more transactions than before is told apart by time', async () => {
    const [primary, replica] = await pair();
    try {
      const src = await source(primary);
      await primary.admin.query('CREATE DATABASE mf; CREATE TABLE mf.t (id INT PRIMARY KEY, v VARCHAR(20))');
      await src.capture();
      // A position learns the set executed at it from a file it reads from the start (Previous_gtids).
      await primary.admin.query('FLUSH BINARY LOGS');
      await src.capture();
      await caughtUp(primary, replica);
      await replica.admin.query('STOP REPLICA');
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

      // Back on the primary, reset a second later: its own uuid numbers new transactions from 1 again, past the stored set.
      src.moveTo(primary.instance.url, primary.env);
      await new Promise((resolve) => setTimeout(resolve, 1100));
      await primary.admin.query('RESET MASTER');
      for (let i = 0; i <= gno + 2; i++) await primary.admin.query(`INSERT INTO mf.t VALUES (${100 + i}, 'new') ON DUPLICATE KEY UPDATE v = 'new'`);
      const reset = (await src.capture().catch((error: Error & { code?: string }) => error)) as Error & { code?: string };
      expect(reset.code).toBe('POSITION_FOREIGN');
      expect(reset.message).toMatch(new RegExp(`sluice did not move by itself: this server's ${last} was written at .*, the one sluice read at`));
      expect(await src.state()).toMatchObject({ epoch: 0, position: stored?.position });
    } finally {
      await Promise.all([stop(replica), stop(primary)]);
    }
  });

  it('a server built from a dump (SET GLOBAL gtid_purged after RESET MASTER): the set a position learns from a Previous_gtids takes gtid_purged in, so no run finds its own past purged', async () => {
    const dumped = await mysqlServer(['--server-id=3']);
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
