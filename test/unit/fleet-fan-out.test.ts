import { describe, expect, it } from 'vitest';
import { fanOut } from '../../lib/fleet/fan-out.ts';
import type { SourceRecord } from '../../lib/fleet/registry.ts';
import { silentLog } from '../../lib/log.ts';

const record = (id: string, extra: Partial<SourceRecord> = {}): SourceRecord => ({
  id,
  settings: { SLUICE_MYSQL_URL: `mysql://u:p@127.0.0.1:3306/${id}` },
  paused: false,
  everyMinutes: 1,
  iceberg: true,
  addedAt: 0,
  updatedAt: 0,
  ...extra,
});
/** 10:03 UTC: minute 3 of the hour. */
const now = Date.UTC(2026, 11, 5, 10, 3, 20);

describe('a scheduled tick for the fleet (lib/fleet/fan-out.ts)', () => {
  it('starts every due source once, skips the paused, the ones not due this minute and the ones the function does not cover', async () => {
    const started: string[] = [];
    const sources = [
      record('a'),
      record('b', { paused: true }),
      record('c', { everyMinutes: 3 }), // minute 3: due
      record('d', { everyMinutes: 2 }), // minute 3: not due
      record('e', { iceberg: false }),
    ];
    const all = await fanOut(
      async () => sources,
      async (id) => void started.push(id),
      { now, log: silentLog },
    );
    expect(all).toEqual({ started: ['a', 'c', 'e'], failed: [] });
    expect(started.sort()).toEqual(['a', 'c', 'e']);
    // The merge's own schedule: every source it covers that is not paused, whatever its capture schedule.
    const merged = await fanOut(
      async () => sources,
      async () => undefined,
      { now, log: silentLog, covers: (r) => r.iceberg, everyTick: true },
    );
    expect(merged.started).toEqual(['a', 'c', 'd']);
  });

  it("one source's failed start holds back no other, and at most 16 start at once", async () => {
    const sources = Array.from({ length: 100 }, (_, i) => record(`s${String(i).padStart(3, '0')}`));
    let running = 0;
    let most = 0;
    const result = await fanOut(
      async () => sources,
      async (id) => {
        running++;
        most = Math.max(most, running);
        await new Promise((resolve) => setImmediate(resolve));
        running--;
        if (id === 's007' || id === 's050') throw new Error('throttled');
      },
      { now, log: silentLog },
    );
    expect(result.failed).toEqual(['s007', 's050']);
    expect(result.started).toHaveLength(98);
    expect(most).toBe(16);
  });

  it('a registry that cannot be read is logged and counted, and starts nothing: the stack’s own source still runs', async () => {
    const result = await fanOut(
      async () => {
        throw new Error('ProvisionedThroughputExceededException');
      },
      async () => undefined,
      { now, log: silentLog },
    );
    expect(result).toEqual({ started: [], failed: ['(registry)'] });
  });
});
