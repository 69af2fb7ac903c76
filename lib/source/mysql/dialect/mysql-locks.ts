import type { BinlogPosition } from '../../../core/position.ts';
import type { TableRef } from '../../../core/table-ref.ts';
import { ErrorCode, SluiceError } from '../../../errors.ts';
import type { SqlConnection } from '../server.ts';
import { busy, denied, LOCK_WAIT_SECONDS, LOCK_WAIT_TIMEOUT, quoted, rows, statusPosition } from './common.ts';
import type { SnapshotPoint } from './dialect.ts';

/**
 * MySQL's consistent-snapshot point. MySQL (unlike MariaDB) does not say where a consistent
 * snapshot reads in the binlog, so it is pinned by a lock that stops every commit that could fall
 * between the read and the binlog position read with it. Why a lock is needed at all: in MySQL's
 * group commit a transaction is written to the binlog in the flush stage, the binlog lock is
 * released, and only later (sync, then commit stage) is it committed in InnoDB and added to
 * gtid_executed. Between the two it lies before the binlog end P while no read view sees it, so a
 * position merely unchanged around START TRANSACTION (performance_schema.log_status read before and
 * after, as sluice did) proves nothing: the read lacks that transaction and the stream starts after
 * it. Reading log_status is therefore not used (it also reports nothing with performance_schema=OFF,
 * RDS's default on small instance classes). The two locks, in order:
 *
 *   1. FLUSH TABLES WITH READ LOCK (RELOAD), held around START TRANSACTION WITH CONSISTENT SNAPSHOT
 *      and the binlog status, as mysqldump --single-transaction --source-data does. FTWRL takes the
 *      global read lock and then the commit lock, which every committing transaction holds from
 *      before its binlog write until its engine commit is done: once it is granted no transaction is
 *      between the two and none can start committing. So at that moment the committed transactions
 *      are exactly those before the binlog end P, the read view opened then holds exactly them, and
 *      START TRANSACTION keeps the global read lock (only LOCK TABLES locks are released by it);
 *      UNLOCK TABLES then releases it without ending the transaction. Held for milliseconds, but
 *      it first waits for running statements (lock_wait_timeout 5 s). RDS and Aurora refuse it.
 *   2. LOCK TABLES <the tables read> READ (LOCK TABLES + SELECT; allowed on RDS and Aurora, where
 *      Debezium too falls back to read locks on the captured tables held until they are read —
 *      its FLUSH TABLES <list> WITH READ LOCK also needs RELOAD), the binlog status read while holding it, then the tables read
 *      while still holding it, outside any transaction (START TRANSACTION would release the locks),
 *      then UNLOCK TABLES. A transaction that changes a table holds its metadata lock (SHARED_WRITE)
 *      until its commit has ended, engine commit included, and the READ lock conflicts with it:
 *      when the lock is granted, every transaction that changed these tables has committed — and
 *      written the binlog before that, so it lies before P — and none can change them until
 *      UNLOCK TABLES. Each statement's read then sees exactly the tables at P. Sound for those
 *      tables only, which is all the caller reads; writers to them wait while they are read.
 *   3. Otherwise a refusal naming both grants.
 *
 * LOCK INSTANCE FOR BACKUP is no substitute: it blocks DDL and file operations but lets DML commit.
 * A lock that waits out lock_wait_timeout is SNAPSHOT_BUSY (retriable), never a refusal.
 */
export async function mysqlSnapshotPoint(conn: SqlConnection, binlogStatus: string, tables: readonly TableRef[]): Promise<SnapshotPoint> {
  await conn.query(`SET SESSION lock_wait_timeout = ${LOCK_WAIT_SECONDS}`);
  let globalRefused: string | undefined;
  try {
    await conn.query('FLUSH TABLES WITH READ LOCK');
  } catch (error) {
    if ((error as { errno?: number }).errno === LOCK_WAIT_TIMEOUT) throw busy('FLUSH TABLES WITH READ LOCK', error);
    if (!denied(error)) throw error;
    globalRefused = (error as Error).message;
  }
  if (globalRefused === undefined) {
    try {
      await conn.query('START TRANSACTION WITH CONSISTENT SNAPSHOT');
      const position = await statusPosition(conn, binlogStatus).catch(async (error) => {
        await conn.query('ROLLBACK');
        throw error;
      });
      return { position, how: 'FLUSH TABLES WITH READ LOCK', end: async () => void (await conn.query('COMMIT')) };
    } finally {
      await conn.query('UNLOCK TABLES');
    }
  }
  // Nothing is read: no lock is needed for the point to be exact.
  if (!tables.length) return { position: await statusPosition(conn, binlogStatus), how: 'no tables read', end: async () => {} };
  // A table named twice in LOCK TABLES is an error (1066 ER_NONUNIQ_TABLE).
  const names = [...new Set(tables.map((t) => `${quoted(t.db)}.${quoted(t.table)}`))];
  const lock = `LOCK TABLES ${names.map((name) => `${name} READ`).join(', ')}`;
  try {
    await conn.query(lock);
  } catch (error) {
    if ((error as { errno?: number }).errno === LOCK_WAIT_TIMEOUT) throw busy('LOCK TABLES … READ', error);
    if (!denied(error)) throw error;
    return {
      refused: `MySQL does not report where a consistent snapshot reads in the binlog, so sluice pins it with a lock, and the user may run neither FLUSH TABLES WITH READ LOCK (${globalRefused}) nor LOCK TABLES on the tables read (${(error as Error).message}). Fix: GRANT RELOAD ON *.* TO '<user>'@'%'; (a global read lock held for milliseconds) or GRANT LOCK TABLES ON *.* TO '<user>'@'%'; (read locks on the tables read while they are read; RDS and Aurora refuse a global read lock but let their admin user grant LOCK TABLES: docs/RUNBOOK.md "MySQL versions")`,
    };
  }
  const unlock = async () => void (await conn.query('UNLOCK TABLES'));
  const position = await statusPosition(conn, binlogStatus).catch(async (error) => {
    await unlock();
    throw error;
  });
  return { position, how: 'LOCK TABLES … READ', end: unlock };
}

