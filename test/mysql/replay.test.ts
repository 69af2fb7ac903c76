import { readFileSync } from 'node:fs';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonValue } from '../../lib/source/mysql/binlog/json.ts';
import { JSON_OPAQUE_DOCUMENTS } from '../support/mysql-binlog-file.ts';
import { EventType } from '../support/mysql-replay/binlog-file.ts';
import { type ReplayServer, startReplayServer } from '../support/mysql-replay/server.ts';
import { fixturePath, fixtures, readmeEntries, requireFixtures } from './fixtures.ts';
import { type Delivered, prepareSchema, replay, streamWithZongji } from './replay-helpers.ts';

requireFixtures();
const readme = readmeEntries();

/** The zongji event name a correct decoder delivers for each README event type (a partial JSON update is an update). */
const ZONGJI_NAME: Record<string, string> = {
  FORMAT_DESCRIPTION: 'format',
  PREVIOUS_GTIDS: 'previousgtids',
  GTID: 'gtid',
  GTID_TAGGED: 'gtid',
  ANONYMOUS_GTID: 'anonymousgtid',
  QUERY: 'query',
  ROWS_QUERY: 'rowsquery',
  TABLE_MAP: 'tablemap',
  WRITE_ROWS_V2: 'writerows',
  UPDATE_ROWS_V2: 'updaterows',
  PARTIAL_UPDATE_ROWS: 'updaterows',
  DELETE_ROWS_V2: 'deleterows',
  XID: 'xid',
  ROTATE: 'rotate',
  STOP: 'unknown',
};

function tally(names: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const n of names) out[n] = (out[n] ?? 0) + 1;
  return out;
}

describe('zongji through the replay server delivers every event the README lists', () => {
  for (const fixture of fixtures()) {
    it(fixture.name, async () => {
      await prepareSchema(fixture);
      await using server = await replay(fixture);
      const { events, errors } = await streamWithZongji(server);

      // Every README type, with the events inside TRANSACTION_PAYLOADs delivered as their own types.
      const expected: string[] = [];
      for (const name of fixture.files) {
        const entry = readme.get(name);
        if (!entry) throw new Error(`the fixtures README lists no ${name}`);
        expect(server.facts.files.find((f) => f.file.path === fixturePath(name))?.file.serverVersion).toBe(entry.version);
        for (const [type, n] of [...Object.entries(entry.counts), ...Object.entries(entry.insidePayloads)]) {
          if (type === 'TRANSACTION_PAYLOAD') continue;
          const zname = ZONGJI_NAME[type];
          if (!zname) throw new Error(`no zongji name for README type ${type}`);
          for (let i = 0; i < n; i += 1) expected.push(zname);
        }
      }
      // The artificial ROTATE before each file (log_pos 0) is the server's, not the file's.
      const delivered = events.filter((e) => !(e.name === 'rotate' && e.nextPosition === 0) && e.name !== 'transactionpayload');
      expect(errors.map((e) => e.message)).toEqual([]);
      expect(tally(delivered.map((e) => e.name))).toEqual(tally(expected));

      // Positions: per file, each event's end offset in file order (inner payload events carry 0).
      for (const served of server.facts.files) {
        const want = served.file.events.filter((e) => e.type !== EventType.TRANSACTION_PAYLOAD).map((e) => e.logPos);
        const got = delivered.filter((e) => e.file === served.name && e.nextPosition > 0).map((e) => e.nextPosition);
        expect(got, served.name).toEqual(want);
      }
      // A ROTATE (made up, position 4) opens every file; a file's own ROTATE names the next one.
      const rotates = events
        .filter((e) => e.name === 'rotate')
        .map((e) => `${e.event.binlogName}:${e.event.position}${e.nextPosition === 0 ? ' (artificial)' : ''}`);
      const wantRotates = server.facts.files.flatMap((f) => [
        `${f.name}:4 (artificial)`,
        ...(f.file.rotateTo ? [`${f.file.rotateTo.file}:${f.file.rotateTo.position}`] : []),
      ]);
      expect(rotates).toEqual(wantRotates);
    });
  }
});

