import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { Command, CommanderError, Option } from 'commander';
import type { Env } from '../aws.ts';
import type { Config } from '../config/config.ts';
import { formatPosition } from '../core/position.ts';
import { formatTableRef, parseTableRef, parseTableRefs } from '../core/table-ref.ts';
import { ConfigError, ErrorCode, SluiceError } from '../errors.ts';
import type { LocalServer } from '../local/stack.ts';
import type { SourceStatus } from '../ops/status.ts';
import { profilePhase, reportProfileAtExit } from '../profile.ts';
import type { SnapshotJob, SnapshotStore } from '../state/snapshot-store.ts';

// Everything else is imported where a command runs, so `sluice --help` (or a typo) starts at once
// instead of loading the AWS SDK, DuckDB, zongji and mysql2 first.

const FLAGS = {
  source: 'SLUICE_SOURCE_ID',
  mysqlUrl: 'SLUICE_MYSQL_URL',
  stateTable: 'SLUICE_STATE_TABLE',
  bucket: 'SLUICE_BUCKET',
  prefix: 'SLUICE_PREFIX',
  include: 'SLUICE_INCLUDE',
  exclude: 'SLUICE_EXCLUDE',
  startup: 'SLUICE_STARTUP',
  /** `capture --once`: one name with the Lambda's setting. */
  once: 'SLUICE_STOP_WHEN_CAUGHT_UP',
} as const;

/** Where a `sluice` run reads its settings and writes its output; bin/sluice.js passes the process's own. */
export interface CliIo {
  readonly env: Env;
  readonly stdout: { write(text: string): unknown; readonly isTTY?: boolean };
  readonly stderr: { write(text: string): unknown; readonly isTTY?: boolean };
}

/**
 * A running local stack's variables, used as defaults so `sluice local up && sluice capture` just
 * works: the stack of `server` (`--server`), else of SLUICE_LOCAL_SERVER, else MariaDB's.
 */
async function localDefaults(env: Env, server?: LocalServer): Promise<Record<string, string>> {
  const { complete, env: stackEnv, readStack, stackHome } = await import('../local/stack.ts');
  const home = stackHome(env, server);
  if (!existsSync(join(home, 'stack.json'))) return {};
  const stack = await readStack(home);
  // A stack that only partly started (see `local up`) is no default to use.
  return complete(stack) ? stackEnv(stack) : {};
}

/** `sluice status`'s line for the last automatic move to another binlog history. */
function repositionText(r: NonNullable<SourceStatus['lastReposition']>): string {
  const server = (end: { serverId?: number; serverUuid?: string }) =>
    end.serverId === undefined ? '' : ` (server_id ${end.serverId}${end.serverUuid ? `, ${end.serverUuid}` : ''})`;
  return `${r.at}: the binlog history changed (${r.evidence}); followed the transactions by GTID ${r.gtid} from ${formatPosition(r.from.position)}${server(r.from)} to ${formatPosition(r.to.position)}${server(r.to)}, history epoch ${r.epoch}, nothing copied again`;
}

/** `--server`: which server the local stack runs as the source. */
const serverOption = () =>
  new Option('--server <server>', 'the source server the local stack runs ($SLUICE_LOCAL_SERVER, default mariadb)').choices(['mariadb', 'mysql']);

const defined = (env: Env) => Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined)) as Record<string, string>;

/** One `sluice` invocation: its output, its exit code, and the clients it opened (closed at the end). */
class Cli {
  exitCode = 0;
  private readonly opened: { destroy(): void }[] = [];

  constructor(readonly io: CliIo) {}

  out(line: string): void {
    this.io.stdout.write(`${line}\n`);
  }

  err(line: string): void {
    this.io.stderr.write(`${line}\n`);
  }

  fail(): void {
    this.exitCode = 1;
  }

  /** The environment (over a running local stack's defaults), overridden by flags; config and clients from it alone. */
  async configure(flags: Record<string, unknown>) {
    // The clients' modules load beside the configuration's (module loading waits on file reads too).
    const [{ loadConfig }, defaults] = await Promise.all([import('../config/config.ts'), localDefaults(this.io.env), import('../aws.ts')]);
    const env: Record<string, string> = { ...defaults, ...defined(this.io.env) };
    for (const [flag, variable] of Object.entries(FLAGS)) {
      const value = flags[flag];
      if (value !== undefined) env[variable] = String(value);
    }
    return this.open(loadConfig(env), env);
  }

