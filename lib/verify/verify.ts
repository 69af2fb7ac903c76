import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';
import { DuckDBInstance } from '@duckdb/node-api';
import { type Config, tableFilter } from '../config/config.ts';
import type { BinlogPosition } from '../core/position.ts';
import { type TableRef, tableKey } from '../core/table-ref.ts';
import { ErrorCode, SluiceError } from '../errors.ts';
import { seqAfter } from '../format/seq.ts';
import { listTables } from '../source/mysql/schema.ts';
import { pagingConnection } from '../source/mysql/snapshot-reader.ts';
import { mysqlTarget } from '../source/mysql/target.ts';
import type { SnapshotStore } from '../state/snapshot-store.ts';
import type { StateStore } from '../state/store.ts';
import { compareTable, loadEvents, loadSkipped, type TableVerdict } from './compare.ts';
import { downloadOutput } from './files.ts';
import { readAtKnownPosition, writeChangedKeys, writeTableRows } from './mysql-read.ts';

/*
 * `sluice verify`: does S3 hold exactly what MySQL holds?
 *
 * Method, safe on a live source. MySQL is read inside one consistent-snapshot transaction whose
 * binlog position S the server reports (MariaDB: binlog_snapshot_file/position). The output is
 * materialized by the format's rule (greatest seq per key; `d` = absent). A key is compared only
 * if both sides reflect the same point in its history:
 *   - keys with output events after S are skipped (the output is ahead of the MySQL read);
 *   - keys changed between the output's stored position O and S are skipped (the output has not
 *     caught up with them yet): found by scanning the binlog from O to S.
 * Every other key's last change is before min(O, S) on both sides, so they must agree exactly.
 * Values are compared as JSON normalized by DuckDB on both sides, so encoding is compared exactly.
 * Columns an output row does not have (added by a later ALTER TABLE, never written since) are not
 * compared. Both sides are spilled to disk in DuckDB, so tables larger than memory work.
 *
 *   files.ts       download the output        mysql-read.ts   read MySQL at S, the keys changing
 *   compare.ts     the per-table comparison   verify.ts       the steps, in order
 */

export type { TableVerdict } from './compare.ts';

export interface Verdict {
  ok: boolean;
  mysqlPosition: BinlogPosition;
  outputPosition?: BinlogPosition;
  tables: TableVerdict[];
}

export async function verify(
  deps: { config: Config; s3: S3Client; store: StateStore; snapshots?: SnapshotStore },
  options: { tables?: readonly TableRef[]; examples?: number; workDir?: string } = {},
): Promise<Verdict> {
  const { config, s3 } = deps;
  const running = await deps.snapshots?.latestJob(config.sourceId);
  if (running && running.status !== 'done') {
    throw new SluiceError(
      ErrorCode.VERIFY_SNAPSHOT_RUNNING,
      `snapshot ${running.id} is still copying; verify once it completes (sluice status shows its progress), because its pages may see changes newer than the comparison point`,
    );
  }
  const work = options.workDir ?? mkdtempSync(join(tmpdir(), 'sluice-verify-'));
  const db = await DuckDBInstance.create(join(work, 'verify.duckdb'), { temp_directory: join(work, 'spill'), memory_limit: '512MB' });
  const duck = await db.connect();
  const target = await mysqlTarget(config);
  const reader = pagingConnection(target);
  try {
    await reader.init();
    // 1. The output: every committed object (binlog and snapshot), downloaded once.
    const files = await downloadOutput({ s3, bucket: config.bucket, prefix: config.prefix, sourceId: config.sourceId }, work, 'out');
    const outputPosition = (await deps.store.get(config.sourceId))?.position;
    await loadEvents(duck, files === 0 ? undefined : join(work, 'out-*.jsonl.gz'));

    // 2. MySQL, inside one consistent snapshot whose binlog position the server reports.
    const mysqlPosition = await readAtKnownPosition(reader);
    const names = options.tables?.length ? options.tables : await listTables(reader.sql, tableFilter(config));

    // 3. Keys the two sides cannot both reflect: changed between the output's position and S.
    const changing = join(work, 'skipped.jsonl');
    await writeChangedKeys(target, outputPosition, mysqlPosition, new Set(names.map(tableKey)), changing);
    await loadSkipped(duck, changing);

    // 4. Table by table.
    const tables: TableVerdict[] = [];
    for (const { db: dbName, table } of names) {
      const liveFile = join(work, `mysql-${tables.length}.jsonl`);
      const mysqlRows = await writeTableRows(reader, config, dbName, table, liveFile);
      tables.push(await compareTable(duck, { db: dbName, table, mysqlRows, liveFile, after: seqAfter(mysqlPosition), examples: options.examples ?? 5 }));
    }
    await reader.sql.query('COMMIT');
    return { ok: tables.every((t) => t.missing + t.extra + t.differing === 0), mysqlPosition, outputPosition, tables };
  } finally {
    await reader.end();
    duck.closeSync();
    db.closeSync();
    if (!options.workDir) rmSync(work, { recursive: true, force: true });
  }
}