describe('the replication protocol', () => {
  const history = fixtures().find((f) => f.files.length === 3);
  if (!history) throw new Error('the fixture catalog lost the three mysqlbinlog2parquet files');
  let server: ReplayServer;
  beforeAll(async () => {
    await prepareSchema(history);
    server = await replay(history);
  });
  afterAll(() => server.close());

  it('starts at any event of any file and rotates on to the next', async () => {
    const second = server.facts.files[1];
    const start = second?.file.events.find((e) => e.type === EventType.GTID && e.offset > 500);
    if (!second || !start) throw new Error('no second GTID in the second file');
    const { events, errors } = await streamWithZongji(server, { filename: second.name, position: start.offset });
    expect(errors).toEqual([]);
    expect(events[0]?.event.binlogName).toBe(second.name);
    expect(events[0]?.event.position).toBe(start.offset);
    // Dumping past the FORMAT_DESCRIPTION: the server sends it with log_pos 0.
    expect(events[1]).toMatchObject({ name: 'format', nextPosition: 0 });
    expect(events[2]).toMatchObject({ name: 'gtid', nextPosition: start.logPos });
    expect(events.filter((e) => e.name === 'gtid').map((e) => e.event.gtid)).toEqual([
      '8a18b986-434f-11f1-a27f-ce6a53da2f24:16',
      '8a18b986-434f-11f1-a27f-ce6a53da2f24:17',
      '8a18b986-434f-11f1-a27f-ce6a53da2f24:18',
      '8a18b986-434f-11f1-a27f-ce6a53da2f24:19',
    ]);
  });

  it('answers a missing file and an impossible position with error 1236', async () => {
    for (const start of [
      { filename: 'mysql-bin.000099', position: 4 },
      { filename: 'mysql-bin.000005', position: 5 },
      { filename: 'mysql-bin.000005', position: 999_999 },
    ]) {
      const { events, errors } = await streamWithZongji(server, start, 3000);
      expect(
        errors.map((e) => (e as { errno?: number }).errno),
        JSON.stringify(start),
      ).toEqual([1236]);
      expect(events.filter((e) => !['rotate', 'format'].includes(e.name))).toEqual([]);
    }
  });

  it('COM_BINLOG_DUMP_GTID starts at the first file the client lacks and skips the transactions it has', async () => {
    const { events, errors } = await streamWithZongji(server, { gtidSet: '8a18b986-434f-11f1-a27f-ce6a53da2f24:1-15' });
    expect(errors).toEqual([]);
    expect(events[0]?.event.binlogName).toBe('mysql-bin.000006');
    expect(events.filter((e) => e.name === 'gtid').map((e) => e.event.gtid)).toEqual([
      '8a18b986-434f-11f1-a27f-ce6a53da2f24:16',
      '8a18b986-434f-11f1-a27f-ce6a53da2f24:17',
      '8a18b986-434f-11f1-a27f-ce6a53da2f24:18',
      '8a18b986-434f-11f1-a27f-ce6a53da2f24:19',
    ]);
    // The skipped transactions' end reaches the client as a heartbeat's log_pos.
    const skippedEnd = server.facts.files[1]?.file.events.find((e) => e.type === EventType.XID)?.logPos;
    expect(events.some((e) => e.name === 'heartbeat' && e.nextPosition === skippedEnd)).toBe(true);
  });

  it('COM_BINLOG_DUMP_GTID refuses a client that lacks purged transactions (1236)', async () => {
    const { errors } = await streamWithZongji(server, { gtidSet: '8a18b986-434f-11f1-a27f-ce6a53da2f24:1-3' }, 3000);
    expect(errors.map((e) => (e as { errno?: number }).errno)).toEqual([1236]);
    expect(errors[0]?.message).toMatch(/purged required binary logs/);
  });

  it('a blocking dump waits at the end of the last file, sending heartbeats', async () => {
    await using blocking = await replay(history, { heartbeatMs: 100 });
    const last = blocking.facts.files[2];
    if (!last) throw new Error('no third file');
    const beats = (events: { name: string }[]) => events.filter((e) => e.name === 'heartbeat').length;
    const { events, errors } = await streamWithZongji(blocking, { filename: last.name, position: last.file.size, nonBlock: false }, 3000, (e) => beats(e) >= 3);
    expect(errors).toEqual([]);
    expect(events.map((e) => e.name).slice(0, 5)).toEqual(['rotate', 'format', 'heartbeat', 'heartbeat', 'heartbeat']);
    expect(new Set(events.slice(2).map((e) => e.name))).toEqual(new Set(['heartbeat']));
    expect(events[2]).toMatchObject({ file: last.name, nextPosition: last.file.size });
  });
});

