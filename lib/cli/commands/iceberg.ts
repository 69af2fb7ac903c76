import type { Command } from 'commander';
import { formatPosition } from '../../core/position.ts';
import { formatTableRef, parseTableRefs } from '../../core/table-ref.ts';
import { SluiceError } from '../../errors.ts';
import type { Cli } from '../cli.ts';

/** `sluice iceberg`: one Iceberg merge run, as the schedule would. */
export function icebergCommand(program: Command, cli: Cli): void {
  program
    .command('iceberg')
    .description('merge the change log into Iceberg tables under <prefix>iceberg/ (one run, as the schedule would; docs/ICEBERG.md)')
    .option('--tables <list>', 'comma-separated db.table names, backtick-quoted where needed (`a.b`.`c/d`) (default: every captured table)')
    .action(async (options: { tables?: string }) => {
      const [{ runIcebergMerge }, { configuredCatalog }, { s3ObjectStore }, { createLogger }] = await Promise.all([
        import('../../iceberg/merge/merge.ts'),
        import('../../iceberg/catalog/catalog.ts'),
        import('../../sink/s3/object-store.ts'),
        import('../../log.ts'),
      ]);
      const tables = options.tables === undefined ? undefined : parseTableRefs(options.tables, '--tables');
      const { config, clients, env } = await cli.configure(program.opts());
      const store = s3ObjectStore(clients.s3, config.bucket);
      const catalog = configuredCatalog(config, store, env);
      try {
        const deps = {
          config,
          s3: clients.s3,
          store: clients.store,
          snapshots: clients.snapshots,
          merges: clients.merges,
          buckets: clients.buckets,
          log: createLogger('WARN', env),
          catalog,
        };
        // A table whose merge was killed is leased until its lease expires: wait for it rather than skip it.
        const result = await runIcebergMerge(deps, { tables, waitForLeaseMs: config.iceberg.leaseMs + 5000 });
        cli.out(
          `change log committed to ${result.cut ? `commit ${result.cut.commitSeq}, ${formatPosition(result.cut.position)}` : '- (the source has not committed yet)'}`,
        );
        for (const t of result.tables) {
          const name = formatTableRef(t.table);
          if (t.status === 'merged') {
            const extra = [t.compacted ? 'compacted' : '', t.expiredSnapshots ? `${t.expiredSnapshots} snapshots expired` : ''].filter(Boolean).join(', ');
            cli.out(
              `merged  ${name}: ${t.mode ?? 'housekeeping'}, ${t.rowsWritten ?? 0} rows written, ${t.deletes ?? 0} deletes${extra ? `, ${extra}` : ''} → ${t.metadataKey ? store.uri(t.metadataKey) : 'no table'}`,
            );
          } else if (t.status === 'up-to-date') cli.out(`ok      ${name}: up to date${t.metadataKey ? ` (${store.uri(t.metadataKey)})` : ''}`);
          else if (t.status === 'held-back') cli.out(`held    ${name}: ${t.reason}`);
          else if (t.status === 'busy') cli.out(`busy    ${name}: ${t.reason}`);
          else {
            cli.out(`FAIL    ${name}: ${t.error instanceof SluiceError ? `${t.error.code}: ` : ''}${t.reason}`);
            cli.fail();
          }
        }
      } finally {
        catalog.destroy();
      }
    });
}
