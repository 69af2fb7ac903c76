import { describe, inject, it } from 'vitest';
import { expectHeldCommitCaptured } from '../support/commit-window.ts';

describe('a snapshot page read while a transaction is in the binlog but not yet committed (issue #30)', () => {
  it('the page waits for it (or sorts before it): the output equals the table, every cell', async () => {
    await expectHeldCommitCaptured(inject('stackServer'));
  });
});