describe('the dialect answers as the presented version documents it', () => {
  const history = fixtures().find((f) => f.files.length === 3);
  if (!history) throw new Error('the fixture catalog lost the three mysqlbinlog2parquet files');
  const ask = async (version: string | undefined, sql: string) => {
    await using server = await startReplayServer({ files: history.files.map(fixturePath), version });
    const conn = await mysql.createConnection({ host: '127.0.0.1', port: server.port, user: 'sluice', password: 'secret' });
    try {
      const [rows] = await conn.query(sql);
      return { rows: rows as Record<string, unknown>[] };
    } catch (error) {
      const e = error as { errno: number; code: string; message: string };
      return { error: { errno: e.errno, code: e.code, message: e.message } };
    } finally {
      await conn.end();
    }
  };
  const status = {
    File: 'mysql-bin.000007',
    Position: 1981,
    Binlog_Do_DB: '',
    Binlog_Ignore_DB: '',
    Executed_Gtid_Set: '8a18b986-434f-11f1-a27f-ce6a53da2f24:1-19',
  };

  it('SHOW MASTER STATUS works as 8.0.46 and is ER_PARSE_ERROR as 8.4 and 9.x', async () => {
    expect(await ask(undefined, 'SHOW MASTER STATUS')).toEqual({ rows: [status] });
    for (const version of ['8.4.3', '9.1.0']) {
      expect(await ask(version, 'SHOW MASTER STATUS')).toEqual({
        error: {
          errno: 1064,
          code: 'ER_PARSE_ERROR',
          message:
            "You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near 'MASTER STATUS' at line 1",
        },
      });
    }
  });

  it('SHOW BINARY LOG STATUS works as 8.4 and is a parse error before 8.2', async () => {
    expect(await ask('8.4.3', 'SHOW BINARY LOG STATUS')).toEqual({ rows: [status] });
    expect((await ask(undefined, 'SHOW BINARY LOG STATUS')).error?.errno).toBe(1064);
  });

  it('reports the files version, GTIDs and binlog settings', async () => {
    const { rows } = await ask(
      '8.4.3',
      'SELECT VERSION() AS version, @@version_comment AS comment, @@server_uuid AS uuid, @@server_id AS id, @@gtid_mode AS mode, @@GLOBAL.gtid_executed AS executed, @@gtid_purged AS purged, @@log_bin AS log_bin, @@binlog_row_metadata AS metadata',
    );
    expect(rows).toEqual([
      {
        version: '8.4.3',
        comment: 'MySQL Community Server - GPL',
        uuid: '8a18b986-434f-11f1-a27f-ce6a53da2f24',
        id: 1,
        mode: 'ON',
        executed: '8a18b986-434f-11f1-a27f-ce6a53da2f24:1-19',
        purged: '8a18b986-434f-11f1-a27f-ce6a53da2f24:1-6',
        log_bin: 1,
        metadata: 'FULL',
      },
    ]);
    expect((await ask(undefined, 'SHOW BINARY LOGS')).rows).toEqual([
      { Log_name: 'mysql-bin.000005', File_size: 3309, Encrypted: 'No' },
      { Log_name: 'mysql-bin.000006', File_size: 1584, Encrypted: 'No' },
      { Log_name: 'mysql-bin.000007', File_size: 1981, Encrypted: 'No' },
    ]);
    expect(
      (await ask(undefined, "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('binlog_format', 'binlog_transaction_compression', 'binlog_row_image')")).rows,
    ).toEqual([
      { Variable_name: 'binlog_format', Value: 'ROW' },
      { Variable_name: 'binlog_row_image', Value: 'FULL' },
      { Variable_name: 'binlog_transaction_compression', Value: 'OFF' },
    ]);
    expect((await ask('8.4.3', 'SELECT @@expire_logs_days')).error?.errno).toBe(1193);
    expect((await ask(undefined, "SELECT BINLOG_GTID_POS('mysql-bin.000005', 4) AS pos")).error?.errno).toBe(1305);
    expect((await ask(undefined, 'SHOW SLAVE HOSTS')).error?.message).toMatch(/SHOW SLAVE HOSTS.*mysql-replay/);
  });

  it('reads tagged GTIDs, compression and partial JSON from the files', async () => {
    const facts = async (file: string) => {
      await using server = await startReplayServer({ files: [fixturePath(file)] });
      return Object.fromEntries(server.facts.variables);
    };
    expect(await facts('rust_mysql_common--binlog_transaction_with_GTID_TAG.000001')).toMatchObject({
      version: '9.6.0',
      gtid_executed: '55778904-0299-11f1-b1b8-4ef0c4956feb:1-13:mytag:1-3',
      server_uuid: '55778904-0299-11f1-b1b8-4ef0c4956feb',
      binlog_row_metadata: 'MINIMAL',
    });
    expect(await facts('rust_mysql_common--transaction_compression.000001')).toMatchObject({ binlog_transaction_compression: 'ON', gtid_mode: 'OFF' });
    expect(await facts('rust_mysql_common--json.binlog.000001')).toMatchObject({ binlog_row_value_options: 'PARTIAL_JSON' });
    expect(await facts('rust_mysql_common--minimal_row_metadata.000001')).toMatchObject({ binlog_row_image: 'MINIMAL' });
  });

  it('SHOW BINLOG EVENTS lists the events as the recorded server listed them', async () => {
    for (const stem of ['02_query', '02_query_bigger', '19_30_Table_map_event_Write_rows_log_event', '31_update_rows_v2', '32_delete_rows_v2']) {
      const text = readFileSync(fixturePath(`mysql-cdc-rs--${stem}.show-binlog-events.txt`), 'utf8');
      const recorded = [...text.matchAll(/^\| (binlog\.\d+) \|\s+(\d+) \| (\w+)\s+\|\s+(\d+) \|\s+(\d+) \|/gm)].map((m) => `${m[2]} ${m[3]} ${m[5]}`);
      const file = [...readme.keys()].find((k) => k.startsWith(`mysql-cdc-rs--${stem}.binlog.`));
      if (!file) throw new Error(`no binlog for ${stem}`);
      await using server = await startReplayServer({ files: [fixturePath(file)] });
      const conn = await mysql.createConnection({ host: '127.0.0.1', port: server.port, user: 'u', password: 'p' });
      const [rows] = await conn.query('SHOW BINLOG EVENTS');
      await conn.end();
      const listed = (rows as { Pos: number; Event_type: string; End_log_pos: number }[]).map((r) => `${r.Pos} ${r.Event_type} ${r.End_log_pos}`);
      // The 19_30 listing was taken after the server stopped: it has one more event (STOP) than the file.
      expect(recorded.slice(0, listed.length), stem).toEqual(listed);
      expect(recorded.length - listed.length, stem).toBe(stem.startsWith('19_30') ? 1 : 0);
    }
  });
});

