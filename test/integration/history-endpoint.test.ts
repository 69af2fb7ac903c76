import { describe, expect, inject, it } from 'vitest';
import type { BinlogPosition } from '../../lib/core/position.ts';
import { stopProcess } from '../../lib/local/process.ts';
import {
  binlogEnd,
  caughtUp,
  creates,
  endpoint,
  expectIcebergEqual,
  expectVerified,
  once,
  pair,
  promote,
  rowsOf,
  type Source,
  sourceOn,
  stop,
} from '../support/history-source.ts';

/*
 * Another server behind the endpoint sluice reads, on private servers of the suite's flavor
 * (MariaDB; MySQL 8.0.31 under `npm run test:live-mysql`): a replica that copies its primary by GTID
 * (MariaDB MASTER_USE_GTID, MySQL auto-positioning) and is promoted. When it proves it carries every
 * transaction sluice read and every one after them, the run follows the transactions by itself
 * (lib/capture/follow.ts), exactly once, nothing copied again, and the output — by the format's
 * rule (verify), and as Iceberg tables — equals the new server. The cases only one flavor has
 * (MariaDB's GTID domains, MySQL's server_uuid) are test/integration/history-follow.test.ts and
 * test/live-mysql/history-follow.test.ts.
 */

const kind = inject('stackServer');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const fileNumber = (file: string) => Number(/\d+$/.exec(file)?.[0]);

