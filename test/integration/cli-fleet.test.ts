import { randomBytes } from 'node:crypto';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { dynamoClient } from '../../lib/aws.ts';
import { run } from '../../lib/cli/main.ts';
import { SourceRegistry } from '../../lib/fleet/registry.ts';
import { eventLines } from '../../lib/materialize/change-log.ts';
import { ensureStateTable } from '../../lib/state/dynamodb.ts';
import { type TestSource, testSource } from '../support/source.ts';

/** Runs `sluice` in-process; returns the exit code and what it printed on each stream. */
async function sluice(env: Record<string, string | undefined>, args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await run(args, { env, stdout: { write: (t: string) => out.push(t) }, stderr: { write: (t: string) => err.push(t) } });
  return { code, out: out.join(''), err: err.join('') };
}

/**
 * A stack whose own source is `source` (its database), with a state table of its own: the shared
 * table's fleet index would show other files' sources, and theirs this file's.
 */
async function fleetStack(source: TestSource) {
  const dynamo = dynamoClient(process.env);
  const table = `sluice-fleet-${randomBytes(4).toString('hex')}`;
  await ensureStateTable(dynamo, table);
  const env: Record<string, string | undefined> = {
    ...process.env,
    SLUICE_HOME: '/nonexistent',
    SLUICE_STATE_TABLE: table,
    SLUICE_SOURCE_ID: source.db,
    SLUICE_PREFIX: `fleet-${source.db}`,
    SLUICE_INCLUDE: `${source.db}\\..*`,
    SLUICE_STARTUP: 'latest',
  };
  return {
    env,
    table,
    registry: new SourceRegistry(dynamo, table),
    /** What a registered source needs to reach the suite's server as sluice's own user (its TLS too, on MySQL). */
    connection: Object.fromEntries(
      ['SLUICE_MYSQL_URL', 'SLUICE_MYSQL_TLS', 'SLUICE_MYSQL_CA'].flatMap((k) => (process.env[k] ? [[k, process.env[k] as string]] : [])),
    ) as Record<string, string>,
    [Symbol.asyncDispose]: async () => {
      await dynamo.send(new DeleteTableCommand({ TableName: table }));
      dynamo.destroy();
    },
  };
}

