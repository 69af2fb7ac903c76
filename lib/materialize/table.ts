import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';
import type { DuckDBConnection } from '@duckdb/node-api';
import { type TableRef, tableKey } from '../core/table-ref.ts';
import type { Manifest } from '../format/manifest.ts';
import { ChangeLog } from './change-log.ts';
import { downloadObjects, type EventFiles, loadEventsSql } from './events.ts';
import { loadHistory, type ManifestShape, TableHistory, unversionedHistory } from './history.ts';
import { type Materialized, materializeRule } from './rule.ts';

/**
 * Reading tables from the output: which objects hold a table (the keys its committed manifests
 * list for it, nothing else is read), its schema history, and the rule over them.
 */

export interface OutputSource {
  readonly s3: S3Client;
  readonly bucket: string;
  readonly prefix: string;
  readonly sourceId: string;
}

/** What the committed manifests say about one table. */
export interface OutputTable {
  readonly table: TableRef;
  /** Keys of its data objects (binlog commits and snapshot pages). */
  readonly keys: string[];
  /** Its newest shape in a manifest (format-v1 output has no schema history; this stands in for it). */
  shape?: ManifestShape;
}

/** A manifest's shape of a table (v1 manifests are read in the v2 shape, see readManifest). */
const shapeIn = (manifest: Manifest, table: TableRef): ManifestShape | undefined => manifest.tables.find((t) => t.db === table.db && t.table === table.table);

/** Every table the committed output holds objects for, from the manifests (read once, in commit order). */
export async function outputTables(source: OutputSource): Promise<Map<string, OutputTable>> {
  const tables = new Map<string, OutputTable>();
  for await (const manifest of ChangeLog.over(source.s3, source).manifests()) {
    for (const object of manifest.objects) {
      const table = { db: object.db, table: object.table };
      const entry = tables.get(tableKey(table)) ?? { table, keys: [] };
      entry.keys.push(object.key);
      // Binlog manifests come in commit order: the last that describes the table has its newest shape.
      const shape = shapeIn(manifest, table);
      if (shape && (manifest.commit_seq !== undefined || !entry.shape)) entry.shape = shape;
      tables.set(tableKey(table), entry);
    }
  }
  return tables;
}

/** A table's history: the stored versions, or the synthesized version of format-v1 output. */
export async function tableHistory(source: OutputSource, entry: OutputTable): Promise<TableHistory | undefined> {
  const versions = await loadHistory(source.s3, source.bucket, source.prefix, source.sourceId, entry.table);
  if (versions.length) return new TableHistory(entry.table, versions, true);
  return entry.shape ? unversionedHistory(entry.table, entry.shape) : undefined;
}

export interface LoadedTable {
  readonly history: TableHistory;
  readonly files: EventFiles;
  /** The statement that loaded the events into `<prefix>_ev`. */
  readonly load: string;
}

/** Downloads a table's objects into `dir` and loads its events into DuckDB table `<prefix>_ev`. */
export async function loadTable(
  source: OutputSource,
  entry: OutputTable,
  duck: DuckDBConnection,
  dir: string,
  prefix: string,
): Promise<LoadedTable | undefined> {
  const history = await tableHistory(source, entry);
  if (!history) return undefined;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const files = await downloadObjects(source.s3, source.bucket, entry.keys, dir);
  const load = loadEventsSql(`${prefix}_ev`, files);
  await duck.run(load);
  return { history, files, load };
}

/** Loads a table and applies the rule: its rows in `<prefix>_state`. Undefined when the output knows nothing of it. */
export async function materializeTable(
  source: OutputSource,
  entry: OutputTable,
  duck: DuckDBConnection,
  dir: string,
  prefix: string,
): Promise<(Materialized & { load: string; files: EventFiles }) | undefined> {
  const loaded = await loadTable(source, entry, duck, dir, prefix);
  if (!loaded) return undefined;
  const result = await materializeRule(duck, loaded.history, `${prefix}_ev`, prefix);
  return { ...result, load: loaded.load, files: loaded.files };
}

/** The working directory of one table under `work`. */
export const tableDir = (work: string, n: number) => join(work, `t${n}`);
