import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config/config.ts';
import { silentLog } from '../../lib/log.ts';
import { exportState, importState } from '../../lib/ops/state-admin.ts';
import { InMemoryStateStore } from '../../lib/state/memory.ts';

const config = loadConfig({ SLUICE_SOURCE_ID: 'orders', SLUICE_MYSQL_URL: 'mysql://u:p@db:3306/', SLUICE_STATE_TABLE: 'state', SLUICE_BUCKET: 'lake' });
const at = (pos: number) => ({ file: 'binlog.000002', pos });

async function sourceAt(pos: number, commits: number, options: { pending?: boolean } = {}) {
  const store = new InMemoryStateStore();
  let state = await store.acquireLease('orders', 'run', Date.now() + 60_000, Date.now());
  for (let i = 0; i < commits; i++) {
    const fence = { sourceId: 'orders', owner: 'run', expectVersion: state.version, now: Date.now() };
    state = await store.commit(fence, { position: at(pos), pending: { copies: [] } });
    if (!options.pending || i < commits - 1) state = await store.clearPending({ ...fence, expectVersion: state.version });
  }
  await store.releaseLease('orders', 'run');
  return store;
}

describe('state export / import (in-memory state store)', () => {
  it('exports position and commit sequence, and imports them into an empty source', async () => {
    const saved = await exportState(config, await sourceAt(500, 3));
    expect(saved).toMatchObject({ format: 'sluice-state/v1', source: 'orders', position: at(500), commitSeq: 3 });
    const fresh = new InMemoryStateStore();
    expect(await importState(config, fresh, saved, { log: silentLog })).toMatchObject({ position: at(500), commitSeq: 3 });
  });

  it('refuses to move a source backwards unless forced, and never lowers the commit sequence', async () => {
    const saved = await exportState(config, await sourceAt(500, 3));
    const ahead = await sourceAt(900, 5);
    await expect(importState(config, ahead, saved, { log: silentLog })).rejects.toMatchObject({ code: 'STATE_NEWER' });
    expect(await importState(config, ahead, saved, { force: true, log: silentLog })).toMatchObject({ position: at(500), commitSeq: 5 });
  });

  it('refuses while a run holds the lease or a commit is still being renamed, and refuses another source’s file', async () => {
    const saved = await exportState(config, await sourceAt(500, 1));
    const busy = await sourceAt(100, 0);
    await busy.acquireLease('orders', 'a-running-poller', Date.now() + 60_000, Date.now());
    await expect(importState(config, busy, saved, { log: silentLog })).rejects.toMatchObject({ code: 'STATE_BUSY' });
    await expect(importState(config, await sourceAt(100, 1, { pending: true }), saved, { log: silentLog })).rejects.toMatchObject({ code: 'STATE_PENDING' });
    await expect(importState(config, new InMemoryStateStore(), { ...saved, source: 'other' }, { log: silentLog })).rejects.toMatchObject({
      code: 'STATE_SOURCE',
    });
  });
});
