import { describe, it } from 'vitest';
import { expectHeldCommitCaptured } from '../support/commit-window.ts';

/*
 * With gtid_mode OFF MySQL's transactions are anonymous: nothing tells when those before a binlog
 * position have committed, so a snapshot page reads its watermark under a brief read lock
 * (dialect.ts `settledEnd`: LOCK TABLES … READ, else FLUSH TABLES WITH READ LOCK — the stack's
 * sluice account holds RELOAD, not LOCK TABLES; the second test's account holds LOCK TABLES alone). The same held commit as
 * test/integration/handoff-commit-window.test.ts, on that path.
 */
describe('a snapshot page read while a transaction is in the binlog but not yet committed, gtid_mode OFF (private MySQL 8.0.31, issue #30)', () => {
  it('the page reads its watermark under a global read lock held for that read: the output equals the table, every cell', async () => {
    await expectHeldCommitCaptured('mysql', ['--gtid-mode=OFF', '--enforce-gtid-consistency=OFF']);
  });

  it('an account without RELOAD (as on RDS and Aurora, whose gtid_mode is OFF_PERMISSIVE by default) reads it under LOCK TABLES … READ: the same', async () => {
    await expectHeldCommitCaptured('mysql', ['--gtid-mode=OFF_PERMISSIVE', '--enforce-gtid-consistency=OFF'], { grants: 'SELECT, LOCK TABLES' });
  });
});
