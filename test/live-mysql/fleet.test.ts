import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import type { Context } from 'aws-lambda';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SourceRegistry } from '../../lib/fleet/registry.ts';
import { stopProcess } from '../../lib/local/process.ts';
import { eventLines } from '../../lib/materialize/change-log.ts';
import { printed } from '../support/output.ts';
import { type PrivateServer, startPrivateServer } from '../support/private-server.ts';
import { type ChangeEvent, materialize, testSource } from '../support/source.ts';

/*
 * Ten sources of both flavors in one stack, as the scheduled functions run them: the stack's live
 * MySQL 8.0.31 and two private MariaDB servers, one of which is killed and restarted; one source is
 * paused and resumed, one added and one removed mid-run. Each tick's runs go concurrently, as
 * Lambda runs them. At the end every source's change log, materialized, equals its table on its
 * server (a removed one: as its table was when it was removed), and a source whose server was down
 * failed alone.
 */

/** Stands in for the Lambda Invoke API (AWS_ENDPOINT_URL_LAMBDA): records the async invocations a tick starts. */
const invocations: Record<string, unknown>[] = [];
const lambdaApi = createServer((req: IncomingMessage, res) => {
  let body = '';
  req.on('data', (chunk) => {
    body += chunk;
  });
  req.on('end', () => {
    invocations.push(JSON.parse(body || '{}'));
    res.writeHead(202, { 'content-type': 'application/json' }).end();
  });
});
const context = (): Context =>
  ({
    functionName: 'sluice-fleet10-poller',
    awsRequestId: `req-${randomBytes(4).toString('hex')}`,
    getRemainingTimeInMillis: () => 5_000,
  }) as unknown as Context;

/** One source of the test: its id, its database, the server it is on and how to write there. */
interface Member {
  readonly id: string;
  readonly db: string;
  readonly server: 'mysql' | 'mariadb-a' | 'mariadb-b';
  /** The rows its table holds when it was removed (a removed source's output stops there). */
  removedWith?: Map<string, Record<string, unknown>>;
}