describe('sluice sources and --source on a registered source', () => {
  it('add refuses bad settings, an id taken or the stack’s own, naming each problem, and writes nothing', async () => {
    await using source = await testSource('fleetbad');
    await using stack = await fleetStack(source);
    const refused = [
      [
        ['sources', 'add', 'x', '--url', 'mysql://u:p@db:3306/', '--set', 'SLUICE_BUCKET=other', '--set', 'SLUICE_MYSQL_URLS=typo'],
        /SLUICE_BUCKET: is the stack's, not a source's[\s\S]*SLUICE_MYSQL_URLS: is not a setting sluice knows/,
      ],
      [
        ['sources', 'add', 'x', '--set', 'SLUICE_BATCH_MAX_EVENTS=0'],
        /source x: invalid configuration:\n[\s\S]*SLUICE_BATCH_MAX_EVENTS: [\s\S]*SLUICE_MYSQL_URL: is required/,
      ],
      [['sources', 'add', 'x', '--url', 'mysql://u:p@db:3306/', '--startup', 'yesterday'], /SLUICE_STARTUP: expected initial, .* got "yesterday"/],
      [['sources', 'add', 'x', '--url', 'mysql://u:p@db:3306/', '--set', 'SLUICE_RUN_SECONDS'], /"SLUICE_RUN_SECONDS" is not KEY=VALUE/],
      [['sources', 'add', 'x', '--url', 'mysql://u:p@db:3306/', '--every', '0'], /every 0 minutes is not a schedule/],
      [['sources', 'add', source.db, '--url', 'mysql://u:p@db:3306/'], new RegExp(`source ${source.db} is this stack's own source`)],
      [['sources', 'set', 'x', 'SLUICE_RUN_SECONDS=5'], /SOURCE_NOT_FOUND: source x is not registered in this stack/],
      [['sources', 'remove', 'x'], /SOURCE_NOT_FOUND: source x is not registered/],
    ] as const;
    for (const [args, message] of refused) {
      const result = await sluice(stack.env, [...args]);
      expect({ args, code: result.code, err: result.err }).toEqual({ args, code: 1, err: expect.stringMatching(message) });
      expect(await stack.registry.list()).toEqual([]);
    }
    expect((await sluice(stack.env, ['sources', 'add', 'x', '--url', 'mysql://u:p@db:3306/'])).code).toBe(0);
    const taken = await sluice(stack.env, ['sources', 'add', 'x', '--secret', 'other']);
    expect(taken).toMatchObject({ code: 1, err: expect.stringContaining('SOURCE_EXISTS: source x is already registered') });
    // A change that would break the record is refused and leaves it as it was.
    const before = await stack.registry.get('x');
    expect((await sluice(stack.env, ['sources', 'set', 'x', 'SLUICE_MYSQL_URL='])).err).toMatch(/SLUICE_MYSQL_URL: is required/);
    expect(await stack.registry.get('x')).toEqual(before);
  });

  it('list, set, pause and resume never print a password; remove says what stays and how to delete it', async () => {
    await using source = await testSource('fleetmask');
    await using stack = await fleetStack(source);
    const password = `pw-${randomBytes(6).toString('hex')}`;
    const added = await sluice(stack.env, [
      'sources',
      'add',
      'orders',
      '--url',
      `mysql://reader:${password}@127.0.0.1:1/`,
      '--include',
      'shop\\..*',
      '--every',
      '5',
      '--no-iceberg',
      '--set',
      'SLUICE_BATCH_MAX_EVENTS=1000',
    ]);
    expect(added.code).toBe(0);
    expect(added.out).toContain('registered orders  active  every 5 min  iceberg off  mysql://reader:***@127.0.0.1:1/');
    expect(added.out).toContain(`its output goes to s3://${stack.env.SLUICE_BUCKET}/fleet-${source.db}/orders/`);
    expect((await stack.registry.get('orders'))?.settings).toEqual({
      SLUICE_MYSQL_URL: `mysql://reader:${password}@127.0.0.1:1/`,
      SLUICE_INCLUDE: 'shop\\..*',
      SLUICE_BATCH_MAX_EVENTS: '1000',
    });
    const billing = [
      '--set',
      'SLUICE_ICEBERG_CATALOG=rest',
      '--set',
      'SLUICE_ICEBERG_REST_URI=https://catalog.example',
      '--set',
      `SLUICE_ICEBERG_REST_TOKEN=${password}`,
    ];
    expect((await sluice(stack.env, ['sources', 'add', 'billing', '--url', 'mysql://billing@127.0.0.1:1/', ...billing])).code).toBe(0);

    const printed: string[] = [];
    const list = await sluice(stack.env, ['sources', 'list']);
    expect(list.out.split('\n').filter(Boolean)).toEqual([
      'billing  active  every 1 min  iceberg on  mysql://billing@127.0.0.1:1/  SLUICE_ICEBERG_CATALOG=rest  SLUICE_ICEBERG_REST_TOKEN=***  SLUICE_ICEBERG_REST_URI=https://catalog.example',
      'orders  active  every 5 min  iceberg off  mysql://reader:***@127.0.0.1:1/  SLUICE_BATCH_MAX_EVENTS=1000  SLUICE_INCLUDE=shop\\..*',
    ]);
    const json = await sluice(stack.env, ['sources', 'list', '--json']);
    expect(JSON.parse(json.out)).toMatchObject([
      { id: 'billing', settings: { SLUICE_ICEBERG_REST_TOKEN: '***' } },
      { id: 'orders', paused: false, everyMinutes: 5, iceberg: false, settings: { SLUICE_MYSQL_URL: 'mysql://reader:***@127.0.0.1:1/' } },
    ]);
    printed.push(list.out, json.out);
    const set = await sluice(stack.env, ['sources', 'set', 'orders', 'SLUICE_BATCH_MAX_EVENTS=', 'SLUICE_EXCLUDE=shop\\.tmp', '--every', '2', '--iceberg']);
    expect(set.out).toBe(
      'changed orders  active  every 2 min  iceberg on  mysql://reader:***@127.0.0.1:1/  SLUICE_EXCLUDE=shop\\.tmp  SLUICE_INCLUDE=shop\\..*\n',
    );
    const pause = await sluice(stack.env, ['sources', 'pause', 'orders']);
    expect(pause.out).toMatch(/^paused orders {2}paused {2}every 2 min/);
    expect((await stack.registry.get('orders'))?.paused).toBe(true);
    const resume = await sluice(stack.env, ['sources', 'resume', 'orders']);
    expect((await stack.registry.get('orders'))?.paused).toBe(false);
    // status lists both; their servers are not there, which is their own line, not the command's failure.
    const status = await sluice(stack.env, ['status']);
    expect(status.code).toBe(0);
    expect(status.out).toMatch(/^fleet {12}2 registered sources/m);
    expect(status.out).toMatch(
      /^ {2}orders {9}active, every 2 min; never ran; lag unknown \(cannot connect to MySQL at mysql:\/\/reader:\*\*\*@127\.0\.0\.1:1\/.*\); 0 commits; lease free$/m,
    );
    printed.push(set.out, pause.out, resume.out, status.out, status.err);
    expect(printed.join('\n')).not.toContain(password);

    const removed = await sluice(stack.env, ['sources', 'remove', 'orders']);
    expect(removed.code).toBe(0);
    expect(removed.out).toContain('removed source orders from the fleet');
    expect(removed.out).toContain(`its output: s3://${stack.env.SLUICE_BUCKET}/fleet-${source.db}/orders/`);
    expect(removed.out).toContain(`its state items in ${stack.table}: source#orders`);
    expect(removed.out).toContain('`sluice state export --source orders` still prints its position');
    expect(removed.out).toContain(`aws s3 rm --recursive s3://${stack.env.SLUICE_BUCKET}/fleet-${source.db}/orders/`);
    expect(removed.out).not.toContain(password);
    expect((await stack.registry.list()).map((r) => r.id)).toEqual(['billing']);
  });

  it('--source resolves a registered source: capture reads its own database into <prefix><id>/, state export and status see it', async () => {
    await using source = await testSource('fleetcap');
    await using stack = await fleetStack(source);
    const other = await source.database('_x');
    await source.sql(`CREATE TABLE ${other}.t (id INT PRIMARY KEY, v VARCHAR(10)); CREATE TABLE t (id INT PRIMARY KEY)`);
    const settings = Object.entries({ ...stack.connection, SLUICE_INCLUDE: `${other}\\..*`, SLUICE_STARTUP: 'latest' }).flatMap(([k, v]) => [
      '--set',
      `${k}=${v}`,
    ]);
    expect((await sluice(stack.env, ['sources', 'add', 'x', ...settings])).code).toBe(0);
    // The first runs only find where each source starts.
    expect((await sluice(stack.env, ['capture', '--once', '--source', 'x'])).out).toMatch(/captured 0 events/);
    expect((await sluice(stack.env, ['capture', '--once'])).out).toMatch(/captured 0 events/);
    await source.sql(`INSERT INTO ${other}.t VALUES (1, 'one'), (2, 'two'); INSERT INTO t VALUES (7)`);

    const x = await sluice(stack.env, ['capture', '--once', '--source', 'x']);
    expect(x.out).toMatch(/captured 2 events in 1 transactions/);
    const own = await sluice(stack.env, ['capture', '--once']);
    expect(own.out).toMatch(/captured 1 events in 1 transactions/);
    const read = async (prefix: string, sourceId: string) => {
      const rows: { db: string; table: string; after: unknown }[] = [];
      for await (const { line } of eventLines(source.clients.s3, stack.env.SLUICE_BUCKET as string, prefix, sourceId)) rows.push(JSON.parse(line));
      return rows.filter((e) => e.after).map((e) => `${e.db}.${e.table} ${JSON.stringify(e.after)}`);
    };
    expect(await read(`fleet-${source.db}/x/`, 'x')).toEqual([`${other}.t {"id":1,"v":"one"}`, `${other}.t {"id":2,"v":"two"}`]);
    expect(await read(`fleet-${source.db}/`, source.db)).toEqual([`${source.db}.t {"id":7}`]);

    const exported = JSON.parse((await sluice(stack.env, ['state', 'export', '--source', 'x'])).out);
    expect(exported).toMatchObject({ source: 'x', commitSeq: 2, position: expect.objectContaining({ file: expect.any(String) }) });
    const detail = JSON.parse((await sluice(stack.env, ['status', '--json', '--source', 'x'])).out);
    expect(detail).toMatchObject({ source: 'x', commitSeq: 2, stored: exported.position, positionOnServer: true });
    expect(detail.fleet).toBeUndefined();
    const all = JSON.parse((await sluice(stack.env, ['status', '--json'])).out);
    expect(all).toMatchObject({ source: source.db, fleet: [{ id: 'x', paused: false, status: { source: 'x', commitSeq: 2, stored: exported.position } }] });
    expect(all.fleet[0].status.lagBytes).toBeGreaterThanOrEqual(0);
    // Its Iceberg merge is its own too, and the fleet line says where it stands.
    expect((await sluice(stack.env, ['iceberg', '--source', 'x'])).code).toBe(0);
    const merged = JSON.parse((await sluice(stack.env, ['status', '--json'])).out);
    expect(merged.fleet[0].icebergTables).toMatchObject([{ table: `${other}.t`, commitSeq: 2, behind: 0 }]);
    expect((await sluice(stack.env, ['status'])).out).toMatch(/^ {2}x {2,}active, every 1 min; .*; iceberg 1 table, at most 0 commits behind$/m);
    // An id nobody registered is a source of the stack's own settings, as before the fleet.
    expect(JSON.parse((await sluice(stack.env, ['state', 'export', '--source', 'nobody'])).out)).toMatchObject({ source: 'nobody', position: null });
  });
});
