import { describe, expect, it } from 'vitest';
import { sluice } from '../support/cli.ts';
import { JSON_OPAQUE_DOCUMENTS } from '../support/mysql-binlog-file.ts';
import { type Fixture, fixtures, requireFixtures } from './fixtures.ts';
import { captureSource, errorCode, prepareSchema, replay, rowsTheSqlLeaves } from './replay-helpers.ts';

requireFixtures();

describe('sluice capture --once through the replay source (SLUICE_STARTUP=earliest)', () => {
  const all = fixtures();

  it('mysqlbinlog2parquet: three consecutive 8.0.46 files, rotation included, land as the tables their SQL leaves', async () => {
    const fixture = all.find((f) => f.files.length === 3) as Fixture;
    await prepareSchema(fixture);
    await using server = await replay(fixture);
    const source = await captureSource(fixture, server);
    const run = await source.capture();
    expect({ code: run.code, error: run.code === 0 ? undefined : errorCode(run) }, run.stderr).toEqual({ code: 0, error: undefined });

    const tables = ['customers', 'items', 'accounts', 'metrics'];
    // 2026-04-28 22:14:01 UTC, the recording's clock (README: items.created_at).
    const expected = await rowsTheSqlLeaves(
      ['mysqlbinlog2parquet--01-basic-crud.sql', 'mysqlbinlog2parquet--02-multi-statement-txn.sql', 'mysqlbinlog2parquet--03-mixed-types.sql'],
      1777414441,
      tables,
    );
    for (const t of tables) expect(await source.materialized('binlogtest', t), t).toEqual(expected.get(t));
    // Every event from all three files, each from the file that holds it.
    const events = await source.events();
    const files = new Set(events.map((e) => (e.source as { file?: string } | undefined)?.file).filter(Boolean));
    expect([...files].sort()).toEqual(['mysql-bin.000005', 'mysql-bin.000006', 'mysql-bin.000007']);
    expect(events.filter((e) => ['c', 'u', 'd'].includes(e.op as string)).length).toBe(5 + 2 + 1 + 2 + 2 + 3 + 1);
  });

  it('SLUICE_STARTUP=gtid:<set with a gap> emits exactly the transactions outside the set, each once (the held ones after the gap are skipped, across a rotation)', {
    timeout: 240_000,
  }, async () => {
    const fixture = all.find((f) => f.files.length === 3) as Fixture;
    await prepareSchema(fixture);
    await using server = await replay(fixture);
    const uuid = '8a18b986-434f-11f1-a27f-ce6a53da2f24';
    const changes = async (startup: string) => {
      const source = await captureSource(fixture, server, startup);
      const run = await source.capture();
      expect({ startup, code: run.code, error: run.code === 0 ? undefined : errorCode(run) }, run.stderr).toEqual({ startup, code: 0, error: undefined });
      return (await source.events())
        .filter((e) => ['c', 'u', 'd'].includes(e.op as string))
        .map((e) => JSON.stringify([(e.source as { gtid: string }).gtid, e.table, e.op, e.key, e.after]));
    };
    // Every transaction (7-19) from the start; then the set :1-8:10-15, a gap at 9, whose held 14-15 are in the next file.
    const every = await changes('earliest');
    const gap = await changes(`gtid:${uuid}:1-8:10-15`);
    const held = (line: string) => {
      const gno = Number((JSON.parse(line) as [string])[0].split(':')[1]);
      return gno <= 8 || (gno >= 10 && gno <= 15);
    };
    const expected = every.filter((line) => !held(line));
    expect(new Set(expected.map((line) => (JSON.parse(line) as [string])[0])).size, 'the fixture has changes on both sides of the gap').toBeGreaterThan(1);
    expect(every.some(held), 'the set holds transactions with changes').toBe(true);
    expect(gap).toEqual(expected);
  });

  for (const fixture of all.filter((f) => f.refusal)) {
    it(`${fixture.name}: refused with ${fixture.refusal}`, async () => {
      await prepareSchema(fixture);
      await using server = await replay(fixture);
      const source = await captureSource(fixture, server);
      const run = await source.capture();
      expect({ code: run.code === 0 ? 0 : 'failed', error: errorCode(run) }, run.stdout + run.stderr).toEqual({ code: 'failed', error: fixture.refusal });
    });
  }

  // Files sluice accepts, compared with the values the README (the origin repositories' tests) lists.
  // enum-string-set, mysql_type_bit and invisible-columns wrote their rows to the `mysql` schema,
  // which sluice never captures (lib/config/config.ts SYSTEM_SCHEMAS): their values are checked at
  // the decoder (replay.test.ts) instead.
  const accepted = (name: string) => all.find((f) => f.name.startsWith(name)) as Fixture;
  const afterImages = async (name: string, table: string) => {
    const fixture = accepted(name);
    await prepareSchema(fixture);
    await using server = await replay(fixture);
    const source = await captureSource(fixture, server);
    const run = await source.capture();
    expect({ code: run.code, error: run.code === 0 ? undefined : errorCode(run) }, run.stderr).toEqual({ code: 0, error: undefined });
    const events = await source.events();
    return events.filter((e) => e.table === table && ['c', 'u', 'd'].includes(e.op as string));
  };

  it('json-opaque (9.0.1): the eight JSON documents as MySQL prints them', async () => {
    const events = await afterImages('json-opaque', 'test');
    // Compared as text: JSON.parse would lose the DECIMAL's scale.
    expect(events.map((e) => (e.after as { a: unknown }).a)).toEqual(JSON_OPAQUE_DOCUMENTS);
  });

  it('vector (9.0.1): VECTOR values as their float32 bytes', async () => {
    const events = await afterImages('vector', 'foo');
    // README: id 1 = cd cc 8c 3f cd cc 0c 40 33 33 53 40 (1.1, 2.2, 3.3), id 2 = 00 00 80 3f 00 00 80 bf 00 00 00 00;
    // written as base64 of the bytes, as VARBINARY is (docs/FORMAT.md has no VECTOR row yet).
    const b64 = (hex: string) => Buffer.from(hex.replace(/ /g, ''), 'hex').toString('base64');
    expect(events.slice(0, 2).map((e) => e.after)).toEqual([
      { id: 1, vector_column: b64('cd cc 8c 3f cd cc 0c 40 33 33 53 40') },
      { id: 2, vector_column: b64('00 00 80 3f 00 00 80 bf 00 00 00 00') },
    ]);
  });

  // The compressed fixtures are also binlog_row_metadata=MINIMAL, which preflight refuses first
  // (above). To reach their decoding end to end, these runs present the server as FULL — a claim
  // the files do not support (their TABLE_MAPs carry no names: the columns come from --schema-from).
  const pastPreflight = async (name: string) => {
    const fixture = accepted(name);
    const asFull = { ...fixture, variables: { ...fixture.variables, binlog_row_metadata: 'FULL' } };
    await prepareSchema(asFull);
    await using server = await replay(asFull);
    const source = await captureSource(asFull, server);
    const run = await source.capture();
    expect({ code: run.code, error: run.code === 0 ? undefined : errorCode(run) }, run.stderr).toEqual({ code: 0, error: undefined });
    return (await source.events())
      .filter((e) => ['c', 'u', 'd'].includes(e.op as string))
      .map((e) => ({ table: e.table, op: e.op, before: e.before, after: e.after }));
  };

  it('transaction_compression (8.0.32): the row inside the compressed payload', async () => {
    // The payload decompressed by hand (zstd -d): WRITE_ROWS_V2 of test.tb1, one INT, value 1.
    expect(await pastPreflight('transaction_compression')).toEqual([{ table: 'tb1', op: 'c', before: null, after: { c1: 1 } }]);
  });

  it('connector-java compressed (8.0.28): the UPDATE inside the payload, Western → Western|Action', async () => {
    const events = await pastPreflight('connector-java');
    expect(events.map((e) => [e.table, e.op])).toEqual([['movies', 'u']]);
    expect(events[0]?.before).toMatchObject({ c1: 1, c2: 'Once Upon a Time in the West', c3: 1968, c5: 'Western' });
    expect(events[0]?.after).toMatchObject({ c1: 1, c2: 'Once Upon a Time in the West', c3: 1968, c5: 'Western|Action' });
  });

  it('connector-rust 000057 (8.0.31): the rows of both payloads', async () => {
    const events = await pastPreflight('connector-rust');
    expect(events.map((e) => [e.table, e.op])).toEqual([
      ['b', 'c'],
      ['test_table_3', 'u'],
      ['test_table_3', 'c'],
    ]);
    expect(events[0]?.after).toEqual({ id: 1 });
    expect(events[1]?.after).toMatchObject({ product_id: 55555, enum_field: 'large', set_field: 'c', product_item_2: 'product_3_value' });
    expect(events[2]?.after).toMatchObject({ product_id: 6666, c2: 'product_item_value_2', c4: 111, c10: '{"c": 1}' });
  });

  for (const name of ['02_query', 'previous_GTID_no_tag']) {
    it(`${name}: a history without rows captures to an empty output`, async () => {
      const fixture = accepted(name);
      await prepareSchema(fixture);
      await using server = await replay(fixture);
      const source = await captureSource(fixture, server);
      const run = await source.capture();
      expect({ code: run.code, error: run.code === 0 ? undefined : errorCode(run) }, run.stderr).toEqual({ code: 0, error: undefined });
      expect((await source.events()).filter((e) => ['c', 'u', 'd'].includes(e.op as string))).toEqual([]);
    });
  }
});