/** How long a settled binlog end waits for the commits in flight at it (WAIT_FOR_EXECUTED_GTID_SET's timeout). */
const COMMIT_WAIT_SECONDS = 5;

/**
 * MySQL's settled binlog end (`Dialect.settledEnd`). The binlog end alone is not one: in MySQL's
 * group commit a transaction is written to the binlog (flush stage, where SHOW MASTER STATUS sees
 * it), then synced, and only then committed in InnoDB; a read started in between lacks a
 * transaction that lies before the end. Measured on 8.0.31 with sync_binlog=0: 2% of the reads
 * that followed SHOW MASTER STATUS lacked a transaction before it with binlog_transaction_compression
 * ON (compressing widens the window), fewer without; every read with a sync delay. A snapshot page
 * read after such an end keeps the older row under a seq that sorts after the change (issue #30).
 *
 *   1. gtid_mode ON: a transaction owns its GTID from the flush stage until its engine commit is
 *      done (the commit stage adds it to gtid_executed only then). So after reading the end P, every
 *      transaction before P not yet committed is in @@GLOBAL.gtid_owned, and
 *      WAIT_FOR_EXECUTED_GTID_SET of that set returns once they are all committed. No lock, no
 *      privilege; it waits only for commits already under way (and for transactions that own a GTID
 *      set by gtid_next, which may be longer: COMMIT_WAIT_SECONDS, then SNAPSHOT_BUSY).
 *   2. Otherwise anonymous transactions leave no trace to wait for: the end is read while holding
 *      LOCK TABLES <tables> READ (a writer holds the table's metadata lock until its commit has
 *      ended, so once granted every change to the tables is committed), released at once; else
 *      under FLUSH TABLES WITH READ LOCK (no commit half-done); else SNAPSHOT_NO_POINT. Each waits at
 *      most lock_wait_timeout (5 s) and blocks the tables' writers meanwhile.
 */
export async function mysqlSettledEnd(conn: SqlConnection, binlogStatus: string, tables: readonly TableRef[]): Promise<BinlogPosition> {
  const end = await statusPosition(conn, binlogStatus);
  // Read after the end: every transaction before it is committed or still owns its GTID.
  const [gtids] = await rows<{ mode: string | null; owned: string | null }>(conn, 'SELECT @@GLOBAL.gtid_mode AS mode, @@GLOBAL.gtid_owned AS owned');
  if (String(gtids?.mode ?? '').toUpperCase() === 'ON') {
    // `uuid:gno#thread` per owned GTID; without the owners it is a GTID set.
    const owned = String(gtids?.owned ?? '').replace(/#\d+/g, '');
    if (!owned) return end;
    const [wait] = await rows<{ timedOut: number | string | null }>(conn, `SELECT WAIT_FOR_EXECUTED_GTID_SET(?, ${COMMIT_WAIT_SECONDS}) AS timedOut`, [owned]);
    if (Number(wait?.timedOut) === 0) return end;
    throw new SluiceError(
      ErrorCode.SNAPSHOT_BUSY,
      `transactions in the binlog before ${end.file}:${end.pos} (${owned}) did not finish committing within ${COMMIT_WAIT_SECONDS} s; a snapshot page waits for them so that it sees them. The next run tries again; a session that set gtid_next and keeps its transaction open holds it`,
      { retriable: true },
    );
  }
  if (!tables.length) return end;
  await conn.query(`SET SESSION lock_wait_timeout = ${LOCK_WAIT_SECONDS}`);
  const refusals: string[] = [];
  const names = [...new Set(tables.map((t) => `${quoted(t.db)}.${quoted(t.table)}`))];
  for (const lock of [`LOCK TABLES ${names.map((name) => `${name} READ`).join(', ')}`, 'FLUSH TABLES WITH READ LOCK']) {
    try {
      await conn.query(lock);
    } catch (error) {
      if ((error as { errno?: number }).errno === LOCK_WAIT_TIMEOUT) throw busy(lock.startsWith('LOCK') ? 'LOCK TABLES … READ' : lock, error);
      if (!denied(error)) throw error;
      refusals.push((error as Error).message);
      continue;
    }
    try {
      return await statusPosition(conn, binlogStatus);
    } finally {
      await conn.query('UNLOCK TABLES');
    }
  }
  throw new SluiceError(
    ErrorCode.SNAPSHOT_NO_POINT,
    `with gtid_mode ${gtids?.mode ?? 'OFF'} MySQL cannot say when the transactions before a binlog position have committed, so a snapshot page pins its position with a read lock held for the moment it is read, and the user may run neither LOCK TABLES on ${names.join(', ')} (${refusals[0]}) nor FLUSH TABLES WITH READ LOCK (${refusals[1]}). Fix: GRANT LOCK TABLES ON *.* TO '<user>'@'%'; or GRANT RELOAD ON *.* TO '<user>'@'%'; or run the server with gtid_mode=ON (no lock then): docs/RUNBOOK.md "MySQL versions"`,
  );
}
