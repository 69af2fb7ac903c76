import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { createGunzip } from 'node:zlib';
import type { S3Client } from '@aws-sdk/client-s3';
import { s3ObjectStore } from '../sink/s3/object-store.ts';
import { sqlString } from './projection.ts';
import { ROW_OPS } from './rule.ts';

/**
 * One table's event objects on local disk, and how the rule reads them into DuckDB.
 *
 * Lines are read as text (`read_csv` with a delimiter JSON never holds raw), not as JSON: row
 * images must stay byte-exact, and DuckDB's JSON reader prints numbers its own way. Readers size
 * their buffers by the longest line they may meet, so it is measured while downloading: a row of
 * any size reads, and no buffer is larger than the largest line needs.
 */
export interface EventFiles {
  /** The files, as one glob (`<dir>/*.jsonl.gz`); undefined when there are none. */
  readonly glob: string | undefined;
  readonly files: number;
  /** Bytes of the longest line (uncompressed). */
  readonly longestLine: number;
}

/** Downloads `keys` into `dir` (a few at a time) as `<n>.jsonl.gz`, measuring the longest line. */
export async function downloadObjects(s3: S3Client, bucket: string, keys: readonly string[], dir: string, parallel = 8): Promise<EventFiles> {
  const store = s3ObjectStore(s3, bucket);
  let next = 0;
  let longest = 0;
  const worker = async () => {
    while (next < keys.length) {
      const n = next++;
      const file = join(dir, `${String(n).padStart(8, '0')}.jsonl.gz`);
      await store.getFile(keys[n] as string, file);
      longest = Math.max(longest, await longestLine(file));
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, keys.length) }, worker));
  return { glob: keys.length ? join(dir, '*.jsonl.gz') : undefined, files: keys.length, longestLine: longest };
}

/** The longest line of a gzip JSON Lines file, in bytes. */
export async function longestLine(file: string): Promise<number> {
  let longest = 0;
  let current = 0;
  for await (const chunk of createReadStream(file).pipe(createGunzip()) as AsyncIterable<Buffer>) {
    let from = 0;
    for (let at = chunk.indexOf(10); at >= 0; at = chunk.indexOf(10, from)) {
      longest = Math.max(longest, current + at - from);
      current = 0;
      from = at + 1;
    }
    current += chunk.length - from;
  }
  return Math.max(longest, current);
}

const MiB = 1024 * 1024;

/** Of a table's row events, those whose key hashes to bucket `index` of `count` (control events are in every bucket). */
export interface EventBucket {
  readonly index: number;
  readonly count: number;
}

/**
 * The bucket's condition on a line: row events by a hash of the text from `,"key":` to the first
 * `,"before":` after it (a function of the key's values alone — the raw text cannot occur inside a
 * JSON string, and the header before it is the table's), control events always.
 */
function bucketCondition(bucket: EventBucket): string {
  const key = `substr(line, strpos(line, ',"key":'), strpos(line, ',"before":') - strpos(line, ',"key":'))`;
  // MD5, not DuckDB's hash(): the same in every DuckDB version a worker may run.
  return `(op NOT IN ${ROW_OPS} OR md5_number(${key}) % ${bucket.count} = ${bucket.index})`;
}

/**
 * `CREATE TABLE <name>` of the events in `files`: seq, op, v (the `schema` field; NULL in format-v1
 * lines), kind (`ddl.kind` of markers), and the row images `b` (before) and `a` (after) as the
 * exact text of the line. The images are cut at the top-level members that follow them: row
 * values are scalars, so `,"before":{`, `,"after":{` and `,"source":{` occur once, at top level.
 * `bucket`: only that bucket's events, or (`'markers'`) the control events alone.
 */
export function loadEventsSql(name: string, files: EventFiles, bucket?: EventBucket | 'markers'): string {
  if (!files.glob) return `CREATE OR REPLACE TABLE ${name} (seq VARCHAR, op VARCHAR, v INTEGER, kind VARCHAR, b VARCHAR, a VARCHAR)`;
  const maxLine = Math.max(2 * MiB, files.longestLine + 1024);
  const buffer = Math.max(32 * MiB, maxLine + MiB);
  return `CREATE OR REPLACE TABLE ${name} AS
SELECT seq, op, TRY_CAST(v AS INTEGER) AS v, kind,
  CASE WHEN pb > 0 THEN substr(line, pb + 10, (CASE WHEN pa > 0 THEN pa ELSE ps - 13 END) - pb - 10) END AS b,
  CASE WHEN pa > 0 THEN substr(line, pa + 9, ps - pa - 9) END AS a
FROM (
  SELECT line, f[1] AS op, f[2] AS seq, f[3] AS v, f[4] AS kind,
    strpos(line, ',"before":{') AS pb, strpos(line, ',"after":{') AS pa, strpos(line, ',"source":{') AS ps
  FROM (
    SELECT line, json_extract_string(line, ['$.op', '$.seq', '$.schema', '$.ddl.kind']) AS f
    FROM read_csv(${sqlString(files.glob)}, columns = {line: 'VARCHAR'}, header = false, auto_detect = false,
      delim = E'\\x01', quote = '', escape = '', compression = 'gzip', max_line_size = ${maxLine}, buffer_size = ${buffer})
  )
)
WHERE ${bucket === 'markers' ? `op NOT IN ${ROW_OPS} AND ` : bucket ? `${bucketCondition(bucket)} AND ` : ''}CASE WHEN seq IS NULL OR op IS NULL OR ps = 0 OR pa > ps OR pb > ps OR (pa > 0 AND pb > pa)
  THEN error('sluice: an event line is not laid out as sluice writes it: ' || left(line, 200)) ELSE true END`;
}