describe('sluice doctor against the replay source', () => {
  for (const version of [undefined, '9.1.0']) {
    it(`as ${version ?? '8.0.46 (the files)'}: passes`, async () => {
      const fixture = fixtures().find((f) => f.files.length === 3) as Fixture;
      await prepareSchema(fixture);
      await using server = await replay(fixture, { version });
      const source = await captureSource(fixture, server);
      const run = await sluice(['doctor'], source.env);
      expect({ code: run.code, error: run.code === 0 ? undefined : errorCode(run) }, run.stdout + run.stderr).toEqual({ code: 0, error: undefined });
      expect(run.stdout).toMatch(/^ok {4}MySQL .*: binlog settings and grants$/m);
    });
  }

  it('names the fix for a server whose binlog sluice cannot read (MINIMAL metadata, compressed transactions)', async () => {
    const fixture = fixtures().find((f) => f.files[0] === 'mysql-binlog-connector-rust--mysql-bin.000057') as Fixture;
    await prepareSchema(fixture);
    await using server = await replay(fixture);
    const source = await captureSource(fixture, server);
    const run = await sluice(['doctor'], source.env);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^FAIL {2}MySQL .*binlog_row_metadata is MINIMAL.*Fix: SET GLOBAL binlog_row_metadata = 'FULL'/m);
  });
});
