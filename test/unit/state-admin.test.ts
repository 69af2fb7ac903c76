import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config/config.ts';
import { silentLog } from '../../lib/log.ts';
import { exportState, importState, readStateFile } from '../../lib/ops/state-admin.ts';
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

  it('validates the file field by field, names the file and the field, and stores nothing on failure', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-state-'));
    try {
      const store = await sourceAt(500, 2);
      const before = await store.get('orders');
      const saved = await exportState(config, await sourceAt(900, 3));
      const cases: [string, unknown, RegExp][] = [
        ['string-pos.json', { ...saved, position: { file: 'binlog.000002', pos: '900' } }, /string-pos\.json .*position\.pos: .*expected number/],
        ['string-seq.json', { ...saved, commitSeq: '3' }, /string-seq\.json .*commitSeq: .*expected number/],
        ['small-pos.json', { ...saved, position: { file: 'binlog.000002', pos: 2 } }, /position\.pos: a binlog position is at least 4/],
        ['bad-file.json', { ...saved, position: { file: 'binlog', pos: 900 } }, /position\.file: expected a binlog file name/],
        [
          'bad-gtid-set.json',
          { ...saved, position: { file: 'binlog.000002', pos: 900, gtidSet: 'not-a-set:1' } },
          /position\.gtidSet: expected a MySQL GTID set/,
        ],
        ['no-format.json', { ...saved, format: undefined }, /no-format\.json .*format: /],
        ['null-position.json', { ...saved, position: null }, /null-position\.json holds no position/],
      ];
      for (const [name, content, message] of cases) {
        const path = join(dir, name);
        writeFileSync(path, JSON.stringify(content));
        const imported = readStateFile(path).then((file) => importState(config, store, file, { log: silentLog, origin: path }));
        await expect(imported).rejects.toMatchObject({ code: 'STATE_FILE', message: expect.stringMatching(message) });
        // Programmatic callers get the same checks.
        await expect(importState(config, store, content, { log: silentLog, origin: name })).rejects.toMatchObject({ code: 'STATE_FILE' });
      }
      writeFileSync(join(dir, 'broken.json'), '{"format": "sluice-state/v1",');
      await expect(readStateFile(join(dir, 'broken.json'))).rejects.toMatchObject({
        code: 'STATE_FILE',
        message: expect.stringMatching(/cannot read .*broken\.json as JSON/),
      });
      expect(await store.get('orders')).toEqual(before);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('carries the position’s binlog history through export and import', async () => {
    const store = await sourceAt(500, 1);
    const history = { file: 'binlog.000002', created: 1_796_052_560_000, serverId: 7 };
    let state = await store.acquireLease('orders', 'run', Date.now() + 60_000, Date.now());
    state = await store.commit({ sourceId: 'orders', owner: 'run', expectVersion: state.version, now: Date.now() }, { position: at(600), history });
    await store.releaseLease('orders', 'run');
    const saved = await exportState(config, store);
    expect(saved.history).toEqual(history);
    expect(await importState(config, new InMemoryStateStore(), JSON.parse(JSON.stringify(saved)), { log: silentLog })).toMatchObject({
      position: at(600),
      history,
    });
  });
});
