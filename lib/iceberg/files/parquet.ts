import { createWriteStream, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { narrowDecimals, needsNarrowing } from './decimal-width.ts';
import type { IcebergField, IcebergSchema, MappedField } from './schema.ts';
import { parquetName } from './schema.ts';
import { duckTypeOf } from './types.ts';

/*
 * DuckDB does the row work: it parses the change log's JSON text exactly (typed by the column
 * mapping), reads existing Parquet files projected by field id, applies deletes, and writes Parquet
 * with Iceberg field ids. Inside the workspace every column is named `c<field id>`, so names that
 * SQL or Parquet dislike never matter and a renamed column is the same column.
 */

/** Rows as JSON object text, one per item (sluice's value encoding). */
export type Lines = Iterable<string> | AsyncIterable<string>;

export const col = (id: number) => `"c${id}"`;
const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;
const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** A Parquet file written into the workspace. */
export interface WrittenFile {
  path: string;
  records: number;
  bytes: number;
}

/** One DuckDB database and a scratch folder, for one staging operation. */
export class Workspace implements AsyncDisposable {
  private constructor(
    private readonly instance: DuckDBInstance,
    private readonly connection: DuckDBConnection,
    readonly dir: string,
  ) {}

  static async open(parent: string = tmpdir()): Promise<Workspace> {
    const dir = mkdtempSync(join(parent, 'sluice-iceberg-'));
    const instance = await DuckDBInstance.create(':memory:', { temp_directory: join(dir, 'spill') });
    const connection = await instance.connect();
    return new Workspace(instance, connection, dir);
  }

  async run(sql: string): Promise<void> {
    await this.connection.run(sql);
  }

  async rows(sql: string): Promise<Record<string, unknown>[]> {
    return (await this.connection.runAndReadAll(sql)).getRowObjects() as Record<string, unknown>[];
  }

  async count(sql: string): Promise<number> {
    return Number((await this.rows(`SELECT count(*) AS n FROM (${sql})`))[0]?.n ?? 0);
  }

  /** Writes `lines` to a JSON Lines file in the workspace (with back-pressure) and returns its path. */
  async spool(name: string, lines: Lines): Promise<{ path: string; lines: number }> {
    const path = join(this.dir, `${name}.jsonl`);
    const stream = createWriteStream(path);
    let count = 0;
    for await (const line of lines) {
      count++;
      if (!stream.write(`${line}\n`)) await new Promise<void>((resolve) => stream.once('drain', () => resolve()));
    }
    await new Promise<void>((resolve, reject) => stream.end((error?: Error | null) => (error ? reject(error) : resolve())));
    return { path, lines: count };
  }

  /**
   * Creates `table` (columns `c<id>`) from a JSON Lines file of sluice rows. Returns, per column
   * whose mapping can turn a value into NULL (zero dates), how many values did.
   */
  async loadJson(table: string, path: string, fields: readonly MappedField[]): Promise<Record<string, number>> {
    const columns = fields.map((f) => `${literal(f.source)}: ${literal(f.mapping.json)}`).join(', ');
    await this.run(
      `CREATE TEMP TABLE ${table}_json AS SELECT * FROM read_json(${literal(path)}, format = 'newline_delimited', columns = {${columns}}, maximum_object_size = 268435456)`,
    );
    await this.run(
      `CREATE TEMP TABLE ${table} AS SELECT ${fields.map((f) => `${f.mapping.convert(ident(f.source))} AS ${col(f.id)}`).join(', ')} FROM ${table}_json`,
    );
    const lossy = fields.filter((f) => f.mapping.lossy);
    const nulled: Record<string, number> = {};
    if (lossy.length) {
      const counts = (
        await this.rows(
          `SELECT ${lossy.map((f, i) => `count(*) FILTER (WHERE ${ident(f.source)} IS NOT NULL AND ${f.mapping.convert(ident(f.source))} IS NULL) AS n${i}`).join(', ')} FROM ${table}_json`,
        )
      )[0];
      lossy.forEach((f, i) => {
        const n = Number(counts?.[`n${i}`] ?? 0);
        if (n) nulled[f.name] = n;
      });
    }
    await this.run(`DROP TABLE ${table}_json`);
    return nulled;
  }

  /**
   * Creates `table` from Parquet files, each projected onto `fields` by field id (a column the file
   * does not have reads as NULL, a promoted column is cast), with the file's data sequence number
   * in `_seq` and, with `positions`, the file's location (`uri`) in `_file` and the row's position
   * in it in `_pos` (what position deletes name). `files` may be empty.
   */
  async loadParquet(
    table: string,
    files: readonly { path: string; seq: number; uri?: string }[],
    fields: readonly IcebergField[],
    /** `where`: a condition on the `c<id>` columns, applied per file (DuckDB prunes row groups by it). */
    options: { positions?: boolean; where?: string } = {},
  ): Promise<void> {
    const extra = (file?: { uri?: string }) =>
      options.positions ? `, ${file ? literal(file.uri ?? '') : 'NULL::VARCHAR'} AS _file, ${file ? 'file_row_number' : 'NULL::BIGINT'} AS _pos` : '';
    const empty = `SELECT ${[...fields.map((f) => `NULL::${duckTypeOf(f.type)} AS ${col(f.id)}`), 'NULL::BIGINT AS _seq'].join(', ')}${extra()} WHERE false`;
    const parts = [empty];
    for (const file of files) {
      const ids = new Map<number, string>();
      for (const row of await this.rows(`SELECT name, field_id FROM parquet_schema(${literal(file.path)}) WHERE field_id IS NOT NULL`))
        ids.set(Number(row.field_id), String(row.name));
      const projection = fields.map((f) => {
        const name = ids.get(f.id);
        return name === undefined ? `NULL::${duckTypeOf(f.type)} AS ${col(f.id)}` : `CAST(${ident(name)} AS ${duckTypeOf(f.type)}) AS ${col(f.id)}`;
      });
      const read = options.positions ? `read_parquet(${literal(file.path)}, file_row_number = true)` : `read_parquet(${literal(file.path)})`;
      const part = `SELECT ${projection.join(', ')}, ${file.seq}::BIGINT AS _seq${extra(file)} FROM ${read}`;
      parts.push(options.where ? `SELECT * FROM (${part}) WHERE ${options.where}` : part);
    }
    await this.run(`CREATE OR REPLACE TEMP TABLE ${table} AS ${parts.join(' UNION ALL ')}`);
  }

  /**
   * Writes `select` (columns `c<id>` for every field of `schema`) to a Parquet file with Iceberg
   * field ids and the `iceberg.schema` key-value metadata, rows sorted (by the `first` field ids,
   * then every other field) so that the same rows always give the same bytes. DECIMAL columns of 19
   * to 35 digits (36 to 38 need all 16 bytes) are then cut to the spec's minimum width (DuckDB
   * writes them 16 bytes wide); files without one are DuckDB's bytes as they are.
   */
  async writeParquet(select: string, name: string, schema: IcebergSchema, first: readonly number[] = []): Promise<WrittenFile> {
    const path = join(this.dir, name);
    const names = uniqueParquetNames(schema.fields);
    const projection = schema.fields.map((f) => `${col(f.id)} AS ${ident(names.get(f.id) as string)}`).join(', ');
    const order = [...first, ...schema.fields.map((f) => f.id).filter((id) => !first.includes(id))].map(col).join(', ');
    const fieldIds = schema.fields.map((f) => `${literal(names.get(f.id) as string)}: ${f.id}`).join(', ');
    await this.run(
      `COPY (SELECT ${projection} FROM (${select}) ORDER BY ${order}) TO ${literal(path)} (FORMAT parquet, COMPRESSION zstd, ` +
        `FIELD_IDS {${fieldIds}}, KV_METADATA {'iceberg.schema': ${literal(JSON.stringify(schema))}})`,
    );
    if (schema.fields.some((f) => needsNarrowing(f.type))) narrowDecimals(path);
    const records = Number((await this.rows(`SELECT num_rows AS n FROM parquet_file_metadata(${literal(path)})`))[0]?.n ?? 0);
    return { path, records, bytes: statSync(path).size };
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.connection.closeSync();
    this.instance.closeSync();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Parquet column names: sanitized like Iceberg's Java writer, made unique by field id if two collide. */
function uniqueParquetNames(fields: readonly IcebergField[]): Map<number, string> {
  const names = new Map<number, string>();
  const taken = new Set<string>();
  for (const field of fields) {
    let name = parquetName(field.name);
    if (taken.has(name)) name = `${name}_${field.id}`;
    taken.add(name);
    names.set(field.id, name);
  }
  return names;
}

/** SQL for a row's bucket among `buckets`: a stable hash (MD5 of the values' text) of the `ids` columns. */
export function bucketExpression(ids: readonly number[], buckets: number): string {
  if (buckets <= 1 || ids.length === 0) return '0';
  const values = ids.map((id) => `coalesce(CAST(${col(id)} AS VARCHAR), chr(30))`).join(', ');
  return `CAST(md5_number(concat_ws(chr(31), ${values})) % ${buckets} AS INTEGER)`;
}
