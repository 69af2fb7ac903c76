import { describe, expect, it } from 'vitest';
import { caughtUp, creates, expectIcebergEqual, expectVerified, once, one, replicate, type Server, server, sourceOn, stop } from '../support/history-source.ts';

/*
 * Following the transactions, not the server (lib/capture/follow.ts), on private MariaDB servers:
 * a primary, and a replica (log_slave_updates) that copies it by GTID and is promoted. When the
 * promoted server proves it carries every transaction sluice read and every one after them, the
 * run moves by itself and goes on, exactly once, with nothing copied again: the output — by the
 * format's rule (verify), and as Iceberg tables — equals the new server. Where nothing proves it,
 * the run stops with POSITION_FOREIGN, naming what is missing. What reads the same on MySQL (a
 * replica without an unread tail, another server behind an unchanged endpoint) is
 * history-endpoint.test.ts, which runs on both; MySQL's own cases are test/live-mysql/history-follow.test.ts.
 */

/** A primary and a replica copying it from its first transaction on; the replica logs what it applies. */
async function pair(): Promise<[Server, Server]> {
  const [primary, replica] = await Promise.all([server(), server(['--server-id=2', '--log-slave-updates=ON'])]);
  await replica.admin.query("SET GLOBAL gtid_slave_pos = ''");
  return [primary, replica];
}

const FOLLOWED = 'the binlog history changed and this server carries every transaction read: following them by GTID';

