import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Command, Option } from 'commander';
import { SluiceError } from '../errors.ts';
import type { StackInfo } from '../local/stack.ts';
import type { StateFile } from '../pipeline/state-admin.ts';
import { profilePhase, reportProfileAtExit } from '../profile.ts';
import { formatPosition } from '../source/mysql/position.ts';
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
} as const;

/** A running local stack's variables, used as defaults so `sluice local up && sluice capture` just works. */
async function localDefaults(): Promise<Record<string, string>> {
  const { env: stackEnv, stackHome } = await import('../local/stack.ts');
  const file = join(stackHome(), 'stack.json');
  if (!existsSync(file)) return {};
  const stack = JSON.parse(readFileSync(file, 'utf8')) as Partial<StackInfo>;
  // A stack that only partly started (see `local up`) is no default to use.
  return stack.mariadb && stack.dynamodb && stack.s3 ? stackEnv(stack as StackInfo) : {};
}

/**
 * Environment, overridden by flags; applied to process.env so the AWS SDK sees the endpoints too.
 * A command imports its own modules before calling this, so SLUICE_PROFILE counts them as start-up.
 */
async function configure(flags: Record<string, string | undefined>) {
  const [{ createClients }, { loadConfig }, defaults] = await Promise.all([import('../aws.ts'), import('../config/config.ts'), localDefaults()]);
  for (const [key, value] of Object.entries(defaults)) process.env[key] ??= value;
  for (const [flag, variable] of Object.entries(FLAGS)) if (flags[flag] !== undefined) process.env[variable] = flags[flag];
  const config = loadConfig(process.env);
  const clients = createClients(config);
  profilePhase('run');
  return { config, clients };
}

const program = new Command('sluice').description('Serverless change-data-capture from MySQL/MariaDB into S3, exactly once.').showHelpAfterError();
program
  .option('--source <id>', 'source id ($SLUICE_SOURCE_ID)')
  .option('--mysql-url <url>', 'mysql://user:pass@host:port/ ($SLUICE_MYSQL_URL)')
  .option('--state-table <name>', 'DynamoDB table ($SLUICE_STATE_TABLE)')
  .option('--bucket <name>', 'S3 bucket ($SLUICE_BUCKET)')
  .option('--prefix <prefix>', 'key prefix ($SLUICE_PREFIX)')
  .option('--include <regexes>', 'comma-separated regexes over db.table ($SLUICE_INCLUDE)')
  .option('--exclude <regexes>', 'comma-separated regexes over db.table ($SLUICE_EXCLUDE)')
  .option('--startup <mode>', 'initial | initial-only | latest | earliest | position:<file>:<pos> | gtid:<set> | timestamp:<ISO> ($SLUICE_STARTUP)');

const local = program.command('local').description('the embedded local stack: MariaDB, DynamoDB Local, S3 emulator');
local
  .command('up')
  .description('start the local stack (idempotent) and create the bucket and state table')
  .action(async () => {
    const [{ up, env: stackEnv }, { loadConfig }, { createClients, initResources }] = await Promise.all([
      import('../local/stack.ts'),
      import('../config/config.ts'),
      import('../aws.ts'),
    ]);
    const stack = await up({ log: (line) => console.error(line) });
    for (const [key, value] of Object.entries(stackEnv(stack))) process.env[key] ??= value;
    const config = loadConfig(process.env);
    await initResources(config, createClients(config));
    console.error(`local stack up: MariaDB 127.0.0.1:${stack.mariadb.port}, DynamoDB 127.0.0.1:${stack.dynamodb.port}, S3 127.0.0.1:${stack.s3.port}`);
    console.error('use it from any shell with: eval "$(npx sluice local env)"');
  });
local
  .command('down')
  .description('stop what `local up` started')
  .option('--wipe', 'also delete the local MariaDB data (.sluice/)')
  .action(async (options: { wipe?: boolean }) => (await import('../local/stack.ts')).down({ wipe: options.wipe }));