describe('a fleet of ten sources on three servers of both flavors', () => {
  const dirs: string[] = [];
  const servers: PrivateServer[] = [];
  beforeAll(async () => {
    await new Promise<void>((resolve) => lambdaApi.listen(0, '127.0.0.1', resolve));
    process.env.AWS_ENDPOINT_URL_LAMBDA = `http://127.0.0.1:${(lambdaApi.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    lambdaApi.close();
    for (const server of servers) await stopProcess(server.pid);
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('captures each source exactly, none held back by another: a server killed and restarted, a source paused, one added, one removed', async () => {
    const table = `sluice-fleet10-${randomBytes(4).toString('hex')}`;
    await using own = await testSource('fleet10', { SLUICE_STATE_TABLE: table });
    const start = async (name: string, args: string[] = []) => {
      const dir = mkdtempSync(join(tmpdir(), `sluice-fleet-${name}-`));
      dirs.push(dir);
      const server = await startPrivateServer(dir, 'mariadb', args);
      servers.push(server);
      return { dir, server };
    };
    const a = await start('a');
    let b = await start('b');
    const bPort = b.server.port;
    const admins = {
      mysql: own.admin,
      'mariadb-a': await mysql.createConnection({ uri: a.server.adminUrl, multipleStatements: true }),
      'mariadb-b': await mysql.createConnection({ uri: b.server.adminUrl, multipleStatements: true }),
    };
    // What a source on the stack's MySQL needs to reach it as sluice's own user (verified TLS).
    const mysqlConnection = Object.fromEntries(
      ['SLUICE_MYSQL_URL', 'SLUICE_MYSQL_TLS', 'SLUICE_MYSQL_CA'].flatMap((k) => (process.env[k] ? [[k, process.env[k] as string]] : [])),
    );
    const connection = (server: Member['server']) =>
      server === 'mysql' ? mysqlConnection : server === 'mariadb-a' ? a.server.env : { SLUICE_MYSQL_URL: b.server.env.SLUICE_MYSQL_URL as string };

    Object.assign(process.env, {
      SLUICE_SOURCE_ID: own.db,
      SLUICE_PREFIX: own.db,
      SLUICE_INCLUDE: `${own.db}\\.t`,
      SLUICE_STARTUP: 'latest',
      SLUICE_SAFETY_MARGIN_SECONDS: '2',
      SLUICE_STATE_TABLE: table,
    });
    const registry = new SourceRegistry(own.clients.dynamo, table);
    const members: Member[] = [];
    const add = async (server: Member['server'], n: number) => {
      const id = `${own.db}-${server}-${n}`;
      const db = `${own.db}_${server.replace('-', '_')}_${n}`;
      await admins[server].query(`CREATE DATABASE \`${db}\`; CREATE TABLE \`${db}\`.t (id INT PRIMARY KEY, v VARCHAR(40))`);
      await registry.add(
        { id, settings: { ...connection(server), SLUICE_INCLUDE: `${db}\\.t`, SLUICE_STARTUP: 'latest' }, paused: false, everyMinutes: 1, iceberg: false },
        Date.now(),
      );
      const member: Member = { id, db, server };
      members.push(member);
      return member;
    };
    for (let n = 0; n < 4; n++) await add('mysql', n);
    for (let n = 0; n < 3; n++) await add('mariadb-a', n);
    for (let n = 0; n < 3; n++) await add('mariadb-b', n);
    expect(members).toHaveLength(10);

    const { handler: poller } = await import('../../functions/poller.ts');
    /** One tick and, concurrently, every run it started: which started, and how each ended. */
    const tick = async () => {
      invocations.length = 0;
      // Their logs and metrics (stdout, as Lambda reads them) are kept out of the test's output.
      const { result } = await printed(async () => {
        await poller({}, context());
        const started = invocations.splice(0) as { sourceId: string }[];
        const ended = await Promise.allSettled(started.map((payload) => poller(payload, context())));
        return new Map(started.map((payload, i) => [payload.sourceId, ended[i]?.status === 'fulfilled' ? 'ok' : 'failed']));
      });
      return result;
    };
    let next = 0;
    /** A few inserts, updates and deletes in every live member's table whose server is up. */
    const write = async (down: Set<Member['server']> = new Set()) => {
      for (const member of members)
        if (!down.has(member.server)) {
          const base = next++ * 10;
          await admins[member.server].query(
            `INSERT INTO \`${member.db}\`.t VALUES (${base + 1}, 'x${base}'), (${base + 2}, 'y${base}'), (${base + 3}, 'z${base}');
             UPDATE \`${member.db}\`.t SET v = CONCAT(v, '+') WHERE id % 2 = 0; DELETE FROM \`${member.db}\`.t WHERE id = ${base + 3}`,
          );
        }
    };
    const ran = (ended: Map<string, string>) => [...ended].filter(([, how]) => how === 'ok').map(([id]) => id);

    // The first runs: each source starts at its server's end.
    expect(ran(await tick()).sort()).toEqual(members.map((m) => m.id).sort());
    await write();
    expect(ran(await tick())).toHaveLength(10);

    // Server b dies: its three sources fail, alone; the seven others capture what was written.
    await write();
    process.kill(b.server.pid, 'SIGKILL');
    const whileDown = await tick();
    expect(
      [...whileDown]
        .filter(([, how]) => how === 'failed')
        .map(([id]) => id)
        .sort(),
    ).toEqual(
      members
        .filter((m) => m.server === 'mariadb-b')
        .map((m) => m.id)
        .sort(),
    );
    expect(ran(whileDown)).toHaveLength(7);

    // b comes back on its port; a source is paused, one added, one removed.
    b = { ...b, server: { ...(await startPrivateServer(b.dir, 'mariadb', [`--port=${bPort}`])), port: bPort } };
    servers.push(b.server);
    admins['mariadb-b'] = await mysql.createConnection({ uri: b.server.adminUrl.replace(/:\d+\//, `:${bPort}/`), multipleStatements: true });
    const paused = members[1] as Member;
    await registry.update(paused.id, { paused: true }, Date.now());
    const added = await add('mysql', 4);
    const removed = members[5] as Member;
    const before = await tick(); // the added source's first run starts at its server's end
    expect(before.has(paused.id)).toBe(false);
    expect(ran(before)).toHaveLength(10);
    await registry.remove(removed.id);
    removed.removedWith = new Map(
      ((await admins[removed.server].query(`SELECT id, v FROM \`${removed.db}\`.t`)) as unknown as [Record<string, unknown>[]])[0].map((r) => [
        JSON.stringify({ id: r.id }),
        r,
      ]),
    );
    await write();
    const after = await tick();
    expect(after.has(removed.id)).toBe(false);
    expect(ran(after)).toHaveLength(9); // 11 registered, 1 paused, 1 removed
    await registry.update(paused.id, { paused: false }, Date.now());
    await write();
    expect(ran(await tick())).toHaveLength(10);
    expect(added.id).toBeDefined();

    // Every source's output equals its table (a removed one's, its table when removed); none has another's rows.
    for (const member of members) {
      const events: ChangeEvent[] = [];
      for await (const { line } of eventLines(own.clients.s3, own.config.bucket, `${own.db}/${member.id}/`, member.id)) events.push(JSON.parse(line));
      expect(new Set(events.filter((e) => e.op !== 't').map((e) => e.db)), member.id).toEqual(new Set([member.db]));
      const [rows] = (await admins[member.server].query(`SELECT id, v FROM \`${member.db}\`.t`)) as unknown as [Record<string, unknown>[]];
      const expected = member.removedWith ?? new Map(rows.map((r) => [JSON.stringify({ id: r.id }), r]));
      const actual = materialize(events, { db: member.db, table: 't' });
      expect(new Map([...actual].map(([k, r]) => [k, { id: r.id, v: r.v }])), member.id).toEqual(
        new Map([...expected].map(([k, r]) => [k, { id: r.id, v: r.v }])),
      );
      if (!member.removedWith) expect(actual.size, member.id).toBeGreaterThan(0);
    }
    for (const server of ['mariadb-a', 'mariadb-b'] as const) await admins[server].end();
    await own.clients.dynamo.send(new DeleteTableCommand({ TableName: table }));
  });
});