describe('following the transactions to another binlog history (private MariaDB)', () => {
  it('a promoted replica with an unread tail: the run moves by GTID by itself and reads the tail, exactly once, nothing copied again; status, log and metric say so', async () => {
    const [primary, replica] = await pair();
    try {
      const source = await sourceOn(primary.instance.url, 'fo');
      await primary.admin.query('CREATE DATABASE fo; USE fo; CREATE TABLE fo.t (id INT PRIMARY KEY, v VARCHAR(20)); CREATE TABLE fo.k (v VARCHAR(5), n INT)');
      await replicate(replica, primary);
      await source.capture();
      await primary.admin.query("INSERT INTO fo.t SELECT seq, CONCAT('v', seq) FROM seq_1_to_100");
      for (let round = 1; round <= 3; round++) {
        await primary.admin.query(
          `UPDATE fo.t SET v = 'r${round}' WHERE id % 3 = ${round % 3}; DELETE FROM fo.t WHERE id % 11 = ${round}; INSERT INTO fo.k VALUES ('a', ${round}), ('a', ${round}); FLUSH BINARY LOGS`,
        );
        await source.capture();
      }
      // The unread tail: committed on the primary and copied by the replica, never read by sluice.
      await primary.admin.query(
        "UPDATE fo.t SET v = 'tail' WHERE id % 5 = 0; DELETE FROM fo.t WHERE id % 13 = 0; DELETE FROM fo.k WHERE n = 1 LIMIT 1; INSERT INTO fo.t VALUES (500, 'tail')",
      );
      await caughtUp(primary, replica);
      await replica.admin.query('STOP SLAVE');
      const stored = await source.state();
      expect(stored?.position?.file).toBe('binlog.000004');
      const before = await source.seqs();

      // The endpoint now leads to the promoted replica (its own binlog, at binlog.000001).
      source.moveTo(replica.instance.url);
      const run = await source.capture();
      expect(run.status).toBe('captured');
      const moved = await source.state();
      expect(moved).toMatchObject({ epoch: 1, position: { file: 'binlog.000001' } });
      expect(moved?.resync).toBeUndefined();
      expect(moved?.error).toBeUndefined();
      expect(moved?.lastReposition).toMatchObject({
        gtid: stored?.position?.gtidPos,
        epoch: 1,
        evidence: "this server's binlog ends with binlog.000001, before binlog.000004",
        from: { position: stored?.position, serverId: 1 },
        to: { serverId: 2, position: { file: 'binlog.000001', gtid: stored?.position?.gtid, gtidPos: stored?.position?.gtidPos } },
      });
      expect(source.recorded.metrics.filter((m) => m.name === 'Repositions')).toEqual([{ name: 'Repositions', value: 1 }]);
      expect(source.recorded.info.find((line) => line.message === FOLLOWED)?.fields).toMatchObject({ epoch: 1, fromServer: 1, toServer: 2 });
      expect(await source.clients.snapshots.activeJobs(source.config.sourceId)).toEqual([]); // nothing is copied again
      // The tail was read from the replica, after everything read before.
      const after = (await source.seqs()).filter((q) => !before.includes(q));
      expect(after.length).toBeGreaterThan(0);
      expect(after.every((q) => q.startsWith('h000001.'))).toBe(true);
      expect(once(await creates(source))).toEqual([]);
      expect((await creates(source)).get(500)).toBe(1);

      const status = await source.cli(['status']);
      expect(status.out).toMatch(/followed\s+.*followed the transactions by GTID .* \(server_id 1\) to binlog\.000001:\d+ .*\(server_id 2\), history epoch 1/);
      expect(JSON.parse((await source.cli(['status', '--json'])).out).lastReposition).toMatchObject({ epoch: 1, to: { serverId: 2 } });

      await replica.admin.query("UPDATE fo.t SET v = 'after' WHERE id % 4 = 0; INSERT INTO fo.k VALUES ('b', 9)");
      expect((await source.capture()).status).toBe('captured');
      expect((await source.state())?.epoch).toBe(1);
      await expectVerified(source, ['fo.k', 'fo.t']);
      expect((await source.cli(['verify'])).code).toBe(0);
      await expectIcebergEqual(source, replica, ['k', 't'], 'fo');
    } finally {
      await Promise.all([stop(replica), stop(primary)]);
    }
  });

  it('a replica that lacks the last transactions sluice read (the asynchronous replication gap) stays POSITION_FOREIGN, naming the GTIDs it lacks; nothing moves', async () => {
    const [primary, replica] = await pair();
    try {
      const source = await sourceOn(primary.instance.url, 'gap');
      await primary.admin.query('CREATE DATABASE gap; USE gap; CREATE TABLE gap.t (id INT PRIMARY KEY, v VARCHAR(20))');
      await replicate(replica, primary);
      await source.capture();
      // The stored position in a file the replica's binlog does not reach: found before reading.
      await primary.admin.query("INSERT INTO gap.t SELECT seq, 'a' FROM seq_1_to_20; FLUSH BINARY LOGS");
      await caughtUp(primary, replica);
      const copied = await one(replica, 'SELECT @@gtid_slave_pos AS v');
      // The replica stops receiving; the primary's last writes are read by sluice, and lost with it.
      await replica.admin.query('STOP SLAVE');
      for (let i = 0; i < 3; i++) await primary.admin.query(`UPDATE gap.t SET v = 'lost${i}' WHERE id = ${i + 1}`);
      await source.capture();
      const stored = await source.state();
      const last = stored?.position?.gtid as string;
      const [domain, serverId, seq] = last.split('-').map(Number) as [number, number, number];
      expect(copied).toBe(`${domain}-${serverId}-${seq - 3}`);

      source.moveTo(replica.instance.url);
      const failure = (await source.capture().catch((error: Error & { code?: string }) => error)) as Error & { code?: string };
      expect(failure.code).toBe('POSITION_FOREIGN');
      expect(failure.message).toContain(`it lacks ${domain}-${serverId}-${seq - 2} to ${last} (its binlog state ends that domain and server at ${copied})`);
      expect(failure.message).toContain('sluice state reset --to latest');
      expect(await source.state()).toMatchObject({ epoch: 0, position: stored?.position, error: { code: 'POSITION_FOREIGN' } });
      expect((await source.state())?.lastReposition).toBeUndefined();
      expect(source.recorded.metrics.filter((m) => m.name === 'Repositions')).toEqual([]);
    } finally {
      await Promise.all([stop(replica), stop(primary)]);
    }
  });

  it('several GTID domains, which the replica logged in another order: the run follows every domain from its own last GTID, nothing read twice, nothing skipped', async () => {
    const [primary, replica] = await pair();
    try {
      const source = await sourceOn(primary.instance.url, 'md');
      const inDomain = async (domain: number, sql: string) => {
        await primary.admin.query(`SET SESSION gtid_domain_id = ${domain}; ${sql}; SET SESSION gtid_domain_id = 0`);
        return (await one(primary, 'SELECT @@last_gtid AS v')) as string;
      };
      await primary.admin.query('CREATE DATABASE md; USE md; CREATE TABLE md.t (id INT PRIMARY KEY, d INT, v VARCHAR(20))');
      await source.capture();
      await inDomain(2, "INSERT INTO md.t VALUES (1, 2, 'setup')");
      await replicate(replica, primary);
      await caughtUp(primary, replica);
      await inDomain(0, "INSERT INTO md.t SELECT seq, 0, 'a' FROM seq_10_to_19");
      await inDomain(2, "INSERT INTO md.t SELECT seq, 2, 'a' FROM seq_20_to_29");
      await caughtUp(primary, replica);
      await source.capture();
      await replica.admin.query('STOP SLAVE');

      // Read by sluice on the primary: one transaction of each domain, domain 0's first.
      const t1 = await inDomain(0, "INSERT INTO md.t SELECT seq, 0, 'b' FROM seq_100_to_109");
      const t2 = await inDomain(2, "INSERT INTO md.t SELECT seq, 2, 'b' FROM seq_200_to_209; UPDATE md.t SET v = 'b2' WHERE id = 20");
      await source.capture();
      const stored = await source.state();
      expect(stored?.position?.gtidPos).toBe(`${t1},${t2}`);
      // The unread tail, one transaction of each domain again.
      const t3 = await inDomain(0, "INSERT INTO md.t SELECT seq, 0, 'c' FROM seq_300_to_309; UPDATE md.t SET v = 'c0' WHERE id = 10");
      await inDomain(2, "INSERT INTO md.t SELECT seq, 2, 'c' FROM seq_400_to_409; UPDATE md.t SET v = 'c2' WHERE id = 20");
      // The replica applies domain 0 up to the tail first, then domain 2: its binlog holds t1, t3, t2, t4.
      await replicate(replica, primary, t3);
      await caughtUp(primary, replica, `${t3},${(await one(replica, 'SELECT @@gtid_slave_pos AS v'))?.split(',').find((g) => g.startsWith('2-'))}`);
      await replica.admin.query('STOP SLAVE; START SLAVE');
      await caughtUp(primary, replica);
      await replica.admin.query('STOP SLAVE');
      const [events] = (await replica.admin.query("SHOW BINLOG EVENTS IN 'binlog.000001'")) as unknown as [{ Event_type: string; Info: string }[]];
      const order = events.filter((e) => e.Event_type === 'Gtid').map((e) => /GTID (\S+)/.exec(e.Info)?.[1]);
      expect(order.indexOf(t3)).toBeLessThan(order.indexOf(t2));

      source.moveTo(replica.instance.url);
      expect((await source.capture()).status).toBe('captured');
      const moved = await source.state();
      expect(moved?.epoch).toBe(1);
      // The boundary lies before t3; domain 2's t2 comes after it here, and is skipped up to.
      expect(moved?.lastReposition?.to.position).toMatchObject({ gtidPos: `${t1},${t2}`, gtidSkip: t2 });
      expect(moved?.position?.gtidSkip).toBeUndefined();
      const counts = await creates(source);
      expect(once(counts)).toEqual([]);
      for (const id of [100, 200, 300, 400]) expect(counts.get(id)).toBe(1);

      await replica.admin.query(
        "SET SESSION gtid_domain_id = 2; INSERT INTO md.t VALUES (500, 2, 'after'); SET SESSION gtid_domain_id = 0; INSERT INTO md.t VALUES (501, 0, 'after')",
      );
      await source.capture();
      expect((await source.state())?.position?.gtidPos).toBe(await one(replica, 'SELECT @@gtid_binlog_pos AS v'));
      await expectVerified(source, ['md.t']);
      await expectIcebergEqual(source, replica, ['t'], 'md');
    } finally {
      await Promise.all([stop(replica), stop(primary)]);
    }
  });

  it('RESET MASTER and more transactions than before, written in the same second: the same GTIDs name other transactions on the server that was read; POSITION_FOREIGN', async () => {
    const s = await server();
    try {
      const source = await sourceOn(s.instance.url, 'rm');
      await s.admin.query('CREATE DATABASE rm; CREATE TABLE rm.t (id INT PRIMARY KEY, v VARCHAR(20))');
      await source.capture();
      await s.admin.query("INSERT INTO rm.t VALUES (1, 'a'), (2, 'b')");
      await source.capture();
      const stored = await source.state();
      const last = stored?.position?.gtid as string;
      const seq = Number(last.split('-')[2]);
      // A new history whose GTIDs pass the stored one, the stored one's written in the same second
      // (the session's clock set to it): by GTID and time alone, the transaction read.
      await s.admin.query('RESET MASTER');
      await s.admin.query(`SET timestamp = ${(stored?.position?.gtidTime as number) / 1000}`);
      for (let i = 0; i <= seq + 2; i++) await s.admin.query(`INSERT INTO rm.t VALUES (${100 + i}, 'new') ON DUPLICATE KEY UPDATE v = 'new'`);
      await s.admin.query('SET timestamp = DEFAULT');
      const failure = (await source.capture().catch((error: Error & { code?: string }) => error)) as Error & { code?: string };
      expect(failure.code).toBe('POSITION_FOREIGN');
      expect(failure.message).toMatch(
        /sluice did not move by itself: this is the server the position was read on \(server_id 1\), and its binlog started again/,
      );
      expect(await source.state()).toMatchObject({ epoch: 0, position: stored?.position });
    } finally {
      await stop(s);
    }
  });
});
