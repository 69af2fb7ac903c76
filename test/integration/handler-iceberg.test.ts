import type { Context } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { icebergRows, mysqlText } from '../support/iceberg-merge.ts';
import { logs, printed } from '../support/output.ts';
import { testSource } from '../support/source.ts';

const context = (ms: number): Context =>
  ({
    functionName: 'sluice-test-iceberg',
    awsRequestId: `req-${Math.random().toString(16).slice(2)}`,
    getRemainingTimeInMillis: () => ms,
  }) as unknown as Context;

describe('the iceberg Lambda handler (real stack)', () => {
  it('merges every table of the source as the schedule runs it, logs the run, and starts no table without time left', async () => {
    await using source = await testSource('hice');
    await source.capture();
    await source.sql(
      "CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(10)); INSERT INTO a VALUES (1, 'x'), (2, 'y'); CREATE TABLE b (k INT); INSERT INTO b VALUES (7), (7)",
    );
    await source.capture();
    Object.assign(process.env, { SLUICE_SOURCE_ID: source.db, SLUICE_PREFIX: source.db, SLUICE_INCLUDE: `${source.db}\\..*` });
    const { handler } = await import('../../functions/iceberg.ts');

    // Less than the margin one table needs: nothing is started, the next tick does it.
    const late = await printed(() => handler({}, context(60_000)));
    expect((late.result as { status: string }[]).map((t) => t.status)).toEqual(['busy', 'busy']);

    const run = await printed(() => handler({}, context(900_000)));
    expect(run.result).toEqual([
      { table: `${source.db}.a`, status: 'merged', mode: 'rewrite' },
      { table: `${source.db}.b`, status: 'merged', mode: 'rewrite' },
    ]);
    expect(logs(run.documents, 'Iceberg merge run finished')).toMatchObject([{ level: 'INFO', function_name: 'sluice-test-iceberg' }]);
    for (const table of ['a', 'b']) expect(await icebergRows(source, table)).toEqual(await mysqlText(source, table));
  });
});
