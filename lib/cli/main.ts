import { Command, CommanderError } from 'commander';
import { SluiceError } from '../errors.ts';
import { profilePhase, reportProfileAtExit } from '../profile.ts';
import { Cli, type CliIo } from './cli.ts';
import { captureCommand } from './commands/capture.ts';
import { demoCommand } from './commands/demo.ts';
import { doctorCommand } from './commands/doctor.ts';
import { icebergCommand } from './commands/iceberg.ts';
import { initCommand } from './commands/init.ts';
import { localCommands } from './commands/local.ts';
import { materializeCommand } from './commands/materialize.ts';
import { snapshotCommand } from './commands/snapshot.ts';
import { sourcesCommands } from './commands/sources.ts';
import { stateCommands } from './commands/state.ts';
import { statusCommand } from './commands/status.ts';
import { verifyCommand } from './commands/verify.ts';

export type { CliIo } from './cli.ts';

// One file per command in ./commands/ (a group: `local`, `state`); each imports what its command
// runs where it runs, so `sluice --help` (or a typo) starts at once.

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
  // In the order `sluice --help` lists them.
  for (const command of [
    localCommands,
    initCommand,
    doctorCommand,
    captureCommand,
    snapshotCommand,
    statusCommand,
    sourcesCommands,
    verifyCommand,
    materializeCommand,
    icebergCommand,
    stateCommands,
    demoCommand,
  ])
    command(program, cli);
  return program;
}