local
  .command('env')
  .description('print export lines pointing sluice and the AWS SDK at the local stack')
  .action(async () => {
    const vars = await localDefaults();
    if (!Object.keys(vars).length) throw new SluiceError('LOCAL_STACK', 'the local stack is not running here; start it with `sluice local up`');
    for (const [key, value] of Object.entries(vars)) console.log(`export ${key}='${value}'`);
  });

program
  .command('init')
  .description('create the S3 bucket and DynamoDB state table if they are missing')
  .action(async () => {
    const { initResources } = await import('../aws.ts');
    const { config, clients } = await configure(program.opts());
    const { bucket } = await initResources(config, clients);
    console.log(`state table ${config.stateTable} ready; bucket ${config.bucket} ${bucket}`);
  });

program
  .command('doctor')
  .description('check configuration, MySQL settings and grants, DynamoDB and S3 access')
  .action(async () => {
    const [{ connect, preflight }, { mysqlTarget, redact }] = await Promise.all([import('../source/mysql/server.ts'), import('../source/mysql/target.ts')]);
    const { config, clients } = await configure(program.opts());
    let failed = false;
    const check = async (name: string, run: () => Promise<unknown>) => {
      try {
        await run();
        console.log(`ok    ${name}`);
      } catch (error) {
        failed = true;
        console.log(`FAIL  ${name}: ${(error as Error).message}`);
      }
    };
    await check(`MySQL ${config.mysqlSecretId ? `secret ${config.mysqlSecretId}` : redact(config.mysqlUrl ?? '')}: binlog settings and grants`, async () => {
      const conn = await connect(await mysqlTarget(config));
      try {
        await preflight(conn);
      } finally {
        await conn.end();
      }
    });
    await check(`DynamoDB table ${config.stateTable}`, () => clients.store.get(config.sourceId));
    await check(`S3 bucket ${config.bucket}`, () =>
      import('@aws-sdk/client-s3').then(({ HeadBucketCommand }) => clients.s3.send(new HeadBucketCommand({ Bucket: config.bucket }))),
    );
    if (failed) process.exitCode = 1;
  });

program
  .command('capture')
  .description('run the poller: one capture run, as the schedule would')
  .option('--once', 'stop as soon as caught up with the binlog end seen at start')
  .addOption(new Option('--seconds <n>', 'run length (default $SLUICE_RUN_SECONDS)').argParser(Number))
  .action(async (options: { once?: boolean; seconds?: number }) => {
    const [{ runCapture }, { createLogger }] = await Promise.all([import('../pipeline/capture.ts'), import('../log.ts')]);
    const { config, clients } = await configure(program.opts());
    const result = await runCapture(
      {
        config,
        s3: clients.s3,
        store: clients.store,
        snapshots: clients.snapshots,
        log: createLogger('WARN'),
        onSnapshotRequested: async (job) => console.error(`initial snapshot ${job.id} requested: copy the existing rows with \`sluice snapshot\``),
      },
      { budgetMs: (options.seconds ?? config.runMs / 1000) * 1000, drain: options.once },
    );
    console.log(
      result.status === 'busy'
        ? 'another run holds the lease; nothing done'
        : `captured ${result.events} events in ${result.transactions} transactions, ${result.commits} commits, ${result.heartbeats} heartbeats; position ${result.position ? formatPosition(result.position) : '-'}${result.caughtUp ? ' (caught up)' : ''}`,
    );
  });