  /** Clients for `config`; with SLUICE_PROFILE=1, the command's start-up ends here (lib/profile.ts). */
  async open(config: Config, env: Env) {
    const { createClients } = await import('../aws.ts');
    const clients = createClients(config, env);
    this.opened.push(clients.s3, clients.dynamo);
    profilePhase('run');
    return { config, clients, env };
  }

  close(): void {
    for (const client of this.opened) client.destroy();
  }
}

/**
 * Runs the `sluice` command with `argv` (the arguments after the command name) and returns its exit
 * code. Nothing here touches process.env or process.exitCode, so commands are testable in-process.
 */
export async function run(argv: readonly string[], io: CliIo): Promise<number> {
  const cli = new Cli(io);
  reportProfileAtExit();
  try {
    await commands(cli).parseAsync([...argv], { from: 'user' });
    profilePhase('shutdown');
    return cli.exitCode;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode; // commander printed the usage error or the help
    const message = error instanceof SluiceError ? `${error.code}: ${error.message}` : ((error as Error).stack ?? String(error));
    cli.err(`sluice: ${message}`);
    // bin/sluice.js leaves source maps off (start-up time); a trace into dist/ says how to map it.
    if (!(error instanceof SluiceError) && message.includes('/dist/')) cli.err('(for source positions: NODE_OPTIONS=--enable-source-maps)');
    return 1;
  } finally {
    cli.close();
  }
}

