import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  binlogEnd,
  caughtUp,
  endpoint,
  expectIcebergEqual,
  expectVerified,
  one,
  pair,
  promote,
  restore,
  rowsOf,
  type Server,
  server,
  sourceOn,
  stop,
} from '../support/history-source.ts';
import { slowProxy } from '../support/stalling-proxy.ts';

/*
 * The ordering key across changes of binlog history, on private servers of the suite's flavor
 * (MariaDB; MySQL 8.0.31 under `npm run test:live-mysql`): RESET MASTER, replication and restores
 * rewrite the binlog for everyone reading a server, so never on the shared one. After each change
 * of history and the recovery sluice offers for it, the output — by the format's rule (verify), and
 * as Iceberg tables — equals the server, verify compares every table (skips none), and every event
 * read after the change sorts after every event read before it.
 */

const kind = inject('stackServer');
const flavor = kind === 'mysql' ? 'MySQL' : 'MariaDB';

/** `file`'s successor `n` files on (binlog.000004 + 1 = binlog.000005). */
const fileAfter = (file: string, n: number) => file.replace(/\d+$/, (digits) => String(Number(digits) + n).padStart(digits.length, '0'));

/** Resolves once the wall clock's second has changed. */
const nextSecond = () => new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000) + 10));

/** The recovery a POSITION_FOREIGN message offers (`sluice state reset --to …`). */
const offered = (message: string) => /sluice state reset --to ([^`\s]+)`/.exec(message)?.[1];

/** Changes that touch rows the output already holds: updates, deletes, re-inserted keys, a keyless table's duplicates. */
async function churn(s: Server, round: number): Promise<void> {
  await s.admin.query(
    `UPDATE shop.t SET v = CONCAT('r${round}-', id) WHERE id % 3 = ${round % 3};
     DELETE FROM shop.t WHERE id % 7 = ${round % 7};
     INSERT INTO shop.t VALUES ${rowsOf(round * 100 + 1001, 20, () => `new${round}`)};
     INSERT INTO shop.t VALUES (${round % 7}, 'back${round}') ON DUPLICATE KEY UPDATE v = 'back${round}';
     INSERT INTO shop.k VALUES ('a', ${round}), ('a', ${round}), ('b', ${round});
     DELETE FROM shop.k WHERE n = ${round - 1} LIMIT 2`,
  );
}

describe(`history epochs: the ordering key across changes of binlog history (private ${flavor})`, () => {
  let a: Server | undefined;
  beforeAll(async () => {
    a = await server();
  });
  afterAll(async () => {
    await stop(a);
  });

  it('RESET MASTER, then the recovery the error names: S3, verify and Iceberg equal the server; every later event sorts after every earlier one', async () => {
    const s = a as Server;
    const source = await sourceOn(s.instance.url, 'shop', s.env);
    await s.admin.query(
      `CREATE DATABASE shop; CREATE TABLE shop.t (id INT PRIMARY KEY, v VARCHAR(20));
       CREATE TABLE shop.k (v VARCHAR(5), n INT); CREATE TABLE shop.gone (id INT PRIMARY KEY); USE shop`,
    );
    await source.capture();
    await s.admin.query(`INSERT INTO shop.t VALUES ${rowsOf(1, 120, (i) => `v${i}`)}; INSERT INTO shop.gone VALUES (1), (2)`);
    const { File: firstFile } = await binlogEnd(s);
    // The old history reaches a high file number, so the new one's numbers restart below it.
    for (let round = 1; round <= 3; round++) {
      await churn(s, round);
      await s.admin.query('FLUSH BINARY LOGS');
      await source.capture();
    }
    const before = await source.seqs();
    expect((await source.state())?.position?.file).toBe(fileAfter(firstFile, 3));
    expect((await source.state())?.epoch).toBe(0);

    // RESET MASTER, and changes no run reads: the gap. A table dropped and one created in it.
    await s.admin.query('RESET MASTER');
    await churn(s, 4);
    await s.admin.query('DROP TABLE shop.gone; CREATE TABLE shop.fresh (id INT PRIMARY KEY, w INT); INSERT INTO shop.fresh VALUES (1, 1), (2, 2)');
    const failure = (await source.capture().catch((error: Error & { code?: string }) => error)) as Error & { code?: string };
    expect(failure.code).toBe('POSITION_FOREIGN');
    expect(offered(failure.message)).toBe('latest');

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
    const source = await sourceOn(s.instance.url, 'skip', s.env);
    await s.admin.query(
      'CREATE DATABASE skip; USE skip; CREATE TABLE skip.t (id INT PRIMARY KEY, v VARCHAR(20)); CREATE TABLE skip.u (id INT PRIMARY KEY, v VARCHAR(20))',
    );
    await source.capture();
    await s.admin.query(`INSERT INTO skip.t VALUES ${rowsOf(1, 50, () => 'a')}; INSERT INTO skip.u VALUES ${rowsOf(1, 50, () => 'a')}`);
    await source.capture();
    const master = () => binlogEnd(s);
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

  it('RESET MASTER again before any run read from a reset’s position: the new binlog starts at the same file and offset, with no GTID to tell them apart; the run stops with POSITION_FOREIGN, the recovery copies every table, and the writes between the two resets are not lost', async () => {
    const s = a as Server;
    const source = await sourceOn(s.instance.url, 'again', s.env);
    // A first run that reads nothing still records the history of the position it starts at.
    await source.capture();
    expect((await source.state())?.history?.created).toBeGreaterThan(0);
    await s.admin.query('CREATE DATABASE again; CREATE TABLE again.t (id INT PRIMARY KEY, v VARCHAR(20)); CREATE TABLE again.k (v VARCHAR(5), n INT)');
    await source.capture();
    await s.admin.query(`INSERT INTO again.t VALUES ${rowsOf(1, 40, (i) => `v${i}`)}; INSERT INTO again.k VALUES ('a', 1), ('a', 1)`);
    await source.capture();
    await s.admin.query('RESET MASTER');
    expect(await source.capture().catch((error: { code?: string }) => error.code)).toBe('POSITION_FOREIGN');
    expect((await source.cli(['state', 'reset', '--to', 'latest'])).code).toBe(0);
    // Nothing is written meanwhile: the runs copy the tables and leave the position where the reset put it.
    await source.capture();
    await source.snapshots();
    await source.capture();
    const reset = await source.state();
    expect(reset).toMatchObject({ epoch: 1 });
    expect(reset?.resync).toBeUndefined();

    // Written on this history and read by nobody; then the binlog starts again, a second later
    // (a file's creation time, which tells the histories apart, has second precision).
    await s.admin.query("UPDATE again.t SET v = 'unread' WHERE id <= 10; DELETE FROM again.t WHERE id > 30; INSERT INTO again.k VALUES ('b', 2)");
    await nextSecond();
    await s.admin.query('RESET MASTER');
    expect(await binlogEnd(s)).toEqual({ File: reset?.position?.file, Position: reset?.position?.pos });
    await s.admin.query("INSERT INTO again.t VALUES (100, 'new'); DELETE FROM again.k WHERE n = 1 LIMIT 1");
    const failure = (await source.capture().catch((error: Error & { code?: string }) => error)) as Error & { code?: string };
    expect(failure.code).toBe('POSITION_FOREIGN');
    expect(await source.state()).toMatchObject({ epoch: 1, position: reset?.position });
    expect((await source.cli(['state', 'reset', '--to', 'latest'])).code).toBe(0);
    expect(await source.state()).toMatchObject({ epoch: 2, resync: { reason: 'sluice state reset --to latest' } });
    await source.capture();
    await source.snapshots();
    await s.admin.query("UPDATE again.t SET v = 'after' WHERE id % 4 = 0");
    await source.capture();
    await expectVerified(source, ['again.k', 'again.t']);
    await expectIcebergEqual(source, s, ['k', 't'], 'again');
  });

  it('the same over a slow link (every reply 100 ms late, as from Lambda to another zone), with no run between the resets: `state reset --to latest` alone sees the binlog started again and copies every table', async () => {
    const s = a as Server;
    const link = await slowProxy(new URL(s.instance.url), 100);
    try {
      const source = await sourceOn(link.url, 'slow', s.env);
      await s.admin.query('CREATE DATABASE slow; CREATE TABLE slow.t (id INT PRIMARY KEY, v VARCHAR(20))');
      await source.capture();
      await s.admin.query(`INSERT INTO slow.t VALUES ${rowsOf(1, 20, (i) => `v${i}`)}`);
      await source.capture();
      await nextSecond();
      await s.admin.query('RESET MASTER');
      expect((await source.cli(['state', 'reset', '--to', 'latest'])).code).toBe(0);
      await source.capture();
      await source.snapshots();
      expect(await source.state()).toMatchObject({ epoch: 1 });
      // Written on this history and read by nobody; the binlog starts again at the same offset.
      await s.admin.query("UPDATE slow.t SET v = 'unread' WHERE id <= 5; DELETE FROM slow.t WHERE id > 15");
      await nextSecond();
      await s.admin.query('RESET MASTER');
      expect((await source.cli(['state', 'reset', '--to', 'latest'])).code).toBe(0);
      expect(await source.state()).toMatchObject({ epoch: 2, resync: { reason: 'sluice state reset --to latest' } });
      await source.capture();
      await source.snapshots();
      await source.capture();
      await expectVerified(source, ['slow.t']);
    } finally {
      await link.close();
    }
  });

  it('SLUICE_ON_HISTORY_CHANGE=stop: a failover to a promoted replica whose binlog numbers lie below the old primary’s stops with POSITION_FOREIGN, and `state reset --to gtid:` reads the unread tail from the replica, exactly once, in order', async () => {
    // A primary of its own: on MariaDB the replica replays its whole binlog, which the other tests reset.
    const [primary, replica] = await pair();
    try {
      const source = await sourceOn(primary.instance.url, 'fo', { ...primary.env, SLUICE_ON_HISTORY_CHANGE: 'stop' });
      await primary.admin.query('CREATE DATABASE fo; USE fo; CREATE TABLE fo.t (id INT PRIMARY KEY, v VARCHAR(20)); CREATE TABLE fo.k (v VARCHAR(5), n INT)');
      await source.capture();
      const { File: first } = await binlogEnd(primary);
      await primary.admin.query(`INSERT INTO fo.t VALUES ${rowsOf(1, 100, (i) => `v${i}`)}`);
      for (let round = 1; round <= 3; round++) {
        await primary.admin.query(
          `UPDATE fo.t SET v = 'r${round}' WHERE id % 3 = ${round % 3}; DELETE FROM fo.t WHERE id % 11 = ${round}; INSERT INTO fo.k VALUES ('a', ${round}), ('a', ${round}); FLUSH BINARY LOGS`,
        );
        await source.capture();
      }
      // The unread tail: committed on the primary and copied by the replica, never read by sluice.
      await primary.admin.query("UPDATE fo.t SET v = 'tail' WHERE id % 5 = 0; DELETE FROM fo.t WHERE id % 13 = 0; DELETE FROM fo.k WHERE n = 1 LIMIT 1");
      await caughtUp(primary, replica);
      await promote(replica);
      const stored = await source.state();
      expect(stored?.position?.file).toBe(fileAfter(first, 3));
      // What the message offers: every MariaDB domain's last GTID, or MySQL's set executed.
      const gtids = kind === 'mysql' ? stored?.position?.gtidSet : stored?.position?.gtidPos;
      if (kind === 'mariadb') expect(gtids).toBe(await one(primary, `SELECT BINLOG_GTID_POS('${fileAfter(first, 3)}', 4) AS v`));
      else expect(gtids).toMatch(/^[\da-f-]{36}:\d+-\d+$/);
      const before = await source.seqs();

      // The endpoint now leads to the promoted replica (its own binlog, at binlog.000001): the
      // setting keeps the decision with the operator, and the message offers the GTIDs read.
      source.moveTo(replica.instance.url, replica.env);
      const failure = (await source.capture().catch((error: Error & { code?: string }) => error)) as Error & { code?: string };
      expect(failure.code).toBe('POSITION_FOREIGN');
      expect(offered(failure.message)).toBe(`gtid:${gtids}`);
      expect(await source.state()).toMatchObject({ epoch: 0, position: stored?.position });
      expect(source.recorded.metrics.filter((m) => m.name === 'Repositions')).toEqual([]);
      expect((await source.cli(['state', 'reset', '--to', `gtid:${gtids}`])).code).toBe(0);
      expect(await source.state()).toMatchObject({ epoch: 1 });
      expect((await source.state())?.resync).toBeUndefined();
      expect((await source.state())?.lastReposition).toBeUndefined();
      await replica.admin.query("UPDATE fo.t SET v = 'after' WHERE id % 4 = 0; INSERT INTO fo.k VALUES ('b', 9)");
      await source.capture();
      expect((await source.state())?.position?.file).toBe('binlog.000001');
      expect(await source.clients.snapshots.activeJobs(source.config.sourceId)).toEqual([]); // nothing was copied again
      // The tail and what followed, read from the replica, sort after everything read from the primary.
      const after = (await source.seqs()).filter((q) => !before.includes(q));
      expect(after.length).toBeGreaterThan(0);
      expect(after.every((q) => q > ([...before].sort().at(-1) ?? '') && q.startsWith('h000001.'))).toBe(true);

      await expectVerified(source, ['fo.k', 'fo.t']);
      await expectIcebergEqual(source, replica, ['k', 't'], 'fo');
    } finally {
      await Promise.all([stop(replica), stop(primary)]);
    }
  });

  it('a restore: another server whose data is the old one’s as of an earlier point, with a binlog of its own, behind the same endpoint; the recovery the error names leaves S3, verify and Iceberg equal to it (what was written after the restore point is gone), and every later event sorts after every earlier one', async () => {
    const [old, restored] = await Promise.all([server(), server()]);
    const at = await endpoint(old, restored);
    try {
      const source = await sourceOn(at.url, 'rs', at.env);
      await old.admin.query('CREATE DATABASE rs; CREATE TABLE rs.t (id INT PRIMARY KEY, v VARCHAR(20)); CREATE TABLE rs.k (v VARCHAR(5), n INT)');
      await source.capture();
      await old.admin.query(`INSERT INTO rs.t VALUES ${rowsOf(1, 60, (i) => `v${i}`)}; INSERT INTO rs.k VALUES ('a', 1), ('a', 1), ('b', 1)`);
      for (let round = 1; round <= 2; round++) {
        await old.admin.query(`UPDATE rs.t SET v = 'r${round}' WHERE id % 4 = ${round}; DELETE FROM rs.t WHERE id % 9 = ${round}; FLUSH BINARY LOGS`);
        await source.capture();
      }
      // The restore point: the backup the new server is made from.
      await restore(old, restored, 'rs');
      // Written after it on the old server, and read by sluice: gone from the restored server.
      await old.admin.query(
        `INSERT INTO rs.t VALUES ${rowsOf(900, 10, () => 'lost')}; UPDATE rs.t SET v = 'lost' WHERE id <= 10; DELETE FROM rs.t WHERE id BETWEEN 20 AND 30; INSERT INTO rs.k VALUES ('lost', 2); DELETE FROM rs.k WHERE v = 'b'`,
      );
      await source.capture();
      const before = await source.seqs();
      expect((await source.events()).filter((e) => e.table === 't' && Number(e.key.id) >= 900)).toHaveLength(10);

      // The endpoint now leads to the restored server, which takes writes.
      at.switchTo(restored);
      await restored.admin.query(`UPDATE rs.t SET v = 'restored' WHERE id % 5 = 0; INSERT INTO rs.t VALUES ${rowsOf(700, 5, () => 'restored')}`);
      const failure = (await source.capture().catch((error: Error & { code?: string }) => error)) as Error & { code?: string };
      expect(failure.code).toBe('POSITION_FOREIGN');
      expect(offered(failure.message)).toBe('latest');
      expect(await source.state()).toMatchObject({ epoch: 0 });

      expect((await source.cli(['state', 'reset', '--to', 'latest'])).code).toBe(0);
      expect(await source.state()).toMatchObject({ epoch: 1, resync: { reason: 'sluice state reset --to latest' } });
      await restored.admin.query("INSERT INTO rs.k VALUES ('c', 3); DELETE FROM rs.t WHERE id = 700");
      await source.capture();
      await source.snapshots();
      await restored.admin.query("UPDATE rs.t SET v = 'after' WHERE id % 7 = 0; INSERT INTO rs.k VALUES ('d', 4)");
      await source.capture();

      const after = (await source.seqs()).filter((q) => !before.includes(q));
      expect(after.length).toBeGreaterThan(0);
      expect(after.every((q) => q > ([...before].sort().at(-1) ?? '') && q.startsWith('h000001.'))).toBe(true);
      await expectVerified(source, ['rs.k', 'rs.t']);
      expect((await source.cli(['verify'])).code).toBe(0);
      await expectIcebergEqual(source, restored, ['k', 't'], 'rs');
    } finally {
      await at.close();
      await Promise.all([stop(restored), stop(old)]);
    }
  });
});