program
  .command('snapshot')
  .description("copy tables' existing rows (resumable, chunked, parallel); continues the pending snapshot if any")
  .option('--tables <list>', 'comma-separated db.table names: a new snapshot of just these (e.g. a table added later)')
  .addOption(new Option('--workers <n>', 'parallel workers').argParser(Number).default(2))
  .addOption(new Option('--seconds <n>', 'stop after this long (resume later with the same command)').argParser(Number).default(24 * 3600))
  .action(async (options: { tables?: string; workers: number; seconds: number }) => {
    const [{ planSnapshot, runSnapshotWorker, snapshotToRun }, { createLogger }] = await Promise.all([import('../pipeline/snapshot.ts'), import('../log.ts')]);
    const { config, clients } = await configure(program.opts());
    const deps = { config, s3: clients.s3, store: clients.store, snapshots: clients.snapshots, log: createLogger('WARN') };
    const job = await snapshotToRun(deps, options.tables ? options.tables.split(',').map((t) => t.trim()) : null);
    const planned = await planSnapshot(deps, job);
    const timer = setInterval(() => void printProgress(clients.snapshots, planned, true), 1000);
    try {
      const results = await Promise.all(
        Array.from({ length: Math.max(1, options.workers) }, (_, i) =>
          runSnapshotWorker(deps, { budgetMs: options.seconds * 1000, snapshotId: job.id, workerId: `cli-${process.pid}-${i}` }),
        ),
      );
      clearInterval(timer);
      await printProgress(clients.snapshots, planned, false);
      const rows = results.reduce((a, r) => a + r.rows, 0);
      console.log(
        `snapshot ${job.id}: ${rows} rows in ${results.reduce((a, r) => a + r.pages, 0)} pages this run; ${results.some((r) => r.complete) ? 'complete' : 'not finished — run `sluice snapshot` again to resume'}`,
      );
    } finally {
      clearInterval(timer);
    }
  });

async function printProgress(snapshots: SnapshotStore, job: SnapshotJob, live: boolean): Promise<void> {
  const { snapshotProgress } = await import('../pipeline/snapshot.ts');
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
  if (live && process.stderr.isTTY) process.stderr.write(`\r${line}`);
  else if (!live) process.stderr.write(`${process.stderr.isTTY ? '\r' : ''}${line}\n`);
}

