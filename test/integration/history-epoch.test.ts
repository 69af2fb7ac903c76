import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caughtUp, expectIcebergEqual, expectVerified, one, replicate, type Server, server, sourceOn, stop } from '../support/history-source.ts';

/*
 * The ordering key across changes of binlog history, on private MariaDB servers (RESET MASTER and
 * replication rewrite the binlog for everyone reading a server, so never on the shared one). After
 * each change of history and the recovery sluice offers for it, the output — by the format's rule
 * (verify), and as Iceberg tables — equals the server, and verify compares every table (skips none).
 */

/** Changes that touch rows the output already holds: updates, deletes, re-inserted keys, a keyless table's duplicates. */
async function churn(s: Server, round: number): Promise<void> {
  await s.admin.query(
    `UPDATE shop.t SET v = CONCAT('r${round}-', id) WHERE id % 3 = ${round % 3};
     DELETE FROM shop.t WHERE id % 7 = ${round % 7};
     INSERT INTO shop.t SELECT seq + ${round * 100 + 1000}, CONCAT('new${round}') FROM seq_1_to_20;
     INSERT INTO shop.t VALUES (${round % 7}, 'back${round}') ON DUPLICATE KEY UPDATE v = 'back${round}';
     INSERT INTO shop.k VALUES ('a', ${round}), ('a', ${round}), ('b', ${round});
     DELETE FROM shop.k WHERE n = ${round - 1} LIMIT 2`,
  );
}

