import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { SourceRegistry } from '../../lib/fleet/registry.ts';

describe('a source id (lib/fleet/registry.ts)', () => {
  it("refuses ids whose output would share the stack's own folders, before anything is written", async () => {
    const sent: unknown[] = [];
    const client = { send: async (command: unknown) => void sent.push(command) } as unknown as DynamoDBClient;
    const registry = new SourceRegistry(client, 'state');
    const record = (id: string) => ({ id, settings: { SLUICE_MYSQL_URL: 'mysql://u:p@db:3306/' }, paused: false, everyMinutes: 1, iceberg: true });
    for (const id of ['_staging', '_x', 'tables', 'manifests', 'schema', 'iceberg', 'Iceberg', 'sources'])
      await expect(registry.add(record(id), 0), id).rejects.toThrow(/share the stack's folders/);
    expect(sent).toEqual([]);
  });
});
