import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { type Command, Option } from 'commander';
import type { Config } from '../../config/config.ts';
import { formatPosition } from '../../core/position.ts';
import { formatTableRef } from '../../core/table-ref.ts';
import type { Cli } from '../cli.ts';

/** `sluice capture`: one capture run, as the schedule would. */
export function captureCommand(program: Command, cli: Cli): void {
  program
    .command('capture')
    .description('run the poller: one capture run, as the schedule would')
    .option('--once', 'stop when caught up with the binlog end seen at start (sets $SLUICE_STOP_WHEN_CAUGHT_UP)')
    .addOption(new Option('--seconds <n>', 'run length (default $SLUICE_RUN_SECONDS)').argParser(Number))
    .option('--wait', 'when another run holds the lease, wait for it (the default on a terminal)')
    .option('--no-wait', 'when another run holds the lease, exit at once (the default otherwise, e.g. from cron)')
    .action(async (options: { once?: boolean; seconds?: number; wait?: boolean }) => {
      // The run's modules load beside the configuration and clients (module loading waits on file reads too).
      const [{ runCapture }, { createLogger }, { config, clients }] = await Promise.all([
        import('../../capture/run.ts'),
        import('../../log.ts'),
        cli.configure({ ...program.opts(), once: options.once ? 'true' : undefined }),
      ]);
      // The filters' check (its own MySQL connection and query) runs beside the run's start instead of
      // before it; its warnings are printed as soon as it has them (a long run would hide a typo until
      // its end), and its failure fails the command, as before.
      const checked = filterWarningsOf(config).then(
        (warnings) => {
          for (const warning of warnings) cli.err(`sluice: warning: ${warning}`);
          return { error: undefined };
        },
        (error: unknown) => ({ error }),
      );
      const outcome = await runCapture(
        {
          config,
          s3: clients.s3,
          store: clients.store,
          snapshots: clients.snapshots,
          log: createLogger('WARN', cli.io.env),
          onSnapshotRequested: async (job) =>
            cli.err(
              `snapshot ${job.id} requested (${job.requested ? job.requested.map(formatTableRef).join(', ') : 'every included table'}): copy the rows with \`sluice snapshot\``,
            ),
        },
        {
          budgetMs: (options.seconds ?? config.runMs / 1000) * 1000,
          // Named for the operator who finds it holding the lease: host and process.
          runId: `cli-${hostname().replace(/[^A-Za-z0-9-]/g, '-')}-${process.pid}-${randomBytes(4).toString('hex')}`,
          waitForLeaseMs: (options.wait ?? cli.io.stdout.isTTY === true) ? (options.seconds ?? config.runMs / 1000) * 1000 : 0,
          onLeaseBusy: (reason) => cli.err(`waiting for the lease: ${reason}`),
        },
      ).then(
        (result) => ({ result, error: undefined }),
        (error: unknown) => ({ result: undefined, error }),
      );
      const check = await checked;
      if (!outcome.result) throw outcome.error;
      if (check.error) throw check.error;
      const { result } = outcome;
      cli.out(
        result.status === 'busy'
          ? `another run holds the lease (${result.reason}); nothing done. A live run renews it every ${config.leaseMs / 4000} s, a killed one's runs out within ${config.leaseMs / 1000} s; \`--wait\` waits for it`
          : `captured ${result.events} events in ${result.transactions} transactions, ${result.commits} commits, ${result.heartbeats} heartbeats; position ${result.position ? formatPosition(result.position) : '-'}${result.caughtUp ? ' (caught up)' : ''}`,
      );
    });
}

/** The filter warnings for `config`'s server (lib/source/mysql/filter-check.ts). */
async function filterWarningsOf(config: Config): Promise<string[]> {
  const [{ connect }, { mysqlTarget }, { filterWarnings }] = await Promise.all([
    import('../../source/mysql/server.ts'),
    import('../../source/mysql/target.ts'),
    import('../../source/mysql/filter-check.ts'),
  ]);
  const conn = await connect(await mysqlTarget(config));
  try {
    return await filterWarnings(conn, config);
  } finally {
    await conn.end();
  }
}
