import { describe, expect, inject, it } from 'vitest';
import { countRequests } from '../../lib/aws.ts';
import { loadConfig } from '../../lib/config/config.ts';
import { comparePositions, fileNumber } from '../../lib/core/position.ts';
import { expectExactlyOnce, testSource } from '../support/source.ts';

const TABLES = 'CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(40), n INT); CREATE TABLE b (id INT PRIMARY KEY, v VARCHAR(40), n INT);';

describe('capture (real MariaDB, DynamoDB Local, S3 emulator)', () => {
  it('a CREATE or ALTER DATABASE elsewhere on the server, charset named or not, costs the source no commit', async () => {
    await using source = await testSource('otherdb');
    await source.sql(TABLES);
    await source.capture();
    const before = (await source.state())?.commitSeq ?? 0;
    const other = `elsewhere_${source.db}`;
    await source.sql(
      `CREATE DATABASE \`${other}\`; CREATE DATABASE \`${other}_l1\` CHARACTER SET latin1; ALTER DATABASE \`${other}\` COLLATE utf8mb4_bin; INSERT INTO a VALUES (1,'one',1); DROP DATABASE \`${other}\`; DROP DATABASE \`${other}_l1\``,
    );
    const result = await source.capture();
    expect(result.events).toBe(1);
    expect((await source.state())?.commitSeq).toBe(before + 1);
  });

  it("ALTER DATABASE naming no charset keeps the database's collation for the tables created after it", async () => {
    await using source = await testSource('alterdb');
    const other = await source.database('_l1', 'CHARACTER SET latin1');
    await source.capture();
    // MySQL's ALTER DATABASE takes no COMMENT; READ ONLY names no charset either.
    const neither = inject('stackServer') === 'mysql' ? 'READ ONLY = 0' : "COMMENT 'kept'";
    await source.sql(
      `ALTER DATABASE \`${other}\` ${neither}; CREATE TABLE \`${other}\`.t (id INT PRIMARY KEY, v VARCHAR(10)); INSERT INTO \`${other}\`.t VALUES (1, 'é')`,
    );
    await source.capture();
    const events = (await source.events()).filter((e) => e.db === other);
    // Read with the server's collation instead, the table would not match its version: reset and re-snapshot.
    expect(events.map((e) => `${e.op} ${e.op === 't' ? e.ddl?.kind : JSON.stringify(e.after)}`)).toEqual(['t create', 'c {"id":1,"v":"é"}']);
  });

  it("a database the filters come to include has the server's charset for the tables created in it after", async () => {
    await using source = await testSource('includedb');
    const narrow = source.configWith({ SLUICE_INCLUDE: `${source.db}\\..*` });
    await source.capture({ config: narrow });
    const other = await source.database('_l1', 'CHARACTER SET latin1');
    await source.capture({ config: narrow }); // ruled out by the filters: its charset is not recorded
    await source.capture(); // `db.*` takes it
    await source.sql(`CREATE TABLE \`${other}\`.t (id INT PRIMARY KEY, v VARCHAR(10)); INSERT INTO \`${other}\`.t VALUES (1, 'é')`);
    await source.capture();
    const events = (await source.events()).filter((e) => e.db === other);
    expect(events.map((e) => `${e.op} ${e.op === 't' ? e.ddl?.kind : JSON.stringify(e.after)}`)).toEqual(['t create', 'c {"id":1,"v":"é"}']);
  });

  it("a database the filters rule out and take back gets the server's charset again, not the one recorded before", async () => {
    await using source = await testSource('rounddb');
    const other = await source.database('_r', 'CHARACTER SET utf8mb4');
    await source.capture();
    await source.sql(`ALTER DATABASE \`${other}\` CHARACTER SET latin1`);
    await source.capture(); // recorded: latin1
    const narrow = source.configWith({ SLUICE_INCLUDE: `${source.db}\\..*` });
    await source.capture({ config: narrow });
    await source.sql(`ALTER DATABASE \`${other}\` CHARACTER SET utf8mb4`);
    await source.capture({ config: narrow }); // ruled out: not recorded
    await source.capture(); // taken back: utf8mb4, as the server says
    await source.sql(`CREATE TABLE \`${other}\`.t (id INT PRIMARY KEY, v VARCHAR(10)); INSERT INTO \`${other}\`.t VALUES (1, 'é')`);
    await source.capture();
    const events = (await source.events()).filter((e) => e.db === other);
    expect(events.map((e) => `${e.op} ${e.op === 't' ? e.ddl?.kind : JSON.stringify(e.after)}`)).toEqual(['t create', 'c {"id":1,"v":"é"}']);
  });

  it('captures inserts, updates and deletes across tables, in order, exactly once', async () => {
    await using source = await testSource('crud');
    await source.sql(TABLES);
    await source.capture(); // first run records the start position
    await source.sql(`INSERT INTO a VALUES (1,'one',1),(2,'two',2),(3,'three',3); INSERT INTO b VALUES (10,'ten',10);
      UPDATE a SET v='uno' WHERE id=1; DELETE FROM a WHERE id=2; UPDATE b SET n=n+1 WHERE id=10; UPDATE a SET id=30 WHERE id=3;`);
    const result = await source.capture();

    const { events, duplicates, differences } = await expectExactlyOnce(source, ['a', 'b']);
    expect(result.events).toBe(9);
    expect(duplicates).toBe(0);
    expect(differences).toEqual([]);
    expect(events.map((e) => `${e.table}:${e.op}:${JSON.stringify(e.key)}`).sort()).toEqual(
      [
        'a:c:{"id":1}',
        'a:c:{"id":2}',
        'a:c:{"id":3}',
        'b:c:{"id":10}',
        'a:u:{"id":1}',
        'a:d:{"id":2}',
        'b:u:{"id":10}',
        'a:d:{"id":3}',
        'a:c:{"id":30}',
      ].sort(),
    );
    const update = events.find((e) => e.op === 'u' && e.table === 'a');
    expect(update?.before).toEqual({ id: 1, v: 'one', n: 1 });
    expect(update?.after).toEqual({ id: 1, v: 'uno', n: 1 });
    // seq order is capture order: the PK change is a delete of 3 then a create of 30
    const aEvents = events.filter((e) => e.table === 'a').sort((x, y) => (x.seq < y.seq ? -1 : 1));
    expect(aEvents.slice(-2).map((e) => `${e.op}${JSON.stringify(e.key)}`)).toEqual(['d{"id":3}', 'c{"id":30}']);
    expect(await source.stagingKeys()).toEqual([]);
  });

  it('puts a multi-table transaction into one commit and never splits a transaction across batches', async () => {
    await using source = await testSource('txn', { SLUICE_BATCH_MAX_EVENTS: '50' });
    await source.sql(TABLES);
    await source.capture();
    await source.sql('BEGIN; INSERT INTO a VALUES (1,"x",1); INSERT INTO b VALUES (1,"y",1); COMMIT;');
    const values = Array.from({ length: 500 }, (_, i) => `(${i + 100},'bulk',${i})`).join(',');
    await source.sql(`BEGIN; INSERT INTO a VALUES ${values}; UPDATE b SET n = 2; COMMIT;`);
    await source.sql("INSERT INTO a VALUES (2,'after',2)");
    await source.capture();

    const manifests = await source.manifests();
    const { events, duplicates, differences } = await expectExactlyOnce(source, ['a', 'b']);
    expect(duplicates).toBe(0);
    expect(differences).toEqual([]);
    const commitOf = (txn: string) => new Set(events.filter((e) => e.source.txn === txn).map((e) => e.commitSeq));
    for (const txn of new Set(events.map((e) => e.source.txn))) expect(commitOf(txn).size).toBe(1);
    const first = events.find((e) => e.table === 'b' && e.op === 'c');
    expect(
      events
        .filter((e) => e.source.txn === first?.source.txn)
        .map((e) => e.table)
        .sort(),
    ).toEqual(['a', 'b']);
    // The 501-event transaction overshoots the 50-event limit: it stays whole and the batch is cut
    // at its end, so the next transaction lands in a later commit.
    const bulk = events.find((e) => e.after?.v === 'bulk');
    const after = events.find((e) => e.after?.v === 'after');
    expect(manifests.find((m) => m.commit_seq === bulk?.commitSeq)?.events).toBeGreaterThanOrEqual(501);
    expect(after?.commitSeq).toBeGreaterThan(bulk?.commitSeq ?? Infinity);
  });

  it('streams a transaction larger than a multipart part without buffering it whole', async () => {
    await using source = await testSource('large');
    await source.sql('CREATE TABLE a (id INT PRIMARY KEY, v MEDIUMTEXT, n INT)');
    await source.capture();
    // ~19 MB of random base64 in one transaction: ~14 MB gzipped, above the 8 MiB part size.
    await source.sql('BEGIN');
    for (let i = 0; i < 7; i++) {
      const random = Array.from({ length: 4 }, () => 'TO_BASE64(RANDOM_BYTES(1024))').join(', ');
      await source.sql(`INSERT INTO a SELECT seq + ${i * 500}, CONCAT(${random}), seq FROM seq_1_to_500`);
    }
    await source.sql('COMMIT');
    const requests = countRequests(source.clients.s3);
    await source.capture();
    const manifests = await source.dataManifests();
    expect(manifests).toHaveLength(1);
    expect(manifests[0]?.events).toBe(3500);
    expect(manifests[0]?.objects[0]?.bytes).toBeGreaterThan(19_000_000);
    expect(requests.get('UploadPartCommand')).toBeGreaterThanOrEqual(2);
    const rows = await source.sql('SELECT COUNT(*) AS n FROM a');
    expect((await source.events()).length).toBe(Number(rows[0]?.n));
  });

  it('resumes across runs and across binlog rotations', async () => {
    await using source = await testSource('resume');
    await source.sql(TABLES);
    await source.capture();
    await source.sql("INSERT INTO a VALUES (1,'r1',1)");
    await source.capture();
    await source.sql("INSERT INTO a VALUES (2,'r2',2); FLUSH BINARY LOGS; INSERT INTO a VALUES (3,'r3',3); UPDATE a SET n = 10 WHERE id = 1");
    await source.sql('FLUSH BINARY LOGS');
    await source.sql('DELETE FROM a WHERE id = 2; FLUSH BINARY LOGS');
    const before = (await source.state())?.position;
    const result = await source.capture();
    const after = (await source.state())?.position;

    const { events, duplicates, differences } = await expectExactlyOnce(source, ['a']);
    expect(duplicates).toBe(0);
    expect(differences).toEqual([]);
    expect(events).toHaveLength(5);
    expect(result.caughtUp).toBe(true);
    expect(before && after && comparePositions(after, before)).toBeGreaterThan(0);
    expect(after?.file).not.toBe(before?.file);
  });

  it('two pollers at once: one captures, the other exits without writing', async () => {
    await using source = await testSource('race');
    await source.sql(TABLES);
    await source.capture();
    await source.sql("INSERT INTO a VALUES (1,'x',1),(2,'y',2)");
    const results = await Promise.all([source.capture(), source.capture()]);
    expect(results.map((r) => r.status).sort()).toEqual(['busy', 'captured']);
    const { duplicates, differences, events } = await expectExactlyOnce(source, ['a']);
    expect(events).toHaveLength(2);
    expect(duplicates).toBe(0);
    expect(differences).toEqual([]);
  });

  it('SLUICE_TARGET_LATENCY_MS: a running poller commits each caught-up batch while it keeps running, and deletes staging in bulk', async () => {
    await using source = await testSource('latency');
    await source.sql(TABLES);
    await source.capture();
    // Batches are otherwise cut only when the run ends: an hour's age, far more events and bytes.
    const config = source.configWith({ SLUICE_TARGET_LATENCY_MS: '200', SLUICE_BATCH_MAX_AGE_SECONDS: '3600' });
    const requests = countRequests(source.clients.s3);
    const stop = new AbortController();
    let ended = false;
    const run = source.capture({ config, budgetMs: 120_000, stopWhenCaughtUp: false, signal: stop.signal }).finally(() => {
      ended = true;
    });
    const visible = async (manifests: number) => {
      for (let polls = 0; polls < 300 && (await source.dataManifests()).length < manifests; polls++) await new Promise((r) => setTimeout(r, 100));
      return (await source.dataManifests()).length;
    };
    try {
      await source.sql("INSERT INTO a VALUES (1,'one',1)");
      expect(await visible(1)).toBe(1);
      await source.sql("BEGIN; INSERT INTO a VALUES (2,'two',2); INSERT INTO b VALUES (3,'three',3); COMMIT");
      expect(await visible(2)).toBe(2);
      expect(ended).toBe(false);
    } finally {
      stop.abort();
    }
    const result = await run;
    expect(result.transactions).toBe(2);
    expect(result.commits).toBe(2);
    // The commits' staging objects are deleted together when the run ends, not one request per commit.
    expect(requests.get('DeleteObjectsCommand')).toBe(1);
    expect(await source.stagingKeys()).toEqual([]);
    const { events, duplicates, differences } = await expectExactlyOnce(source, ['a', 'b']);
    expect(events).toHaveLength(3);
    expect(duplicates).toBe(0);
    expect(differences).toEqual([]);
  });

  it('idle or filtered-out traffic still advances the stored position (heartbeat)', async () => {
    await using source = await testSource('idle');
    await using other = await testSource('noise');
    await source.sql(TABLES);
    await other.sql('CREATE TABLE t (id INT PRIMARY KEY)');
    await source.capture();
    const before = (await source.state())?.position;
    await other.sql('INSERT INTO t VALUES (1),(2),(3); FLUSH BINARY LOGS; INSERT INTO t VALUES (4)');
    const result = await source.capture();
    const after = (await source.state())?.position;

    expect(result.events).toBe(0);
    expect(result.heartbeats).toBeGreaterThanOrEqual(1);
    expect(result.caughtUp).toBe(true);
    expect(await source.dataManifests()).toEqual([]);
    // The filtered traffic crossed a FLUSH: the stored position left the old file.
    expect(before && after && fileNumber(after.file)).toBeGreaterThan(before ? fileNumber(before.file) : Infinity);
  });

  it('applies the include/exclude filters to tables', async () => {
    await using source = await testSource('filter');
    await source.sql(TABLES);
    const config = loadConfig({
      ...process.env,
      SLUICE_SOURCE_ID: source.db,
      SLUICE_PREFIX: source.db,
      SLUICE_INCLUDE: `${source.db}\\..*`,
      SLUICE_EXCLUDE: `${source.db}\\.b`,
    });
    await source.capture({ config });
    await source.sql("INSERT INTO a VALUES (1,'in',1); INSERT INTO b VALUES (1,'out',1)");
    await source.capture({ config });
    const events = await source.events();
    expect(events.map((e) => e.table)).toEqual(['a']);
    // The excluded table's transaction is not counted either.
    expect((await source.dataManifests()).map((m) => m.transactions)).toEqual([1]);
  });
});
