import { gzipSync } from 'node:zlib';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { segment } from '../../lib/core/table-path.ts';
import { encodeRow, encodeShape } from '../../lib/format/event.ts';
import { historyObject } from '../../lib/schema/catalog.ts';
import type { SchemaVersion } from '../../lib/schema/version.ts';
import { manifestKey, schemaKey } from '../../lib/sink/s3/keys.ts';
import { tableInfo } from '../../lib/source/mysql/schema.ts';
import { pagingConnection } from '../../lib/source/mysql/snapshot-reader.ts';
import { mysqlTarget } from '../../lib/source/mysql/target.ts';
import type { TestSource } from './source.ts';

/**
 * Output in format v2 written straight to S3 for a test source — event objects, manifests and
 * schema history objects laid out as format-v2 §1–§3 say — while the capture path that writes
 * them is being built. Rows come from the real tables, encoded by the snapshot's own code.
 */

export interface Images {
  readonly before?: string;
  readonly after?: string;
  readonly kind?: string;
}

/** Seqs below any real binlog position (file 0), in the order given. */
export const testSeq = (n: number) => `0000000000.${String(n).padStart(12, '0')}.0000000000`;

/** An event line (format v2). */
export function v2Line(table: { db: string; table: string }, op: string, seq: number, schema: number, images: Images = {}): string {
  const ddl = images.kind ? `,"ddl":{"kind":"${images.kind}","position":{"file":"binlog.000000","pos":${seq}}}` : '';
  return `{"op":"${op}","db":${JSON.stringify(table.db)},"table":${JSON.stringify(table.table)},"key":null,"before":${images.before ?? 'null'},"after":${images.after ?? 'null'},"source":{"file":"binlog.000000","pos":${seq},"gtid":null,"server_id":1,"ts_ms":0,"txn":"t","snapshot":false},"seq":"${testSeq(seq)}","schema":${schema}${ddl}}`;
}

export class V2Output {
  private commitSeq = 0;
  constructor(private readonly source: TestSource) {}

  /** Writes a table's schema versions. */
  async history(versions: readonly SchemaVersion[]): Promise<void> {
    const { config, clients } = this.source;
    for (const v of versions) {
      const object = historyObject(config.sourceId, { version: v, seq: '', position: { file: 'binlog.000000', pos: 4 }, origin: 'ddl' });
      await clients.s3.send(
        new PutObjectCommand({ Bucket: config.bucket, Key: schemaKey(config.prefix, config.sourceId, v.db, v.table, v.version), Body: JSON.stringify(object) }),
      );
    }
  }

  /** Commits `lines` of one table as one object with its manifest; returns the object's key. */
  async commit(table: { db: string; table: string }, lines: readonly string[], body?: Buffer): Promise<string> {
    const { config, clients } = this.source;
    const seq = ++this.commitSeq;
    const key = `${config.prefix}tables/${segment(table.db)}/${segment(table.table)}/${config.sourceId}-${String(seq).padStart(12, '0')}.jsonl.gz`;
    const text = lines.map((l) => `${l}\n`).join('');
    await clients.s3.send(new PutObjectCommand({ Bucket: config.bucket, Key: key, Body: body ?? gzipSync(text), ContentEncoding: 'gzip' }));
    const seqs = lines.map((l) => /"seq":"([^"]+)"/.exec(l)?.[1] ?? '').sort();
    const manifest = {
      format: 'sluice/v2',
      source: config.sourceId,
      commit_seq: seq,
      committed_at: new Date().toISOString(),
      events: lines.length,
      objects: [{ key, db: table.db, table: table.table, events: lines.length, bytes: Buffer.byteLength(text), seq_min: seqs[0], seq_max: seqs.at(-1) }],
      tables: [],
    };
    await clients.s3.send(
      new PutObjectCommand({ Bucket: config.bucket, Key: manifestKey(config.prefix, config.sourceId, seq), Body: JSON.stringify(manifest) }),
    );
    return key;
  }
}

/** A table's rows as the snapshot encodes them, in key order (or as read, when keyless). */
export async function encodedRows(source: TestSource, table: string): Promise<string[]> {
  const reader = pagingConnection(await mysqlTarget(source.config));
  try {
    await reader.init();
    const info = await tableInfo(reader.sql, source.db, table);
    const shape = encodeShape({ db: source.db, table, columns: info.columns, key: null });
    const rows: string[] = [];
    for await (const page of reader.page(info, null, null, 1_000_000)) for (const row of page) rows.push(encodeRow(shape, row));
    return rows;
  } finally {
    await reader.end();
  }
}
