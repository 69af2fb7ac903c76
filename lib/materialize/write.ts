import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';
import { DuckDBInstance } from '@duckdb/node-api';
import type { Config } from '../config/config.ts';
import { formatTableRef, type TableRef, tableKey } from '../core/table-ref.ts';
import { ErrorCode, SluiceError } from '../errors.ts';
import type { SchemaColumn, SchemaVersion } from '../schema/version.ts';
import { sqlString } from './projection.ts';
import { materializeTable, outputTables, tableDir } from './table.ts';

/** What `sluice materialize` did. */
export interface MaterializeResult {
  readonly rows: number;
  /** The table was dropped, renamed away or left the captured set: no rows. */
  readonly gone: boolean;
  readonly version: SchemaVersion;
  /** Every statement run, in order: load the events, the rule, the export. */
  readonly statements: readonly string[];
  /** The same, reading the table's objects in place (`s3://…`, DuckDB's httpfs) instead of the downloaded copies: what `--sql` prints. */
  readonly printable: readonly string[];
}

/**
 * `sluice materialize`: a table's current rows by the rule, as Parquet (typed from the current
 * schema version) or JSON Lines (each row's exact text in the format's encoding), keyless rows
 * repeated as often as they occur. Only the table's own objects are read; DuckDB spills to disk.
 */
export async function materialize(deps: { config: Config; s3: S3Client }, table: TableRef, options: { out?: string }): Promise<MaterializeResult> {
  const out = options.out;
  const format = out === undefined ? undefined : out.endsWith('.parquet') ? 'parquet' : out.endsWith('.jsonl') ? 'jsonl' : null;
  if (format === null) throw new SluiceError(ErrorCode.MATERIALIZE_FORMAT, `write to a .parquet or .jsonl file, not ${out}`);
  const source = { s3: deps.s3, bucket: deps.config.bucket, prefix: deps.config.prefix, sourceId: deps.config.sourceId };
  const entry = (await outputTables(source)).get(tableKey(table));
  if (!entry) throw new SluiceError(ErrorCode.MATERIALIZE_EMPTY, `the output has no events for ${formatTableRef(table)}`);
  const work = mkdtempSync(join(tmpdir(), 'sluice-materialize-'));
  const db = await DuckDBInstance.create(join(work, 'm.duckdb'), { temp_directory: join(work, 'spill') });
  const duck = await db.connect();
  try {
    const result = await materializeTable(source, entry, duck, tableDir(work, 0), 'm');
    if (!result) throw new SluiceError(ErrorCode.MATERIALIZE_EMPTY, `the output has no schema for ${formatTableRef(table)}`);
    const statements = [result.load, ...result.statements];
    if (out !== undefined && format) {
      const copy = exportSql(result.state, result.version, out, format);
      statements.push(copy);
      await duck.run(copy);
    }
    // The objects of one table share their folder (tables/<db-seg>/<table-seg>/).
    const folder = entry.keys[0]?.slice(0, entry.keys[0].lastIndexOf('/') + 1);
    const local = result.files.glob ? sqlString(result.files.glob) : undefined;
    const printable = statements.map((sql) => (local ? sql.replace(local, sqlString(`s3://${deps.config.bucket}/${folder}*.jsonl.gz`)) : sql));
    return { rows: result.rows, gone: result.gone, version: result.version, statements, printable };
  } finally {
    duck.closeSync();
    db.closeSync();
    rmSync(work, { recursive: true, force: true });
  }
}

/** The COPY that writes the state's rows, each repeated `n` times. */
export function exportSql(state: string, version: SchemaVersion, out: string, format: 'parquet' | 'jsonl'): string {
  const rows = `FROM ${state}, range(${state}.n)`;
  if (format === 'jsonl') return `COPY (SELECT row ${rows}) TO ${sqlString(out)} (FORMAT csv, HEADER false, QUOTE '', ESCAPE '', DELIMITER E'\\x01')`;
  // Typed from the version: type inference would read unsigned BIGINTs beyond 2^63 as doubles.
  const struct = JSON.stringify(Object.fromEntries(version.columns.map((c) => [c.name, duckType(c)])));
  return `COPY (SELECT unnest(from_json(row, ${sqlString(struct)})) ${rows}) TO ${sqlString(out)} (FORMAT parquet)`;
}

/** DuckDB column type for a column; dates and times stay text (MySQL allows zero dates), binary stays base64. */
export function duckType(column: Pick<SchemaColumn, 'type' | 'kind'>): string {
  const unsigned = column.type.endsWith(' unsigned');
  switch (column.kind) {
    case 'int':
      return column.type.startsWith('bigint') && unsigned ? 'UBIGINT' : 'BIGINT';
    case 'decimal': {
      const m = /^decimal\((\d+),(\d+)\)/.exec(column.type);
      return m && Number(m[1]) <= 38 ? `DECIMAL(${m[1]},${m[2]})` : 'VARCHAR';
    }
    case 'year':
      return 'INTEGER';
    case 'float':
      return 'FLOAT';
    case 'double':
      return 'DOUBLE';
    case 'bit':
      return 'UBIGINT';
    default:
      return 'VARCHAR';
  }
}
