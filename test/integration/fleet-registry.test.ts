import { randomBytes } from 'node:crypto';
import { DeleteTableCommand, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dynamoClient } from '../../lib/aws.ts';
import { SourceRegistry } from '../../lib/fleet/registry.ts';
import { ensureStateTable } from '../../lib/state/dynamodb.ts';

/** A registry in a state table of its own: the shared table's fleet index would hold other files' sources. */
async function freshRegistry() {
  const dynamo = dynamoClient(process.env);
  const table = `sluice-fleet-${randomBytes(4).toString('hex')}`;
  await ensureStateTable(dynamo, table);
  return { dynamo, table, registry: new SourceRegistry(dynamo, table) };
}

const record = (id: string, settings: Record<string, string> = { SLUICE_MYSQL_SECRET_ID: `secret-${id}` }) => ({
  id,
  settings,
  paused: false,
  everyMinutes: 1,
  iceberg: true,
});

describe('the source registry in DynamoDB', () => {
  let fixture: Awaited<ReturnType<typeof freshRegistry>>;
  beforeAll(async () => {
    fixture = await freshRegistry();
  });
  afterAll(async () => {
    await fixture.dynamo.send(new DeleteTableCommand({ TableName: fixture.table }));
    fixture.dynamo.destroy();
  });

  it('adds, refuses a second add of the id, updates, removes; an unknown id is named', async () => {
    const { registry } = fixture;
    expect(await registry.list()).toEqual([]);
    const added = await registry.add(record('orders', { SLUICE_MYSQL_URL: 'mysql://u:p@db:3306/' }), 1_000);
    expect(added).toEqual({ ...record('orders', { SLUICE_MYSQL_URL: 'mysql://u:p@db:3306/' }), addedAt: 1_000, updatedAt: 1_000 });
    expect(await registry.get('orders')).toEqual(added);
    await expect(registry.add(record('orders'), 2_000)).rejects.toMatchObject({
      code: 'SOURCE_EXISTS',
      message: expect.stringContaining('source orders is already registered'),
    });
    expect(await registry.get('orders')).toEqual(added); // the refused add changed nothing

    const paused = await registry.update('orders', { paused: true, everyMinutes: 5 }, 3_000);
    expect(paused).toEqual({ ...added, paused: true, everyMinutes: 5, updatedAt: 3_000 });
    const resettled = await registry.update('orders', { settings: { SLUICE_MYSQL_SECRET_ID: 'orders' }, iceberg: false }, 4_000);
    expect(resettled).toEqual({ ...paused, settings: { SLUICE_MYSQL_SECRET_ID: 'orders' }, iceberg: false, updatedAt: 4_000 });
    await expect(registry.update('orders', { everyMinutes: 0 }, 5_000)).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
    await expect(registry.add(record('bad id'), 5_000)).rejects.toMatchObject({ code: 'CONFIG_INVALID', message: expect.stringContaining('"bad id"') });

    for (const missing of [() => registry.update('nope', { paused: true }, 5_000), () => registry.remove('nope')])
      await expect(missing()).rejects.toMatchObject({ code: 'SOURCE_NOT_FOUND', message: expect.stringContaining('source nope is not registered') });
    expect(await registry.get('nope')).toBeUndefined();

    expect(await registry.remove('orders')).toEqual(resettled);
    expect(await registry.get('orders')).toBeUndefined();
    expect(await registry.list()).toEqual([]);
    // The index item lost the id in the same transaction; the id can be registered again.
    const index = await fixture.dynamo.send(new GetItemCommand({ TableName: fixture.table, Key: { pk: { S: 'fleet' } }, ConsistentRead: true }));
    expect(index.Item?.ids).toBeUndefined();
    expect((await registry.add(record('orders'), 6_000)).addedAt).toBe(6_000);
    await registry.remove('orders');
  });

  it('lists 250 sources sorted by id, across BatchGetItem chunks of 100', async () => {
    const { registry } = fixture;
    const ids = Array.from({ length: 250 }, (_, i) => `src-${String((i * 97) % 250).padStart(3, '0')}`);
    for (let i = 0; i < ids.length; i += 25) await Promise.all(ids.slice(i, i + 25).map((id) => registry.add(record(id), 10)));
    const listed = await registry.list();
    expect(listed.map((r) => r.id)).toEqual([...ids].sort());
    expect(listed[137]).toEqual({ ...record('src-137'), addedAt: 10, updatedAt: 10 });
    // Concurrent adds and removes keep the index exact.
    await Promise.all(ids.filter((_, i) => i % 2).map((id) => registry.remove(id)));
    expect((await registry.list()).map((r) => r.id)).toEqual(ids.filter((_, i) => i % 2 === 0).sort());
  });
});