describe('history epochs: the ordering key across changes of binlog history (private MariaDB)', () => {
  let a: Server | undefined;
  beforeAll(async () => {
    a = await server();
  });
  afterAll(async () => {
    await stop(a);
  });

  it('RESET MASTER, then the recovery the error names: S3, verify and Iceberg equal MariaDB; every later event sorts after every earlier one', async () => {
    const s = a as Server;
    const source = await sourceOn(s.instance.url);
    await s.admin.query(
      `CREATE DATABASE shop; CREATE TABLE shop.t (id INT PRIMARY KEY, v VARCHAR(20));
       CREATE TABLE shop.k (v VARCHAR(5), n INT); CREATE TABLE shop.gone (id INT PRIMARY KEY); USE shop`,
    );
    await source.capture();
    await s.admin.query("INSERT INTO shop.t SELECT seq, CONCAT('v', seq) FROM seq_1_to_120; INSERT INTO shop.gone VALUES (1), (2)");
    // The old history reaches a high file number, so the new one's numbers restart below it.
    for (let round = 1; round <= 3; round++) {
      await churn(s, round);
      await s.admin.query('FLUSH BINARY LOGS');
      await source.capture();
    }
    const before = await source.seqs();
    expect((await source.state())?.position?.file).toBe('binlog.000004');
    expect((await source.state())?.epoch).toBe(0);

    // RESET MASTER, and changes no run reads: the gap. A table dropped and one created in it.
    await s.admin.query('RESET MASTER');
    await churn(s, 4);
    await s.admin.query('DROP TABLE shop.gone; CREATE TABLE shop.fresh (id INT PRIMARY KEY, w INT); INSERT INTO shop.fresh VALUES (1, 1), (2, 2)');
    expect(await source.capture().catch((error: { code?: string }) => error.code)).toBe('POSITION_FOREIGN');

    // The recovery the message names: a reset to the server's end re-copies every table by itself.
    const reset = await source.cli(['state', 'reset', '--to', 'latest']);
    expect(reset.code).toBe(0);
    expect(await source.state()).toMatchObject({ epoch: 1, resync: { reason: 'sluice state reset --to latest' } });
    await churn(s, 5);
    const first = await source.capture();
    expect(first.status).toBe('captured');
    expect((await source.state())?.resync).toBeUndefined();
    const status = await source.cli(['status']);
    expect(status.out).toMatch(/history epoch 1/);
    await churn(s, 6);
    await source.snapshots();
    await churn(s, 7);
    await source.capture();

    // Everything written since the reset sorts after everything written before it.
    const after = (await source.seqs()).filter((q) => !before.includes(q));
    const maxBefore = [...before].sort().at(-1) ?? '';
    expect(after.length).toBeGreaterThan(0);
    expect(after.every((q) => q > maxBefore && q.startsWith('h000001.'))).toBe(true);

    await expectVerified(source, ['shop.fresh', 'shop.k', 'shop.t']);
    expect((await source.cli(['verify'])).code).toBe(0);
    await expectIcebergEqual(source, s, ['fresh', 'k', 't']);

    // A second change of history: the next epoch sorts after this one, and the result is exact again.
    await s.admin.query('RESET MASTER');
    await churn(s, 8);
    expect(await source.capture().catch((error: { code?: string }) => error.code)).toBe('POSITION_FOREIGN');
    expect((await source.cli(['state', 'reset', '--to', 'latest'])).code).toBe(0);
    await source.capture();
    await churn(s, 9);
    await source.snapshots();
    await source.capture();
    expect((await source.state())?.epoch).toBe(2);
    await expectVerified(source, ['shop.fresh', 'shop.k', 'shop.t']);
    await expectIcebergEqual(source, s, ['fresh', 'k', 't']);
  });

  it('a reset that skips transactions on the same history re-copies only the tables they wrote; one that goes back re-reads and re-copies nothing', async () => {
    const s = a as Server;
    const source = await sourceOn(s.instance.url, 'skip');
    await s.admin.query(
      'CREATE DATABASE skip; USE skip; CREATE TABLE skip.t (id INT PRIMARY KEY, v VARCHAR(20)); CREATE TABLE skip.u (id INT PRIMARY KEY, v VARCHAR(20))',
    );
    await source.capture();
    await s.admin.query("INSERT INTO skip.t SELECT seq, 'a' FROM seq_1_to_50; INSERT INTO skip.u SELECT seq, 'a' FROM seq_1_to_50");
    await source.capture();
    const master = async () =>
      ((await s.admin.query('SHOW MASTER STATUS')) as unknown as [{ File: string; Position: number }[]])[0][0] as { File: string; Position: number };
    const { File: file, Position: start } = await master();
    // The transactions a reset skips write t only (the ones sluice could not read, say).
    await s.admin.query("UPDATE skip.t SET v = 'skipped' WHERE id <= 10; DELETE FROM skip.t WHERE id > 45");
    // DDL of a table sluice does not capture, among them, changes nothing captured.
    await s.admin.query('CREATE DATABASE skip_other; CREATE TABLE skip_other.x (id INT PRIMARY KEY)');
    const { Position: end } = await master();
    const skip = await source.cli(['state', 'reset', '--to', `position:${file}:${end}`]);
    expect(skip.code).toBe(0);
    expect(skip.out).toMatch(/history epoch 1/);
    expect(await source.state()).toMatchObject({ epoch: 1, resync: { tables: [{ db: 'skip', table: 't' }] } });
    await s.admin.query("UPDATE skip.u SET v = 'b' WHERE id <= 5; UPDATE skip.t SET v = 'c' WHERE id = 20");
    await source.capture();
    const jobs = await source.clients.snapshots.activeJobs(source.config.sourceId);
    expect(jobs.map((j) => j.requested)).toEqual([[{ db: 'skip', table: 't' }]]);
    await source.snapshots();
    await expectVerified(source, ['skip.t', 'skip.u']);
    await expectIcebergEqual(source, s, ['t', 'u'], 'skip');

    // Back to before those transactions: they are read again, in a later epoch, and nothing is re-copied.
    const back = await source.cli(['state', 'reset', '--to', `position:${file}:${start}`]);
    expect(back.code).toBe(0);
    expect(await source.state()).toMatchObject({ epoch: 2 });
    expect((await source.state())?.resync).toBeUndefined();
    await source.capture();
    expect(await source.clients.snapshots.activeJobs(source.config.sourceId)).toEqual([]);
    await expectVerified(source, ['skip.t', 'skip.u']);
    await expectIcebergEqual(source, s, ['t', 'u'], 'skip');
  });

  it('SLUICE_ON_HISTORY_CHANGE=stop: a failover to a promoted replica whose binlog numbers lie below the old primary’s stops with POSITION_FOREIGN, and `state reset --to gtid:` reads the unread tail from the replica, exactly once, in order', async () => {
    // A primary of its own: the replica replays its whole binlog, which the other tests reset.
    const [primary, replica] = await Promise.all([server(), server(['--server-id=2', '--log-slave-updates=ON'])]);
    try {
      const source = await sourceOn(primary.instance.url, 'fo', { SLUICE_ON_HISTORY_CHANGE: 'stop' });
      await primary.admin.query('CREATE DATABASE fo; USE fo; CREATE TABLE fo.t (id INT PRIMARY KEY, v VARCHAR(20)); CREATE TABLE fo.k (v VARCHAR(5), n INT)');
      // The replica copies everything from the primary's first GTID on (the other tests' databases too).
      await replica.admin.query("SET GLOBAL gtid_slave_pos = ''");
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
      await primary.admin.query("UPDATE fo.t SET v = 'tail' WHERE id % 5 = 0; DELETE FROM fo.t WHERE id % 13 = 0; DELETE FROM fo.k WHERE n = 1 LIMIT 1");
      await caughtUp(primary, replica);
      await replica.admin.query('STOP SLAVE');
      const stored = await source.state();
      expect(stored?.position?.file).toBe('binlog.000004');
      expect(stored?.position?.gtidPos).toBe(await one(primary, "SELECT BINLOG_GTID_POS('binlog.000004', 4) AS v"));

      // The endpoint now leads to the promoted replica (its own binlog, at binlog.000001): the
      // setting keeps the decision with the operator, and the message offers every domain's GTID.
      source.moveTo(replica.instance.url);
      const failure = (await source.capture().catch((error: Error & { code?: string }) => error)) as Error & { code?: string };
      expect(failure.code).toBe('POSITION_FOREIGN');
      const offered = /sluice state reset --to (gtid:[0-9,-]+)/.exec(failure.message)?.[1];
      expect(offered).toBe(`gtid:${stored?.position?.gtidPos}`);
      expect(await source.state()).toMatchObject({ epoch: 0, position: stored?.position });
      expect(source.recorded.metrics.filter((m) => m.name === 'Repositions')).toEqual([]);
      expect((await source.cli(['state', 'reset', '--to', offered as string])).code).toBe(0);
      expect(await source.state()).toMatchObject({ epoch: 1 });
      expect((await source.state())?.resync).toBeUndefined();
      expect((await source.state())?.lastReposition).toBeUndefined();
      await replica.admin.query("UPDATE fo.t SET v = 'after' WHERE id % 4 = 0; INSERT INTO fo.k VALUES ('b', 9)");
      await source.capture();
      expect((await source.state())?.position?.file).toBe('binlog.000001');
      expect(await source.clients.snapshots.activeJobs(source.config.sourceId)).toEqual([]); // nothing was copied again

      await expectVerified(source, ['fo.k', 'fo.t']);
      await expectIcebergEqual(source, replica, ['k', 't'], 'fo');
    } finally {
      await Promise.all([stop(replica), stop(primary)]);
    }
  });
});
