import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { type EncodedShape, encodeRow, type Row } from '../../lib/format/event.ts';
import { type BinlogItem, BinlogReader } from '../../lib/source/mysql/binlog-reader.ts';
import { JSON_OPAQUE_DOCUMENTS, mysqlFixtures } from '../support/mysql-binlog-file.ts';
import { servedFiles, startReplayServer } from '../support/mysql-replay/server.ts';
import { fixtures as catalog } from './fixtures.ts';
import { prepareSchema } from './replay-helpers.ts';

/*
 * What MySQL 8.0–9.x writes, end to end: each recorded file is served by the replay server as the
 * server that wrote it, over the replication protocol, and read by sluice's binlog reader (zongji as
 * patched here, a real connection). Tables whose TABLE_MAPs lack FULL metadata are looked up by
 * zongji in information_schema, which the replay server forwards to the test stack's MariaDB: the
 * tables are created there from the fixture catalog (test/mysql/fixtures.ts), as capture.test.ts does.
 */

/** A row item's rows as the JSON lines write them (`after` images for inserts and updates). */
type Read = { kind: string; pos?: number; gtid?: string; rows?: string[] };

/** How often the last `readAll` paused the connection (memory back-pressure). */
let pauses = 0;

/** Every item the reader yields for the files, until the stream has passed the last file's end. */
async function readAll(fixtures: string[], highWaterRows?: number): Promise<Read[]> {
  const fixture = catalog().find((f) => f.files.join() === fixtures.join());
  if (!fixture) throw new Error(`no fixture in test/mysql/fixtures.ts serves ${fixtures.join(', ')}`);
  await prepareSchema(fixture);
  const paths = fixtures.map((f) => join(mysqlFixtures(), f));
  const served = servedFiles(paths);
  const last = served[served.length - 1];
  await using replay = await startReplayServer({ files: paths, schemaFrom: inject('stackEnv').SLUICE_LOCAL_ADMIN_URL });
  const first = served[0];
  if (!first || !last) throw new Error('no files');
  const reader = new BinlogReader({
    target: { uri: replay.uri, label: 'replay' },
    start: { file: first.name, pos: 4 },
    filter: () => true,
    idleMs: 100,
    highWaterRows,
  });
  const items: Read[] = [];
  const row = (shape: EncodedShape, r: Row) => encodeRow(shape, r);
  try {
    for await (const item of reader as AsyncIterable<BinlogItem>) {
      if (item.kind === 'idle') {
        const at = reader.streamPosition;
        // The last file read to its end, or its closing ROTATE read (the stream then names the next file).
        if ((at.file === last.name && at.pos >= last.file.size) || at.file === last.file.rotateTo?.file) break;
        continue;
      }
      if (item.kind === 'rows')
        items.push({
          kind: `rows:${item.op}`,
          rows: item.op === 'update' ? item.rows.map((r) => row(item.shape, r.after)) : item.rows.map((r) => row(item.shape, r)),
        });
      else if (item.kind === 'commit' || item.kind === 'progress') items.push({ kind: item.kind, pos: item.position.pos, gtid: item.position.gtid });
      else items.push({ kind: item.kind });
    }
  } finally {
    pauses = reader.backPressure.pauses;
    await reader.stop();
  }
  return items;
}

describe('compressed transactions (TRANSACTION_PAYLOAD) through the replay server', () => {
  it('yields the rows inside and commits only at the payload event’s end', async () => {
    const items = await readAll(['rust_mysql_common--transaction_compression.000001']);
    const data = items.filter((i) => i.kind !== 'progress');
    expect(data).toEqual([{ kind: 'begin' }, { kind: 'rows:insert', rows: ['{"c1":1}'] }, { kind: 'commit', pos: 431, gtid: undefined }]);
  });

  it('decodes mysql-binlog-connector-java’s compressed UPDATE exactly', async () => {
    const items = await readAll(['mysql-binlog-connector-java--mysql-bin.compressed']);
    const update = items.find((i) => i.kind === 'rows:update');
    expect(update?.rows).toHaveLength(1);
    const after = JSON.parse(update?.rows?.[0] ?? '{}');
    expect([after.c1, after.c2, after.c5]).toEqual([1, 'Once Upon a Time in the West', 'Western|Action']);
    expect(items.filter((i) => i.kind === 'commit').map((i) => i.pos)).toEqual([724]);
  });
});

describe('compressed transactions under memory back-pressure', () => {
  it('the reader pausing the connection inside a payload (1 row may wait) resumes its remaining events in order', async () => {
    const items = await readAll(['mysql-binlog-connector-rust--mysql-bin.000057'], 1);
    expect(pauses).toBeGreaterThanOrEqual(3);
    const uuid = '76f3e7be-6720-11ed-9cad-0242ac110002';
    expect(items.filter((i) => i.kind === 'commit').map((i) => `${i.pos} ${i.gtid}`)).toEqual([`378 ${uuid}:11`, `651 ${uuid}:12`, `1283 ${uuid}:13`]);
    const rows = items.filter((i) => i.kind.startsWith('rows:'));
    expect(rows.map((i) => i.kind)).toEqual(['rows:insert', 'rows:update', 'rows:insert']);
    expect(JSON.parse(rows[2]?.rows?.[0] ?? '{}')).toMatchObject({ product_id: 6666, c2: 'product_item_value_2', c10: '{"c": 1}', c14: 2222 });
  });
});

describe('MySQL 9 values through the replay server', () => {
  it('VECTOR columns (FULL metadata) and the TEXT column after one', async () => {
    const items = await readAll(['rust_mysql_common--vector.binlog']);
    const inserts = items.filter((i) => i.kind === 'rows:insert').flatMap((i) => i.rows ?? []);
    const b64 = (hex: string) => Buffer.from(hex, 'hex').toString('base64');
    expect(inserts[0]).toBe(`{"id":1,"vector_column":"${b64('cdcc8c3fcdcc0c4033335340')}"}`);
    expect(inserts[1]).toBe(`{"id":2,"vector_column":"${b64('0000803f000080bf00000000')}"}`);
    expect(inserts.map((r) => JSON.parse(r).foo).filter((v) => v !== undefined)).toContain('bar');
  });

  it('JSON with OPAQUE values, as MySQL prints them', async () => {
    const items = await readAll(['rust_mysql_common--json-opaque.binlog']);
    const values = items.filter((i) => i.kind === 'rows:insert').map((i) => JSON.parse(i.rows?.[0] ?? '{}').a);
    expect(values).toEqual(JSON_OPAQUE_DOCUMENTS);
    // All eight rows are one transaction: one commit, at its Xid's end.
    expect(items.filter((i) => i.kind === 'commit')).toHaveLength(3);
  });
});

describe('MySQL 8.0–9.6 positions and temporal values through the replay server', () => {
  it('a tagged GTID (9.6, uuid:tag:n) is the committed position’s GTID, whole', async () => {
    const items = await readAll(['rust_mysql_common--binlog_transaction_with_GTID_TAG.000001']);
    const commits = items.filter((i) => i.kind === 'commit');
    expect(commits.map((c) => c.gtid)).toEqual(['55778904-0299-11f1-b1b8-4ef0c4956feb:mytag:3']);
    expect(items.find((i) => i.kind === 'rows:insert')?.rows).toHaveLength(1);
  });

  it('a negative TIME beyond 24 hours (8.0.40) is exact', async () => {
    const items = await readAll(['rust_mysql_common--time_issue.000001']);
    expect(items.find((i) => i.kind === 'rows:insert')?.rows).toEqual(['{"c":"-507:48:27"}']);
  });
});
