import { open } from 'node:fs/promises';
import type { ObjectStore } from '../../sink/s3/object-store.ts';
import type { Workspace } from './parquet.ts';

/*
 * Reading some columns of a Parquet object without downloading it: the footer and the column
 * chunks of the wanted columns are fetched with ranged GETs and written at their offsets into a
 * sparse local file of the object's size. DuckDB reads a file's footer and then only the chunks of
 * the columns a query projects, so a query over those columns never touches the holes. A position
 * delete merge reads its candidate files' key columns this way: its cost follows the key columns,
 * not the rows' width.
 */

const MAGIC = Buffer.from('PAR1');
/** Bytes read from the end first: most footers fit, so one GET gets them. */
const TAIL = 64 * 1024;
/** Column chunks closer than this are fetched in one GET (fewer requests for a few wasted bytes). */
const GAP = 256 * 1024;

/** Writes the footer and the chunks of columns `fieldIds` of object `key` (`size` bytes) into the sparse file `path`. */
export async function fetchColumns(ws: Workspace, store: ObjectStore, key: string, size: number, fieldIds: readonly number[], path: string): Promise<void> {
  let tail = await store.getRange(key, Math.max(0, size - TAIL), size);
  const length = Buffer.from(tail.buffer, tail.byteOffset, tail.byteLength).readUInt32LE(tail.length - 8);
  if (!Buffer.from(tail.subarray(tail.length - 4)).equals(MAGIC) || length + 8 > size) throw new Error(`${key} is not a Parquet file (no footer)`);
  if (length + 8 > tail.length) tail = await store.getRange(key, size - 8 - length, size);
  const file = await open(path, 'w');
  try {
    await file.truncate(size);
    await file.write(MAGIC, 0, 4, 0);
    await file.write(tail, 0, tail.length, size - tail.length);
    // What the tail read already holds is not fetched again (a small file: all of it).
    const held = size - tail.length;
    if (held === 0) return;
    const quoted = `'${path.replaceAll("'", "''")}'`;
    const names = new Set((await ws.rows(`SELECT name FROM parquet_schema(${quoted}) WHERE field_id IN (${fieldIds.join(', ')})`)).map((r) => String(r.name)));
    const chunks = (
      await ws.rows(
        `SELECT path_in_schema AS name, dictionary_page_offset AS dict, data_page_offset AS data, total_compressed_size AS bytes, ` +
          `bloom_filter_offset AS bloom, bloom_filter_length AS bloom_bytes FROM parquet_metadata(${quoted})`,
      )
    )
      .filter((c) => names.has(String(c.name)))
      .flatMap((c) => {
        const data = Number(c.data);
        const dict = c.dict === null || c.dict === undefined || Number(c.dict) <= 0 ? data : Math.min(Number(c.dict), data);
        // A key column's bloom filter too: DuckDB probes it when the changed keys share a value there.
        const bloom =
          c.bloom === null || c.bloom === undefined || Number(c.bloom) <= 0 ? [] : [{ start: Number(c.bloom), end: Number(c.bloom) + Number(c.bloom_bytes) }];
        return [{ start: dict, end: dict + Number(c.bytes) }, ...bloom];
      })
      .sort((a, b) => a.start - b.start);
    const ranges: { start: number; end: number }[] = [];
    for (const chunk of chunks) {
      const last = ranges.at(-1);
      if (last && chunk.start - last.end < GAP) last.end = Math.max(last.end, chunk.end);
      else ranges.push({ ...chunk });
    }
    for (const range of ranges) {
      if (range.start >= held) continue;
      const bytes = await store.getRange(key, range.start, Math.min(range.end, held));
      await file.write(bytes, 0, bytes.length, range.start);
    }
  } finally {
    await file.close();
  }
}
