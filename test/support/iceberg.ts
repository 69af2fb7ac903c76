import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { icebergRead } from 'icebird';
import type { ManifestEntry, ManifestFile } from '../../lib/iceberg/files/avro.ts';
import { readAvroFile } from '../../lib/iceberg/files/avro.ts';
import { currentSnapshot, type TableMetadata } from '../../lib/iceberg/files/metadata.ts';
import type { ObjectStore } from '../../lib/sink/s3/object-store.ts';

/**
 * icebird fetches `s3://bucket/key` as `https://bucket.s3.amazonaws.com/key` with the global fetch.
 * `route` maps such a request elsewhere; the default serves it from an ObjectStore (with Range).
 */
export function storeFetch(store: ObjectStore): typeof fetch {
  return async (input, init) => {
    const url = new URL(String(input));
    const bucket = url.hostname.replace(/\.s3\.amazonaws\.com$/, '');
    const body = await store.get(decodeURIComponent(url.pathname.slice(1)));
    if (!body || store.uri('') !== `s3://${bucket}/`) return new Response(null, { status: 404, statusText: 'Not Found' });
    const range = /bytes=(\d+)-(\d*)/.exec(new Headers(init?.headers).get('range') ?? '');
    if (!range) return new Response(body, { status: 200 });
    const start = Number(range[1]);
    const end = range[2] ? Number(range[2]) + 1 : body.length;
    return new Response(body.slice(start, end), { status: 206, headers: { 'content-range': `bytes ${start}-${end - 1}/${body.length}` } });
  };
}

/** Reads a table through icebird (an independent reader), with `fetcher` as the global fetch meanwhile. */
export async function readWithIcebird(tableUri: string, fetcher: typeof fetch): Promise<Record<string, unknown>[]> {
  const original = globalThis.fetch;
  globalThis.fetch = fetcher;
  try {
    return await icebergRead({ tableUrl: tableUri });
  } finally {
    globalThis.fetch = original;
  }
}

/**
 * Reads the current snapshot with DuckDB: the Parquet files its manifests list (decoded here with
 * avsc, not with the writer's code paths), each projected by field id, equality deletes applied to
 * data files with a lower sequence number, position deletes (file_path, pos: field ids 2147483546,
 * 2147483545) to the rows they name in data files with a lower or equal sequence number. Values come back as DuckDB renders them to text, so
 * decimals and big integers are exact.
 */
export async function readWithDuckDb(store: ObjectStore, metadata: TableMetadata, dir: string): Promise<Record<string, string | null>[]> {
  const snapshot = currentSnapshot(metadata);
  if (!snapshot) return [];
  const schema = metadata.schemas.find((s) => s['schema-id'] === metadata['current-schema-id']);
  if (!schema) throw new Error('no current schema');
  const files: { path: string; uri: string; content: number; seq: number; ids: number[] }[] = [];
  const list = readAvroFile<ManifestFile>((await store.get(store.keyOf(snapshot['manifest-list']))) as Uint8Array).records;
  for (const manifest of list) {
    for (const entry of readAvroFile<ManifestEntry>((await store.get(store.keyOf(manifest.manifest_path))) as Uint8Array).records) {
      if (entry.status === 2) continue;
      const path = join(dir, `${files.length}.parquet`);
      await store.getFile(store.keyOf(entry.data_file.file_path), path);
      files.push({
        path,
        uri: entry.data_file.file_path,
        content: entry.data_file.content,
        seq: entry.sequence_number ?? manifest.sequence_number,
        ids: entry.data_file.equality_ids ?? [],
      });
    }
  }
  const db = await DuckDBInstance.create(':memory:');
  const duck = await db.connect();
  try {
    const project = async (path: string, ids: number[]) => {
      const names = new Map(
        (await duck.runAndReadAll(`SELECT name, field_id FROM parquet_schema('${path}') WHERE field_id IS NOT NULL`))
          .getRowObjects()
          .map((r) => [Number(r.field_id), String(r.name)]),
      );
      return ids.map((id) => (names.has(id) ? `"${names.get(id)}" AS f${id}` : `NULL AS f${id}`)).join(', ');
    };
    const ids = schema.fields.map((f) => f.id);
    const data = files.filter((f) => f.content === 0);
    if (!data.length) return [];
    const parts = await Promise.all(
      data.map(
        async (f) =>
          `SELECT ${await project(f.path, ids)}, ${f.seq} AS _seq, '${f.uri}' AS _uri, file_row_number AS _row FROM read_parquet('${f.path}', file_row_number = true)`,
      ),
    );
    let sql = `SELECT * FROM (${parts.join(' UNION ALL ')}) t`;
    const deletes = files.filter((f) => f.content === 2);
    const conditions = await Promise.all(
      deletes.map(async (d) => {
        const match = d.ids.map((id) => `d.f${id} IS NOT DISTINCT FROM t.f${id}`).join(' AND ');
        return `NOT EXISTS (SELECT 1 FROM (SELECT ${await project(d.path, d.ids)} FROM read_parquet('${d.path}')) d WHERE ${d.seq} > t._seq AND ${match})`;
      }),
    );
    for (const d of files.filter((f) => f.content === 1)) {
      const columns = await project(d.path, [2147483546, 2147483545]);
      conditions.push(
        `NOT EXISTS (SELECT 1 FROM (SELECT ${columns} FROM read_parquet('${d.path}')) d WHERE ${d.seq} >= t._seq AND d.f2147483546 = t._uri AND d.f2147483545 = t._row)`,
      );
    }
    if (conditions.length) sql += ` WHERE ${conditions.join(' AND ')}`;
    const select = schema.fields.map(
      (f) => `CASE WHEN f${f.id} IS NULL THEN NULL ELSE ${f.type === 'binary' ? `hex(f${f.id})` : `CAST(f${f.id} AS VARCHAR)`} END AS "${f.name}"`,
    );
    const rows = (await duck.runAndReadAll(`SELECT ${select.join(', ')} FROM (${sql})`)).getRowObjects();
    return rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, v === null ? null : String(v)])));
  } finally {
    duck.closeSync();
    db.closeSync();
  }
}
