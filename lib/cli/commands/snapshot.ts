import { hostname } from 'node:os';
import { type Command, Option } from 'commander';
import { formatTableRef, parseTableRefs } from '../../core/table-ref.ts';
import { ConfigError } from '../../errors.ts';
import type { SnapshotJob, SnapshotStore } from '../../state/snapshot-store.ts';
import type { Cli, CliIo } from '../cli.ts';

/** `sluice snapshot`: copy tables' existing rows. */
export function snapshotCommand(program: Command, cli: Cli): void {
  program
    .command('snapshot')
    .description("copy tables' existing rows (resumable, chunked, parallel); continues the pending snapshots, if any")
    .option(
      '--tables <list>',
      'comma-separated db.table names, backtick-quoted where needed (`a.b`.`c/d`): a new snapshot of just these (e.g. a table added later)',
    )
    .option('--all', 'a new snapshot of every included table (a full re-copy)')
    .addOption(new Option('--workers <n>', 'parallel workers').argParser(Number).default(2))
    .addOption(new Option('--seconds <n>', 'stop after this long (resume later with the same command)').argParser(Number).default(24 * 3600))
    .option('--wait', 'wait for chunks other workers hold (a killed one holds its chunk until its lease runs out; the default on a terminal)')
    .option('--no-wait', 'leave chunks other workers hold and exit (the default otherwise)')
    .action(async (options: { tables?: string; all?: boolean; workers: number; seconds: number; wait?: boolean }) => {
      const { createLogger } = await import('../../log.ts');
      const { snapshotsToRun, planSnapshot } = await import('../../snapshot/plan.ts');
      const { runJobWorkers } = await import('../../snapshot/run-workers.ts');
      const wait = options.wait ?? cli.io.stdout.isTTY === true;
      if (options.all && options.tables !== undefined) throw new ConfigError('give either --all or --tables, not both');
      const tables = options.tables === undefined ? [] : parseTableRefs(options.tables, '--tables');
      const { config, clients } = await cli.configure(program.opts());
      const deps = { config, s3: clients.s3, store: clients.store, snapshots: clients.snapshots, log: createLogger('WARN', cli.io.env) };
      const jobs = await snapshotsToRun(deps, tables.length ? { tables } : options.all ? 'all' : 'pending');
      if (!jobs.length) {
        const last = await clients.snapshots.latestJob(config.sourceId);
        const lastLine = last ? `the last one, ${last.id}, is ${last.status}` : 'none has run on this source';
        return cli.out(
          `no snapshot is pending (${lastLine}); nothing done.\n` +
            '  sluice snapshot --all               copies every included table again\n' +
            '  sluice snapshot --tables db.t,...   copies just those tables',
        );
      }
      if (!tables.length && !options.all)
        for (const job of jobs)
          cli.err(`continuing snapshot ${job.id} (${job.status}) of ${job.requested ? job.requested.map(formatTableRef).join(', ') : 'every included table'}`);
      const started = Date.now();
      let complete = true;
      for (const job of jobs) {
        const planned = await planSnapshot(deps, job);
        const timer = setInterval(() => void printProgress(cli.io.stderr, clients.snapshots, planned, true), 1000);
        try {
          const left = () => options.seconds * 1000 - (Date.now() - started);
          const host = hostname().replace(/[^A-Za-z0-9-]/g, '-');
          const { results, done, leased } = await runJobWorkers(deps, planned, {
            workers: options.workers,
            left,
            wait,
            workerId: (i) => `cli-${host}-${process.pid}-${i}`,
            onWait: (first, held) =>
              cli.err(
                `waiting for ${held} chunk(s) other workers hold: ${first.table} #${first.n} by ${first.owner} until ${new Date(first.expiresAt).toISOString()}`,
              ),
          });
          clearInterval(timer);
          await printProgress(cli.io.stderr, clients.snapshots, planned, false);
          const rows = results.reduce((a, r) => a + r.rows, 0);
          complete &&= done;
          const held = leased[0]
            ? `; ${leased.length} chunk(s) held by other workers (${leased[0].owner} until ${new Date(leased[0].expiresAt).toISOString()}; \`--wait\` waits for them)`
            : '';
          cli.out(
            `snapshot ${job.id}: ${rows} rows in ${results.reduce((a, r) => a + r.pages, 0)} pages this run; ${done ? 'complete' : `not finished — run \`sluice snapshot\` again to resume${held}`}`,
          );
        } finally {
          clearInterval(timer);
        }
      }
      if (!complete) cli.fail();
    });
}

/** The snapshot progress bar: redrawn in place on a terminal, printed once at the end otherwise. */
async function printProgress(stderr: CliIo['stderr'], snapshots: SnapshotStore, job: SnapshotJob, live: boolean): Promise<void> {
  const { progressLine, snapshotProgress } = await import('../../snapshot/progress.ts');
  const line = progressLine(await snapshotProgress(snapshots, job));
  if (live && stderr.isTTY) stderr.write(`\r${line}`);
  else if (!live) stderr.write(`${stderr.isTTY ? '\r' : ''}${line}\n`);
}