/** The row images of the `###` lines of a `mysqlbinlog -vv` dump: per row event, its kind and images (@n → value text). */
function mysqlbinlogRows(text: string): { kind: string; images: string[][] }[] {
  const out: { kind: string; images: string[][] }[] = [];
  for (const line of text.split('\n')) {
    const head = /^### (INSERT INTO|UPDATE|DELETE FROM) /.exec(line);
    if (head) out.push({ kind: head[1] as string, images: [] });
    else if (/^### (SET|WHERE)$/.test(line)) out.at(-1)?.images.push([]);
    else {
      const value = /^###\s+@\d+=(.*?) \/\*/.exec(line);
      if (value)
        out
          .at(-1)
          ?.images.at(-1)
          ?.push(value[1] as string);
    }
  }
  return out;
}

describe('zongji decodes the values the references list', () => {
  const byName = (name: string) => {
    const f = fixtures().find((x) => x.name.startsWith(name));
    if (!f) throw new Error(`no fixture ${name}`);
    return f;
  };
  const rowsOf = async (name: string) => {
    const fixture = byName(name);
    await prepareSchema(fixture);
    await using server = await replay(fixture);
    const { events, errors } = await streamWithZongji(server);
    expect(errors.map((e) => e.message)).toEqual([]);
    return events.filter((e) => ['writerows', 'updaterows', 'deleterows'].includes(e.name));
  };
  const images = (e: { name: string; event: Record<string, unknown> }) =>
    (e.event.rows as Record<string, unknown>[]).flatMap((r) => (e.name === 'updaterows' ? [r.before, r.after] : [r])) as Record<string, unknown>[];

  for (const stem of ['19_30_Table_map_event_Write_rows_log_event', '31_update_rows_v2', '32_delete_rows_v2']) {
    it(`${stem}: every ### value of mysqlbinlog -vv`, async () => {
      const want = mysqlbinlogRows(readFileSync(fixturePath(`mysql-cdc-rs--${stem}.mysqlbinlog-vv.txt`), 'utf8'));
      const got = await rowsOf(stem.slice(0, 5));
      const kinds: Record<string, string> = { 'INSERT INTO': 'writerows', UPDATE: 'updaterows', 'DELETE FROM': 'deleterows' };
      expect(got.map((e) => e.name)).toEqual(want.map((w) => kinds[w.kind]));
      expect(got.flatMap((e) => images(e).map((row) => Object.values(row).map(String)))).toEqual(want.flatMap((w) => w.images));
    });
  }

  it('mysql_type_bit: a = 0b100, b = foo, c = 0b100000', async () => {
    const [write] = await rowsOf('mysql_type_bit');
    const row = images(write as Delivered)[0] as Record<string, unknown>;
    expect({ a: Buffer.from(row.a as Buffer).toString('hex'), b: row.b, c: Buffer.from(row.c as Buffer).toString('hex') }).toEqual({
      a: '04',
      b: 'foo',
      c: '20',
    });
  });

  it('enum-string-set: ENUM and SET labels, CHAR/VARCHAR/TEXT', async () => {
    // README: f1 = `0123456789` x10, f2 and the later f5 "a 300-char digit string": the file holds a
    // run of 298 digits (the only digit runs in its bytes are 100 and 298 long).
    const digits300 = expect.stringMatching(/^\d{298}$/);
    const rows = (await rowsOf('enum-string-set')).flatMap((e) => images(e));
    const inserted = { f1: '0123456789'.repeat(10), f2: digits300, f3: 'var1', f4: 'one,three', f5: '0123456789' };
    const updated = { f1: 'field1', f2: 'field_2', f3: 'variant2', f4: 'two,four', f5: digits300 };
    expect(rows.map((r) => ({ ...r, f5: String(r.f5) }))).toEqual([inserted, inserted, updated, updated]);
  });

  it('json-opaque: the eight JSON documents as MySQL prints them', async () => {
    // zongji hands over the documents' bytes (sluice's JSON reader, binlog/decoders.ts), printed by sluice.
    const rows = (await rowsOf('json-opaque')).flatMap((e) => images(e));
    expect(rows.map((r) => jsonValue(r.a))).toEqual(JSON_OPAQUE_DOCUMENTS);
  });

  it('minimal_row_metadata: the image holds col_1, col_3, col_5 only; col_5 = 3230202323', async () => {
    const rows = (await rowsOf('minimal_row_metadata')).flatMap((e) => images(e));
    expect(rows).toEqual([{ col_1: 1, col_3: 'a', col_5: 3230202323 }]);
  });

  it('time_issue: TIME -507:48:27', async () => {
    const rows = (await rowsOf('time_issue')).flatMap((e) => images(e));
    expect(rows).toEqual([{ c: '-507:48:27' }]);
  });

  it('vector: foo id 1 = [1.1, 2.2, 3.3] and id 2 = [1.0, -1.0, 0.0] as float32 bytes', async () => {
    const rows = (await rowsOf('vector')).flatMap((e) => images(e));
    const foo = rows.filter((r) => 'vector_column' in r && !('vector_column2' in r)).slice(0, 2);
    expect(foo.map((r) => [r.id, Buffer.from(r.vector_column as Buffer).toString('hex')])).toEqual([
      [1, 'cdcc8c3fcdcc0c4033335340'],
      [2, '0000803f000080bf00000000'],
    ]);
  });

  it('connector-java compressed: the UPDATE inside the payload changes the 5th column Western → Western|Action', async () => {
    const [update] = await rowsOf('connector-java');
    const [before, after] = images(update as Delivered);
    expect([before?.c1, before?.c2, before?.c5, after?.c5]).toEqual([1, 'Once Upon a Time in the West', 'Western', 'Western|Action']);
  });
});
