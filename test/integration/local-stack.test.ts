import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isAlive, stopProcess } from '../../lib/local/process.ts';
import { runStack, type StackInfo, sourceServer } from '../../lib/local/stack.ts';

const pids = (stack: StackInfo) => [sourceServer(stack).pid, stack.dynamodb.pid, stack.s3.pid];

describe('the embedded stack of a tool run (chaos, benchmarks)', () => {
  it('stops what the run started, keeps what it found running, and keeps everything with SLUICE_KEEP_STACK=1', async () => {
    const home = mkdtempSync(join(tmpdir(), 'sluice-stack-'));
    try {
      let started: number[];
      {
        await using stack = await runStack({ home, env: {} });
        started = pids(stack);
        expect(started.every(isAlive)).toBe(true);
        {
          // A second run finds the stack running: its end leaves it up.
          await using again = await runStack({ home, env: {} });
          expect(pids(again)).toEqual(started);
        }
        expect(started.every(isAlive)).toBe(true);
      }
      expect(started.filter(isAlive)).toEqual([]);

      let kept: number[];
      {
        await using stack = await runStack({ home, env: { SLUICE_KEEP_STACK: '1' } });
        kept = pids(stack);
      }
      expect(kept.every(isAlive)).toBe(true);
      await (await runStack({ home, env: {} }))[Symbol.asyncDispose](); // found running: still kept
      expect(kept.every(isAlive)).toBe(true);
      await Promise.all(kept.map((pid) => stopProcess(pid)));
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  }, 120_000);
});
