import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';
import { DuckDBInstance } from '@duckdb/node-api';
import type { Config } from '../config/config.ts';
import { formatTableRef, type TableRef } from '../core/table-ref.ts';
import { ErrorCode, SluiceError } from '../errors.ts';
import { manifests } from './feed.ts';
import { download } from './files.ts';

/** `sluice materialize`: a table's current state from the output, as Parquet (typed from the manifests) or JSON Lines (the format's own encoding). */
export async function materialize(deps: { config: Config; s3: S3Client }, table: TableRef, outFile: string): Promise<number> {
  const format = outFile.endsWith('.parquet') ? 'parquet' : outFile.endsWith('.jsonl') ? 'jsonl' : undefined;
  if (!format) throw new SluiceError(ErrorCode.MATERIALIZE_FORMAT, `write to a .parquet or .jsonl file, not ${outFile}`);
  const work = mkdtempSync(join(tmpdir(), 'sluice-materialize-'));
  const db = await DuckDBInstance.create(join(work, 'm.duckdb'), { temp_directory: join(work, 'spill') });
  const duck = await db.connect();
  try {
    let files = 0;
    let columns: { name: string; type: string }[] = [];
    for await (const manifest of manifests(deps.s3, deps.config.bucket, deps.config.prefix, deps.config.sourceId)) {
      for (const object of manifest.objects) {
        if (object.db === table.db && object.table === table.table)
          await download(deps.s3, deps.config.bucket, object.key, join(work, `o-${files++}.jsonl.gz`));
      }
      // Binlog manifests come in commit order: the last one that mentions the table has its newest shape.
      const shape = manifest.tables.find((t) => t.db === table.db && t.table === table.table);
      if (shape && manifest.commit_seq !== undefined) columns = shape.columns;
      else if (shape && !columns.length) columns = shape.columns;
    }
    if (files === 0) throw new SluiceError(ErrorCode.MATERIALIZE_EMPTY, `the output has no events for ${formatTableRef(table)}`);
    await duck.run(`CREATE TABLE rows AS SELECT arg_max(after, seq) AS after, arg_max(op, seq) AS op FROM read_json('${join(work, 'o-*.jsonl.gz')}', format = 'newline_delimited',
      compression = 'gzip', columns = {op: 'VARCHAR', key: 'JSON', after: 'JSON', seq: 'VARCHAR'}) GROUP BY json(key)::VARCHAR`);
    const live = join(work, 'live.jsonl');
    await duck.run(`COPY (SELECT after FROM rows WHERE op <> 'd') TO '${live}' (FORMAT csv, HEADER false, QUOTE '', ESCAPE '', DELIMITER '\x01')`);
    const target = outFile.replaceAll("'", "''");
    // Typed from the manifest's schema: type inference would read unsigned BIGINTs beyond 2^63 as doubles.
    const schema = columns.map((c) => `${JSON.stringify(c.name).replaceAll("'", "''")}: '${duckType(c.type)}'`).join(', ');
    if (format === 'jsonl')
      copyFileSync(live, outFile); // the rows as the format encodes them: lossless
    else await duck.run(`COPY (SELECT * FROM read_json('${live}', format = 'newline_delimited', columns = {${schema}})) TO '${target}' (FORMAT parquet)`);
    return Number((await duck.runAndReadAll(`SELECT count(*) AS n FROM rows WHERE op <> 'd'`)).getRowObjects()[0]?.n ?? 0);
  } finally {
    duck.closeSync();
    db.closeSync();
    rmSync(work, { recursive: true, force: true });
  }
}

/** DuckDB column type for a manifest type; temporal types stay text, because MySQL allows zero dates. */
function duckType(sqlType: string): string {
  const unsigned = sqlType.endsWith(' unsigned');
  const base = sqlType.replace(' unsigned', '');
  const decimal = /^decimal\((\d+),(\d+)\)$/.exec(base);
  if (decimal) return Number(decimal[1]) <= 38 ? `DECIMAL(${decimal[1]},${decimal[2]})` : 'VARCHAR';
  switch (base) {
    case 'tinyint':
    case 'smallint':
    case 'mediumint':
    case 'int':
      return 'BIGINT';
    case 'bigint':
      return unsigned ? 'UBIGINT' : 'BIGINT';
    case 'year':
      return 'INTEGER';
    case 'float':
      return 'FLOAT';
    case 'double':
      return 'DOUBLE';
    default:
      return base.startsWith('bit') ? 'UBIGINT' : 'VARCHAR';
  }
}