program
  .command('status')
  .description('stored vs server position, lag, last commit, lease, pending renames, errors')
  .option('--json', 'machine-readable output')
  .action(async (options: { json?: boolean }) => {
    const [{ sourceStatus }, { snapshotProgress }] = await Promise.all([import('../pipeline/status.ts'), import('../pipeline/snapshot.ts')]);
    const { config, clients } = await configure(program.opts());
    const status = await sourceStatus(config, clients.store);
    const job = await clients.snapshots.latestJob(config.sourceId);
    const snapshot = job ? { id: job.id, status: job.status, tables: await snapshotProgress(clients.snapshots, job) } : undefined;
    if (options.json) return console.log(JSON.stringify({ ...status, snapshot }, null, 2));
    const rows: [string, string][] = [
      ['source', status.source],
      ['stored position', status.stored ? formatPosition(status.stored) : 'none (never ran)'],
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
    if (status.error) rows.push(['error', `${status.error.code}: ${status.error.message}`]);
    if (snapshot) {
      rows.push(['snapshot', `${snapshot.id} (${snapshot.status})`]);
      for (const t of snapshot.tables) {
        rows.push([
          `  ${t.table}`,
          `${t.rows.toLocaleString('en-US')}/${t.estimatedRows.toLocaleString('en-US')} rows, ${t.chunksDone}/${t.chunks} chunks, ${t.rowsPerSecond.toLocaleString('en-US')} rows/s${t.etaSeconds ? `, ETA ${t.etaSeconds}s` : ''}`,
        ]);
      }
    }
    for (const [k, v] of rows) console.log(`${k.padEnd(16)} ${v}`);
  });

program
  .command('verify')
  .description('compare the output in S3 with the live tables (safe on a running source); exit 1 on any difference')
  .option('--tables <list>', 'comma-separated db.table names (default: every included table)')
  .option('--json', 'machine-readable output')
  .action(async (options: { tables?: string; json?: boolean }) => {
    const { verify } = await import('../pipeline/verify.ts');
    const { config, clients } = await configure(program.opts());
    const verdict = await verify(
      { config, s3: clients.s3, store: clients.store, snapshots: clients.snapshots },
      { tables: options.tables?.split(',').map((t) => t.trim()) },
    );
    if (options.json) console.log(JSON.stringify(verdict, null, 2));
    else {
      console.log(`MySQL read at ${formatPosition(verdict.mysqlPosition)}; output at ${verdict.outputPosition ? formatPosition(verdict.outputPosition) : '-'}`);
      for (const t of verdict.tables) {
        const bad = t.missing + t.extra + t.differing;
        console.log(
          `${bad ? 'DIFF' : 'ok  '}  ${t.table}: ${t.compared} rows compared, ${t.skipped} changing keys skipped; ${t.missing} missing, ${t.extra} extra, ${t.differing} differing`,
        );
        for (const k of t.examples.missing) console.log(`        missing in S3: ${k}`);
        for (const k of t.examples.extra) console.log(`        extra in S3:   ${k}`);
        for (const d of t.examples.differing) console.log(`        differs ${d.key} in ${d.columns.join(', ')}: mysql ${d.mysql} s3 ${d.output}`);
      }
    }
    if (!verdict.ok) process.exitCode = 1;
  });

program
  .command('materialize')
  .description("write a table's current state from the output (greatest seq per key) as Parquet or JSON Lines")
  .requiredOption('--table <db.table>', 'the table')
  .requiredOption('--out <file>', 'a .parquet or .jsonl file')
  .action(async (options: { table: string; out: string }) => {
    const { materialize } = await import('../pipeline/verify.ts');
    const { config, clients } = await configure(program.opts());
    const rows = await materialize({ config, s3: clients.s3 }, options.table, options.out);
    console.log(`${rows} rows of ${options.table} written to ${options.out}`);
  });

const state = program.command('state').description('the source state as a savepoint: export, import, reset');
state
  .command('export')
  .description('print the source state (position, commit sequence) as JSON')
  .action(async () => {
    const { exportState } = await import('../pipeline/state-admin.ts');
    const { config, clients } = await configure(program.opts());
    console.log(JSON.stringify(await exportState(config, clients.store), null, 2));
  });
state
  .command('import <file>')
  .description('restore a state exported with `state export`; refuses to move a source backwards unless --force')
  .option('--force', 'roll back on purpose (changes after the saved position are captured again, with the same seq)')
  .action(async (file: string, options: { force?: boolean }) => {
    const [{ importState }, { createLogger }] = await Promise.all([import('../pipeline/state-admin.ts'), import('../log.ts')]);
    const { config, clients } = await configure(program.opts());
    const saved = JSON.parse(await readFile(file, 'utf8')) as StateFile;
    const result = await importState(config, clients.store, saved, { force: options.force, log: createLogger('WARN') });
    console.log(`source ${config.sourceId} now at ${result.position ? formatPosition(result.position) : '-'}, commit ${result.commitSeq}`);
  });
state
  .command('reset')
  .description('move the stored position (the commit sequence is kept)')
  .requiredOption('--to <where>', 'latest | earliest | position:<file>:<pos> | timestamp:<ISO> | gtid:<set>')
  .action(async (options: { to: string }) => {
    const [{ resetState }, { createLogger }, { parseStartupSetting }] = await Promise.all([
      import('../pipeline/state-admin.ts'),
      import('../log.ts'),
      import('../config/config.ts'),
    ]);
    const { config, clients } = await configure(program.opts());
    const result = await resetState(config, clients.store, parseStartupSetting(options.to), createLogger('WARN'));
    console.log(`source ${config.sourceId} now at ${result.position ? formatPosition(result.position) : '-'}, commit ${result.commitSeq}`);
  });

program
  .command('demo')
  .description('start the local stack, write a stream of changes, capture them as the schedule would, show what landed')
  .option('--rounds <n>', 'capture rounds', (v) => Number(v), 4)
  .action(async (options: { rounds: number }) => (await import('./demo.ts')).runDemo(options.rounds));

reportProfileAtExit();
try {
  await program.parseAsync();
  profilePhase('shutdown');
} catch (error) {
  const message = error instanceof SluiceError ? `${error.code}: ${error.message}` : ((error as Error).stack ?? String(error));
  console.error(`sluice: ${message}`);
  process.exitCode = 1;
}