/** The command tree, bound to one invocation. */
function commands(cli: Cli): Command {
  const program = new Command('sluice')
    .description('Serverless change-data-capture from MySQL/MariaDB into S3, exactly once.')
    .showHelpAfterError()
    .exitOverride()
    .configureOutput({ writeOut: (text) => void cli.io.stdout.write(text), writeErr: (text) => void cli.io.stderr.write(text) });
  program
    .option('--source <id>', 'source id ($SLUICE_SOURCE_ID)')
    .option('--mysql-url <url>', 'mysql://user:pass@host:port/ ($SLUICE_MYSQL_URL)')
    .option('--state-table <name>', 'DynamoDB table ($SLUICE_STATE_TABLE)')
    .option('--bucket <name>', 'S3 bucket ($SLUICE_BUCKET)')
    .option('--prefix <prefix>', 'key prefix ($SLUICE_PREFIX)')
    .option('--include <regexes>', 'comma-separated regexes over db.table ($SLUICE_INCLUDE)')
    .option('--exclude <regexes>', 'comma-separated regexes over db.table ($SLUICE_EXCLUDE)')
    .option('--startup <mode>', 'initial | initial-only | latest | earliest | position:<file>:<pos> | gtid:<set> | timestamp:<ISO> ($SLUICE_STARTUP)');

  const local = program.command('local').description('the embedded local stack: MariaDB or MySQL 8.0, DynamoDB Local, S3 emulator');
  local
    .command('up')
    .description('start the local stack (idempotent) and create the bucket and state table')
    .addOption(serverOption())
    .action(async (options: { server?: LocalServer }) => {
      const { up, stackHome, localServer, sourceServer, env: stackEnv } = await import('../local/stack.ts');
      const { initResources } = await import('../aws.ts');
      const server = options.server ?? localServer(cli.io.env);
      const stack = await up({ home: stackHome(cli.io.env, server), server, log: (line) => cli.err(line) });
      const env = { ...stackEnv(stack), ...defined(cli.io.env) };
      const { config, clients } = await cli.open((await import('../config/config.ts')).loadConfig(env), env);
      await initResources(config, clients);
      const name = server === 'mysql' ? 'MySQL' : 'MariaDB';
      cli.err(`local stack up: ${name} 127.0.0.1:${sourceServer(stack).port}, DynamoDB 127.0.0.1:${stack.dynamodb.port}, S3 127.0.0.1:${stack.s3.port}`);
      cli.err(`use it from any shell with: eval "$(npx sluice local env${server === 'mysql' ? ' --server mysql' : ''})"`);
    });
  local
    .command('down')
    .description('stop what `local up` started')
    .addOption(serverOption())
    .option('--wipe', "also delete the stack's data (its home: .sluice/, or .sluice/mysql/)")
    .action(async (options: { server?: LocalServer; wipe?: boolean }) => {
      const { down, stackHome } = await import('../local/stack.ts');
      return down({ home: stackHome(cli.io.env, options.server), wipe: options.wipe });
    });
  local
    .command('env')
    .description('print export lines pointing sluice and the AWS SDK at the local stack')
    .addOption(serverOption())
    .action(async (options: { server?: LocalServer }) => {
      const vars = await localDefaults(cli.io.env, options.server);
      if (!Object.keys(vars).length) throw new SluiceError(ErrorCode.LOCAL_STACK, 'the local stack is not running here; start it with `sluice local up`');
      for (const [key, value] of Object.entries(vars)) cli.out(`export ${key}='${value}'`);
    });

  program
    .command('init')
    .description('create the S3 bucket and DynamoDB state table if they are missing')
    .action(async () => {
      const { initResources } = await import('../aws.ts');
      const { config, clients } = await cli.configure(program.opts());
      const { bucket } = await initResources(config, clients);
      cli.out(`state table ${config.stateTable} ready; bucket ${config.bucket} ${bucket}`);
    });

  program
    .command('doctor')
    .description('check configuration, MySQL settings and grants, DynamoDB and S3 access')
    .action(async () => {
      const { connect, preflight } = await import('../source/mysql/server.ts');
      const { filterWarnings } = await import('../source/mysql/filter-check.ts');
      const { lockWarning } = await import('../source/mysql/grants.ts');
      const { dialectOf } = await import('../source/mysql/dialect.ts');
      const { rdsBinlogRetention, retentionWarning } = await import('../source/mysql/rds.ts');
      const { mysqlTarget, redact } = await import('../source/mysql/target.ts');
      const { config, clients } = await cli.configure(program.opts());
      let failed = false;
      const check = async (name: string, run: () => Promise<unknown>) => {
        try {
          await run();
          cli.out(`ok    ${name}`);
        } catch (error) {
          failed = true;
          cli.out(`FAIL  ${name}: ${(error as Error).message}`);
        }
      };
      const warnings: string[] = [];
      await check(`MySQL ${config.mysqlSecretId ? `secret ${config.mysqlSecretId}` : redact(config.mysqlUrl ?? '')}: binlog settings and grants`, async () => {
        const conn = await connect(await mysqlTarget(config));
        try {
          await preflight(conn);
          warnings.push(...(await filterWarnings(conn, config)));
          const locks = await lockWarning(conn, (await dialectOf(conn)).flavor);
          if (locks) warnings.push(locks);
          const retention = retentionWarning(await rdsBinlogRetention(conn));
          if (retention) warnings.push(retention);
        } finally {
          await conn.end();
        }
      });
      await check(`DynamoDB table ${config.stateTable}`, () => clients.store.get(config.sourceId));
      await check(`S3 bucket ${config.bucket}`, async () => {
        const { HeadBucketCommand } = await import('@aws-sdk/client-s3');
        await clients.s3.send(new HeadBucketCommand({ Bucket: config.bucket })).catch((error: { $metadata?: { httpStatusCode?: number } }) => {
          if (error.$metadata?.httpStatusCode !== 404) throw error;
          throw new Error('it does not exist: create it with `sluice init` (or deploy serverless.yml, which creates it), or fix the name');
        });
      });
      for (const warning of warnings) cli.out(`WARN  ${warning}`);
      if (failed) cli.fail();
    });

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
        import('../capture/run.ts'),
        import('../log.ts'),
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
      const { createLogger } = await import('../log.ts');
      const { snapshotsToRun, planSnapshot } = await import('../snapshot/plan.ts');
      const { runSnapshotWorker } = await import('../snapshot/worker.ts');
      const { leasedChunks } = await import('../snapshot/progress.ts');
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
          const work = () =>
            Promise.all(
              Array.from({ length: Math.max(1, options.workers) }, (_, i) =>
                runSnapshotWorker(deps, { budgetMs: Math.max(1000, left()), snapshotId: job.id, workerId: `cli-${host}-${process.pid}-${i}` }),
              ),
            );
          const results = await work();
          let done = results.some((r) => r.complete);
          // Chunks a killed worker still holds: wait for its lease (renewed by every page while alive) when asked to.
          let leased = done ? [] : await leasedChunks(clients.snapshots, planned);
          while (!done && wait && leased.length && !results.some((r) => r.timedOut)) {
            const first = leased[0] as (typeof leased)[number];
            const pause = first.expiresAt - Date.now() + 250;
            if (pause >= left()) break;
            cli.err(
              `waiting for ${leased.length} chunk(s) other workers hold: ${first.table} #${first.n} by ${first.owner} until ${new Date(first.expiresAt).toISOString()}`,
            );
            await new Promise((resolve) => setTimeout(resolve, Math.max(0, pause)));
            results.push(...(await work()));
            done = results.some((r) => r.complete);
            leased = done ? [] : await leasedChunks(clients.snapshots, planned);
          }
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

  program
    .command('status')
    .description('stored vs server position, lag, last commit, lease, pending renames, errors, snapshots, the Iceberg merge per table')
    .option('--json', 'machine-readable output')
    .action(async (options: { json?: boolean }) => {
      const { snapshotProgress } = await import('../snapshot/progress.ts');
      const { sourceStatus } = await import('../ops/status.ts');
      const { icebergStatus } = await import('../iceberg/merge/status.ts');
      const { config, clients } = await cli.configure(program.opts());
      const status = await sourceStatus(config, clients.store, Date.now(), clients.s3);
      const iceberg = await icebergStatus({ config, s3: clients.s3, merges: clients.merges, snapshots: clients.snapshots }, status.commitSeq);
      // The unfinished snapshots (several may run: the initial copy, re-snapshots DDL asked for), else the last one.
      const active = await clients.snapshots.activeJobs(config.sourceId);
      const latest = active.length ? [] : [await clients.snapshots.latestJob(config.sourceId)].filter((j) => j !== undefined);
      const snapshots = await Promise.all(
        [...active, ...latest].map(async (job) => ({
          id: job.id,
          status: job.status,
          ...(job.reason ? { reason: job.reason } : {}),
          error: job.error,
          tables: await snapshotProgress(clients.snapshots, job),
        })),
      );
      if (options.json) return cli.out(JSON.stringify({ ...status, snapshot: snapshots[0], snapshots, iceberg }, null, 2));
      const rows: [string, string][] = [
        ['source', status.source],
        ['stored position', status.stored ? formatPosition(status.stored) : 'none (never ran)'],
        [
          'binlog history',
          `history epoch ${status.epoch}${status.epoch ? '' : ' (never changed)'}${status.resync ? `; the next run resets and copies every table again (${status.resync.reason}, ${status.resync.at})` : ''}`,
        ],
        ...(status.lastReposition ? [['followed', repositionText(status.lastReposition)] as [string, string]] : []),
        ['server position', status.master ? formatPosition(status.master) : `unknown (${status.mysqlError})`],
        ['lag', status.lagBytes === undefined ? '-' : `${status.lagBytes} bytes of binlog`],
        ['commits', `${status.commitSeq}${status.lastCommitAt ? `, last at ${status.lastCommitAt}` : ''}`],
        ['lease', status.lease ? `${status.lease.owner} until ${status.lease.expiresAt}${status.lease.live ? '' : ' (expired)'}` : 'free'],
        ['pending renames', status.pending ? `commit ${status.pending.commitSeq} (${status.pending.objects} objects)` : 'none'],
      ];
      rows.push([
        'purge risk',
        status.timeToPurgeSeconds === undefined
          ? '-'
          : status.timeToPurgeSeconds === null
            ? 'none: the server does not purge binlogs automatically'
            : `the stored binlog may be purged in ${Math.round(status.timeToPurgeSeconds / 60)} min (retention ${Math.round((status.retentionSeconds ?? 0) / 3600)} h)`,
      ]);
      if (typeof status.timeToPurgeSeconds === 'number' && status.timeToPurgeSeconds < 6 * 3600 && status.positionOnServer !== false) {
        rows.push(['WARNING', 'the binlog sluice still needs is close to being purged: check that the poller runs and keeps up (docs/RUNBOOK.md)']);
      }
      if (status.positionOnServer === false) rows.push(['WARNING', 'the stored binlog file is no longer on the server: re-snapshot or reset the position']);
      for (const warning of status.warnings ?? []) rows.push(['WARNING', warning]);
      if (status.error) rows.push(['error', `${status.error.code}: ${status.error.message}`]);
      // Automatic decisions stay visible while the table's version is the one they made (docs/RUNBOOK.md, "DDL sluice cannot classify").
      for (const d of status.unclassifiedDdl ?? [])
        rows.push([
          'unclassified DDL',
          `${d.table} at ${d.position}: ${d.kind === 'noop' ? 'recorded as changing nothing' : d.kind === 'resnapshot' ? 're-copied' : d.kind} (decided by ${d.decidedBy === 'sluice' ? 'sluice, SLUICE_DDL_UNKNOWN=resnapshot' : 'an operator, SLUICE_DDL_OVERRIDES'}; ${d.reason})`,
        ]);
      for (const snapshot of snapshots) {
        rows.push(['snapshot', `${snapshot.id} (${snapshot.status})${snapshot.reason ? `: ${snapshot.reason}` : ''}`]);
        if (snapshot.error) rows.push(['  error', `${snapshot.error.code}: ${snapshot.error.message}`]);
        for (const t of snapshot.tables) {
          rows.push([
            `  ${t.table}`,
            `${t.rows.toLocaleString('en-US')}/${t.estimatedRows.toLocaleString('en-US')} rows, ${t.chunksDone}/${t.chunks} chunks, ${t.rowsPerSecond.toLocaleString('en-US')} rows/s${t.etaSeconds ? `, ETA ${t.etaSeconds}s` : ''}`,
          ]);
        }
      }
      if (iceberg.length) rows.push(['iceberg', `${iceberg.length} table${iceberg.length === 1 ? '' : 's'} merged (sluice iceberg)`]);
      for (const t of iceberg) {
        const files =
          t.dataFiles === undefined
            ? 'no files yet'
            : `${t.records?.toLocaleString('en-US')} row${t.records === 1 ? '' : 's'} in ${t.dataFiles} data + ${t.deleteFiles} delete files`;
        const state = t.held ? `held: ${t.held}` : t.gone ? 'gone from the source (kept, empty)' : `${t.behind} commit${t.behind === 1 ? '' : 's'} behind`;
        rows.push([`  ${t.table}`, `commit ${t.commitSeq}, ${state}; ${files}; ${t.lastCompactedAt ? `compacted ${t.lastCompactedAt}` : 'not compacted'}`]);
        if (t.lease?.live) rows.push(['    lease', `${t.lease.owner} until ${t.lease.expiresAt}`]);
        if (t.error) rows.push(['    error', `${t.error.code}: ${t.error.message} (at ${new Date(t.error.at).toISOString()})`]);
      }
      for (const [k, v] of rows) cli.out(`${k.padEnd(16)} ${v}`);
    });

  program
    .command('verify')
    .description('compare the output in S3 with the live tables (safe on a running source); exit 1 on any difference')
    .option('--tables <list>', 'comma-separated db.table names, backtick-quoted where needed (`a.b`.`c/d`) (default: every included table)')
    .option('--json', 'machine-readable output')
    .action(async (options: { tables?: string; json?: boolean }) => {
      const { verify } = await import('../verify/verify.ts');
      const tables = options.tables === undefined ? undefined : parseTableRefs(options.tables, '--tables');
      const { config, clients } = await cli.configure(program.opts());
      const verdict = await verify({ config, s3: clients.s3, store: clients.store, snapshots: clients.snapshots }, { tables });
      if (options.json) cli.out(JSON.stringify(verdict, null, 2));
      else {
        cli.out(`MySQL read at ${formatPosition(verdict.mysqlPosition)}; output at ${verdict.outputPosition ? formatPosition(verdict.outputPosition) : '-'}`);
        for (const t of verdict.tables) {
          if (t.status === 'changing') {
            cli.out(`skip  ${t.table}: changing (${t.note})`);
            continue;
          }
          const bad = t.missing + t.extra + t.differing + t.missingColumns.length + t.extraColumns.length + (t.columnOrderDiffers ? 1 : 0);
          const what = t.keyed ? 'rows compared' : 'rows compared as a multiset (no key)';
          cli.out(
            `${bad ? 'DIFF' : 'ok  '}  ${t.table}: ${t.compared} ${what}, ${t.skipped} changing ${t.keyed ? 'keys' : 'rows'} skipped; ${t.missing} missing, ${t.extra} extra, ${t.differing} differing`,
          );
          if (t.missingColumns.length) cli.out(`        columns missing in S3: ${t.missingColumns.join(', ')}`);
          if (t.extraColumns.length) cli.out(`        columns in S3 but not in MySQL: ${t.extraColumns.join(', ')}`);
          if (t.columnOrderDiffers) cli.out('        the columns are in another order in S3');
          if (t.note) cli.out(`        note: ${t.note}`);
          for (const k of t.examples.missing) cli.out(`        missing in S3: ${k}`);
          for (const k of t.examples.extra) cli.out(`        extra in S3:   ${k}`);
          for (const d of t.examples.differing) cli.out(`        differs ${d.key} in ${d.columns.join(', ')}: mysql ${d.mysql} s3 ${d.output}`);
        }
        for (const o of verdict.orphans)
          cli.out(`DIFF  ${o.table}: ${o.rows} rows in S3, but the table ${o.reason === 'does not exist' ? 'no longer exists' : 'is no longer included'}`);
        for (const t of verdict.changing) cli.out(`skip  ${t}: only in S3, changing (a DDL between the output position and the MySQL read)`);
      }
      if (!verdict.ok) cli.fail();
    });

  program
    .command('materialize')
    .description("write a table's current rows from the output, by the materialization rule (docs/FORMAT.md), as Parquet or JSON Lines")
    .requiredOption('--table <db.table>', 'the table, backtick-quoted where needed (`a.b`.`c/d`)')
    .option('--out <file>', 'a .parquet or .jsonl file')
    .option('--sql', 'print the DuckDB statements it runs for the table (load the events, the rule, the export)')
    .action(async (options: { table: string; out?: string; sql?: boolean }) => {
      const { materialize } = await import('../materialize/write.ts');
      const table = parseTableRef(options.table, '--table');
      if (!options.out && !options.sql) throw new SluiceError(ErrorCode.MATERIALIZE_FORMAT, 'give --out <file.parquet|file.jsonl>, --sql, or both');
      const { config, clients } = await cli.configure(program.opts());
      const result = await materialize({ config, s3: clients.s3 }, table, { out: options.out });
      const name = formatTableRef(table);
      if (options.sql)
        cli.out(
          `-- ${name}: the statements sluice materialize runs (DuckDB), reading the table's objects in place (INSTALL httpfs; LOAD httpfs; and S3 credentials)\n${result.printable.join(';\n\n')};`,
        );
      if (result.gone)
        cli.out(`${name} no longer exists in the captured set (dropped, renamed away or excluded): 0 rows${options.out ? ` written to ${options.out}` : ''}`);
      else if (options.out) cli.out(`${result.rows} rows of ${name} written to ${options.out}`);
    });

  program
    .command('iceberg')
    .description('merge the change log into Iceberg tables under <prefix>iceberg/ (one run, as the schedule would; docs/ICEBERG.md)')
    .option('--tables <list>', 'comma-separated db.table names, backtick-quoted where needed (`a.b`.`c/d`) (default: every captured table)')
    .action(async (options: { tables?: string }) => {
      const [{ runIcebergMerge }, { configuredCatalog }, { s3ObjectStore }, { createLogger }] = await Promise.all([
        import('../iceberg/merge/merge.ts'),
        import('../iceberg/catalog/catalog.ts'),
        import('../sink/s3/object-store.ts'),
        import('../log.ts'),
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

  const state = program.command('state').description('the source state as a savepoint: export, import, reset');
  state
    .command('export')
    .description('print the source state (position, commit sequence) as JSON')
    .action(async () => {
      const { exportState } = await import('../ops/state-admin.ts');
      const { config, clients } = await cli.configure(program.opts());
      cli.out(JSON.stringify(await exportState(config, clients.store), null, 2));
    });
  state
    .command('import <file>')
    .description('restore a state exported with `state export`; refuses to move a source backwards unless --force')
    .option('--force', 'roll back on purpose (changes after the saved position are captured again, in a later history epoch)')
    .action(async (file: string, options: { force?: boolean }) => {
      const { createLogger } = await import('../log.ts');
      const { importState, readStateFile } = await import('../ops/state-admin.ts');
      const { config, clients } = await cli.configure(program.opts());
      const saved = await readStateFile(file);
      const result = await importState(config, clients.store, saved, { force: options.force, log: createLogger('WARN', cli.io.env), origin: file });
      cli.out(`source ${config.sourceId} now at ${result.position ? formatPosition(result.position) : '-'}, commit ${result.commitSeq}`);
    });
  state
    .command('reset')
    .description('move the stored position in a new history epoch (the commit sequence is kept); anything but gtid: re-copies every table')
    .requiredOption('--to <where>', 'latest | earliest | position:<file>:<pos> | timestamp:<ISO> | gtid:<set>')
    .action(async (options: { to: string }) => {
      const { createLogger } = await import('../log.ts');
      const { resetState } = await import('../ops/state-admin.ts');
      const { parseStartupSetting } = await import('../config/config.ts');
      const { config, clients } = await cli.configure(program.opts());
      const result = await resetState(config, clients.store, parseStartupSetting(options.to), createLogger('WARN', cli.io.env));
      cli.out(
        `source ${config.sourceId} now at ${result.position ? formatPosition(result.position) : '-'}, commit ${result.commitSeq}, history epoch ${result.epoch}`,
      );
      if (result.resync)
        cli.out(
          `the next capture run resets ${result.resync.tables ? result.resync.tables.map(formatTableRef).join(', ') : 'every captured table'} and copies it again (a snapshot job it requests): ${result.resync.tables ? 'the skipped transactions wrote it' : 'transactions may have been skipped'}`,
        );
    });

  program
    .command('demo')
    .description('start the local stack, write a stream of changes, capture them as the schedule would, show what landed')
    .option('--rounds <n>', 'capture rounds', (v) => Number(v), 4)
    .addOption(serverOption())
    .action(async (options: { rounds: number; server?: LocalServer }) => {
      const { runDemo } = await import('./demo.ts');
      const { localServer } = await import('../local/stack.ts');
      const server = options.server ?? localServer(cli.io.env);
      if (!(await runDemo(options.rounds, { env: cli.io.env, server, say: (line) => cli.out(line) }))) cli.fail();
    });
  return program;
}

/** The filter warnings for `config`'s server (lib/source/mysql/filter-check.ts). */
async function filterWarningsOf(config: Config): Promise<string[]> {
  const [{ connect }, { mysqlTarget }, { filterWarnings }] = await Promise.all([
    import('../source/mysql/server.ts'),
    import('../source/mysql/target.ts'),
    import('../source/mysql/filter-check.ts'),
  ]);
  const conn = await connect(await mysqlTarget(config));
  try {
    return await filterWarnings(conn, config);
  } finally {
    await conn.end();
  }
}

/** The snapshot progress bar: redrawn in place on a terminal, printed once at the end otherwise. */
async function printProgress(stderr: CliIo['stderr'], snapshots: SnapshotStore, job: SnapshotJob, live: boolean): Promise<void> {
  const { snapshotProgress } = await import('../snapshot/progress.ts');
  const tables = await snapshotProgress(snapshots, job);
  const rows = tables.reduce((a, t) => a + t.rows, 0);
  const estimate = Math.max(
    tables.reduce((a, t) => a + t.estimatedRows, 0),
    rows,
    1,
  );
  const done = tables.every((t) => t.chunksDone === t.chunks);
  const share = done ? 1 : Math.min(rows / estimate, 0.99);
  const bar = `${'#'.repeat(Math.round(share * 30))}${'-'.repeat(30 - Math.round(share * 30))}`;
  const rate = tables.reduce((a, t) => a + t.rowsPerSecond, 0);
  const eta = Math.max(0, ...tables.map((t) => t.etaSeconds ?? 0));
  const line = `[${bar}] ${Math.round(share * 100)}% ${rows.toLocaleString('en-US')}/${estimate.toLocaleString('en-US')} rows, ${tables.reduce((a, t) => a + t.chunksDone, 0)}/${tables.reduce((a, t) => a + t.chunks, 0)} chunks, ${rate.toLocaleString('en-US')} rows/s${done ? '' : `, ETA ${eta}s`}`;
  if (live && stderr.isTTY) stderr.write(`\r${line}`);
  else if (!live) stderr.write(`${stderr.isTTY ? '\r' : ''}${line}\n`);
}