describe(`another server behind the endpoint (private ${kind === 'mysql' ? 'MySQL' : 'MariaDB'})`, () => {
  it('a promoted replica without an unread tail: the run moves by GTID by itself, reads nothing twice, copies nothing again, and goes on with what the new server writes', async () => {
    const [primary, replica] = await pair();
    try {
      const source = await sourceOn(primary.instance.url, 'nt', primary.env);
      await primary.admin.query('CREATE DATABASE nt; CREATE TABLE nt.t (id INT PRIMARY KEY, v VARCHAR(20))');
      await source.capture();
      await primary.admin.query(`INSERT INTO nt.t VALUES ${rowsOf(1, 30, () => 'a')}; FLUSH BINARY LOGS; UPDATE nt.t SET v = 'b' WHERE id <= 10`);
      await source.capture();
      // Everything the primary wrote was read: the replica has nothing sluice has not.
      await caughtUp(primary, replica);
      await promote(replica);
      const before = await source.seqs();

      source.moveTo(replica.instance.url, replica.env);
      expect((await source.capture()).status).toBe('captured');
      const moved = await source.state();
      expect(moved?.epoch).toBe(1);
      expect(moved?.resync).toBeUndefined();
      expect(moved?.lastReposition?.to).toMatchObject({ serverId: 2 });
      expect(source.recorded.metrics.filter((m) => m.name === 'Repositions')).toEqual([{ name: 'Repositions', value: 1 }]);
      expect(await source.clients.snapshots.activeJobs(source.config.sourceId)).toEqual([]);
      expect(await source.seqs()).toEqual(before); // nothing read again

      await replica.admin.query("INSERT INTO nt.t VALUES (100, 'promoted'); UPDATE nt.t SET v = 'c' WHERE id = 1; DELETE FROM nt.t WHERE id = 2");
      expect((await source.capture()).status).toBe('captured');
      const after = (await source.seqs()).filter((q) => !before.includes(q));
      expect(after.length).toBe(3);
      expect(after.every((q) => q > ([...before].sort().at(-1) ?? '') && q.startsWith('h000001.'))).toBe(true);
      expect(once(await creates(source))).toEqual([]);
      await expectVerified(source, ['nt.t']);
      await expectIcebergEqual(source, replica, ['t'], 'nt');
    } finally {
      await Promise.all([stop(replica), stop(primary)]);
    }
  });

  it('a Blue/Green-style switch: another server behind an unchanged endpoint (same port), whose binlog has a file of the stored name with an event at the stored offset: its server_id (MariaDB) or the stream’s first event (MySQL) tells, and the run follows from there', async () => {
    const [primary, replica] = await pair();
    const at = await endpoint(primary, replica);
    try {
      const source = await sourceOn(at.url, 'sw', at.env);
      await primary.admin.query('CREATE DATABASE sw; USE sw; CREATE TABLE sw.t (id INT PRIMARY KEY, v VARCHAR(20))');
      await source.capture();
      await primary.admin.query(`INSERT INTO sw.t VALUES ${rowsOf(1, 50, () => 'a')}; FLUSH BINARY LOGS; UPDATE sw.t SET v = 'b' WHERE id <= 10`);
      await source.capture();
      await primary.admin.query("UPDATE sw.t SET v = 'tail' WHERE id > 40; INSERT INTO sw.t VALUES (99, 'tail')");
      await caughtUp(primary, replica);
      const stored = (await source.state()) as NonNullable<Awaited<ReturnType<Source['state']>>>;
      const file = stored.position?.file as string;
      const before = await source.seqs();

      // The old primary is gone; the endpoint now reaches the promoted replica.
      await stopProcess(primary.instance.pid);
      await promote(replica);
      at.switchTo(replica);
      // Its binlog has a file of the stored name too, created later, with an event boundary at its
      // end; say the stored offset were that one (as a Blue/Green target configured alike can have
      // it): before reading, nothing tells the two files apart.
      await sleep(1100);
      while ((await binlogEnd(replica)).File !== file) {
        expect(fileNumber((await binlogEnd(replica)).File)).toBeLessThan(fileNumber(file));
        await replica.admin.query('FLUSH BINARY LOGS');
      }
      const lease = await source.clients.store.acquireLease(source.config.sourceId, 'admin', Date.now() + 30_000, Date.now());
      await source.clients.store.overwrite(
        { sourceId: source.config.sourceId, owner: 'admin', expectVersion: lease.version, now: Date.now() },
        {
          position: { ...(stored.position as BinlogPosition), pos: (await binlogEnd(replica)).Position },
          history: stored.history,
          commitSeq: lease.commitSeq,
          epoch: 1,
        },
      );
      await source.clients.store.releaseLease(source.config.sourceId, 'admin');
      // The promoted server takes writes (a run at the binlog's end reads nothing, and checks nothing).
      await replica.admin.query("INSERT INTO sw.t VALUES (100, 'promoted')");

      expect((await source.capture()).status).toBe('captured');
      const moved = await source.state();
      expect(moved?.epoch).toBe(2);
      const name = file.replace('.', '\\.');
      // MySQL: the stream's first event (a server_uuid of its own, and the file created later);
      // MariaDB, which has no uuid, tells by the server_id recorded before reading.
      expect(moved?.lastReposition?.evidence).toMatch(
        kind === 'mysql'
          ? new RegExp(
              `^the position was recorded in a ${name} created at .*, on server_id 1 \\(server_uuid [^)]+\\); this server's \\(server_id 2, server_uuid [^)]+\\) ${name} was created at `,
            )
          : /^it was recorded on server_id 1; this server is server_id 2$/,
      );
      expect(moved?.lastReposition?.to).toMatchObject({ serverId: 2 });
      expect(await source.clients.snapshots.activeJobs(source.config.sourceId)).toEqual([]);
      expect(once(await creates(source))).toEqual([]);
      expect((await creates(source)).get(99)).toBe(1);
      await replica.admin.query("INSERT INTO sw.t VALUES (101, 'after')");
      await source.capture();
      // Read from the other server's file of the same name, at offsets below the stored one: later still.
      const after = (await source.seqs()).filter((q) => !before.includes(q));
      expect(after.length).toBeGreaterThan(0);
      expect(after.every((q) => q > ([...before].sort().at(-1) ?? '') && q.startsWith('h000002.'))).toBe(true);
      await expectVerified(source, ['sw.t']);
      await expectIcebergEqual(source, replica, ['t'], 'sw');
    } finally {
      await at.close();
      await Promise.all([stop(replica), stop(primary)]);
    }
  });
});
