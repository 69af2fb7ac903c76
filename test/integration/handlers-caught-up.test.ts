import type { Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { logs, printed } from '../support/output.ts';
import { testSource } from '../support/source.ts';

describe('poller Lambda with SLUICE_STOP_WHEN_CAUGHT_UP=true', () => {
  it('ends the run once caught up instead of holding the function until its time is up', async () => {
    await using source = await testSource('caughtup');
    await source.sql('CREATE TABLE a (id INT PRIMARY KEY)');
    Object.assign(process.env, {
      SLUICE_SOURCE_ID: source.db,
      SLUICE_PREFIX: source.db,
      SLUICE_INCLUDE: `${source.db}\\..*`,
      SLUICE_STARTUP: 'latest',
      SLUICE_STOP_WHEN_CAUGHT_UP: 'true',
    });
    const { handler } = await import('../../functions/poller.ts');
    const context = { functionName: 'sluice-test-poller', awsRequestId: 'caught-up-1', getRemainingTimeInMillis: () => 30_000 } as unknown as Context;
    await printed(() => handler({}, context));
    await source.sql('INSERT INTO a VALUES (1), (2)');
    const started = Date.now();
    const { result, documents } = await printed(() => handler({}, { ...context, awsRequestId: 'caught-up-2' } as Context));
    expect(result).toMatchObject({ events: 2, caughtUp: true, lagSeconds: 0 });
    expect(Date.now() - started).toBeLessThan(10_000); // budget mode would read for ~28 s
    expect(logs(documents, 'capture run finished')).toMatchObject([{ function_request_id: 'caught-up-2', events: 2, caughtUp: true }]);
  });
});
