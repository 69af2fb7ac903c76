import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DeleteTableCommand } from '@aws-sdk/client-dynamodb';
import type { Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SourceRegistry } from '../../lib/fleet/registry.ts';
import { eventLines } from '../../lib/materialize/change-log.ts';
import { logs, printed } from '../support/output.ts';
import { type TestSource, testSource } from '../support/source.ts';

/** Stands in for the Lambda Invoke API (reached through AWS_ENDPOINT_URL_LAMBDA): records async invocations. */
const invocations: { functionName: string; payload: Record<string, unknown> }[] = [];
const lambdaApi = createServer((req: IncomingMessage, res) => {
  let body = '';
  req.on('data', (chunk) => {
    body += chunk;
  });
  req.on('end', () => {
    const functionName = decodeURIComponent(/\/functions\/([^/]+)\/invocations/.exec(req.url ?? '')?.[1] ?? '');
    invocations.push({ functionName, payload: JSON.parse(body || '{}') });
    res.writeHead(202, { 'content-type': 'application/json' }).end();
  });
});

/** What EventBridge sends for a schedule (a rule with no input). */
const scheduledEvent = {
  version: '0',
  id: '53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa',
  'detail-type': 'Scheduled Event',
  source: 'aws.events',
  account: '123456789012',
  time: '2026-12-05T10:00:00Z',
  region: 'us-east-1',
  resources: ['arn:aws:events:us-east-1:123456789012:rule/sluice-poller'],
  detail: {},
};

const context = (functionName: string, ms = 4_000): Context =>
  ({ functionName, awsRequestId: `req-${Math.random().toString(16).slice(2)}`, getRemainingTimeInMillis: () => ms }) as unknown as Context;

/** The `v` of every row event of table `t` a source's change log holds, in commit order. */
async function captured(own: TestSource, prefix: string, sourceId: string): Promise<string[]> {
  const values: string[] = [];
  for await (const { line } of eventLines(own.clients.s3, own.config.bucket, prefix, sourceId)) {
    const event = JSON.parse(line) as { op: string; after?: { v?: string } };
    if (event.op !== 't' && event.after?.v !== undefined) values.push(event.after.v);
  }
  return values;
}

describe('a fleet in one stack (Lambda handlers on the real stack; the Invoke API is a local stand-in)', () => {
  beforeAll(async () => {
    await new Promise<void>((resolve) => lambdaApi.listen(0, '127.0.0.1', resolve));
    process.env.AWS_ENDPOINT_URL_LAMBDA = `http://127.0.0.1:${(lambdaApi.address() as AddressInfo).port}`;
  });
  afterAll(() => lambdaApi.close());

  it("a tick starts each due source's run; each run captures its own database under its own prefix; a paused or removed source does nothing", async () => {
    // A state table of its own: the shared one's fleet index would reach other files' pollers.
    const table = `sluice-fleet-${randomBytes(4).toString('hex')}`;
    await using own = await testSource('fleet', { SLUICE_STATE_TABLE: table });
    const databases = [await own.database('_a'), await own.database('_b'), await own.database('_c')];
    // The stack's own source takes only its own database; each registered one, its own.
    Object.assign(process.env, {
      SLUICE_SOURCE_ID: own.db,
      SLUICE_PREFIX: own.db,
      SLUICE_INCLUDE: `${own.db}\\.t`,
      SLUICE_STARTUP: 'latest',
      SLUICE_SAFETY_MARGIN_SECONDS: '2',
      SLUICE_STATE_TABLE: table,
    });
    const registry = new SourceRegistry(own.clients.dynamo, own.config.stateTable);
    // What a registered source needs to reach the suite's server as sluice's own user (its TLS too, on MySQL).
    const connection = Object.fromEntries(
      ['SLUICE_MYSQL_URL', 'SLUICE_MYSQL_TLS', 'SLUICE_MYSQL_CA'].flatMap((k) => (process.env[k] ? [[k, process.env[k] as string]] : [])),
    );
    const ids = ['a', 'b', 'c'].map((suffix) => `${own.db}-${suffix}`);
    for (const [i, id] of ids.entries())
      await registry.add(
        {
          id,
          settings: { ...connection, SLUICE_INCLUDE: `${databases[i]}\\.t`, SLUICE_STARTUP: 'latest' },
          paused: false,
          everyMinutes: 1,
          iceberg: false,
        },
        Date.now(),
      );
    for (const db of [own.db, ...databases]) await own.sql(`CREATE TABLE \`${db}\`.t (id INT PRIMARY KEY, v VARCHAR(20))`);
    const { handler: poller } = await import('../../functions/poller.ts');

    /** One tick, then each run it started (as Lambda would run them); returns the sources the tick started. */
    const tick = async () => {
      invocations.length = 0;
      const { result } = await printed(async () => {
        // As EventBridge sends it: its `source` is its own, not one of the fleet's.
        await poller(scheduledEvent as never, context('sluice-fleet-poller'));
        const started = invocations.splice(0);
        for (const { payload } of started) await poller(payload, context('sluice-fleet-poller'));
        return started.map((i) => i.payload.sourceId).sort();
      });
      return result;
    };
    expect(await tick()).toEqual(ids); // the first runs: each source starts at the server's end (latest)

    for (const [i, db] of [own.db, ...databases].entries()) await own.sql(`INSERT INTO \`${db}\`.t VALUES (1, 'one-${i}'), (2, 'two-${i}')`);
    await registry.update(ids[1] as string, { paused: true }, Date.now());
    expect(await tick()).toEqual([ids[0], ids[2]]);
    // Paused: an event naming it (a run started before the pause) does nothing either.
    const paused = await printed(() => poller({ sourceId: ids[1] }, context('sluice-fleet-poller')));
    expect(paused.result).toEqual({ status: 'skipped', source: ids[1] });
    expect(logs(paused.documents, 'the source is not registered, or is paused: nothing to do')).toMatchObject([{ source: ids[1] }]);

    // Each change log holds its own database's rows, under its own prefix, and nothing else.
    expect(await captured(own, `${own.db}/`, own.db)).toEqual(['one-0', 'two-0']);
    expect(await captured(own, `${own.db}/${ids[0]}/`, ids[0] as string)).toEqual(['one-1', 'two-1']);
    expect(await captured(own, `${own.db}/${ids[1]}/`, ids[1] as string)).toEqual([]);
    expect(await captured(own, `${own.db}/${ids[2]}/`, ids[2] as string)).toEqual(['one-3', 'two-3']);

    // Resumed, it catches up; removed, a run started before the removal does nothing.
    await registry.update(ids[1] as string, { paused: false }, Date.now());
    await registry.remove(ids[2] as string);
    await own.sql(`INSERT INTO \`${databases[2]}\`.t VALUES (3, 'three-3')`);
    expect(await tick()).toEqual([ids[0], ids[1]]);
    expect(await captured(own, `${own.db}/${ids[1]}/`, ids[1] as string)).toEqual(['one-2', 'two-2']);
    expect((await printed(() => poller({ sourceId: ids[2] }, context('sluice-fleet-poller')))).result as unknown).toEqual({
      status: 'skipped',
      source: ids[2],
    });
    expect(await captured(own, `${own.db}/${ids[2]}/`, ids[2] as string)).toEqual(['one-3', 'two-3']);
    await own.clients.dynamo.send(new DeleteTableCommand({ TableName: table }));
  });
});
