import type { Command } from 'commander';
import { formatPosition } from '../../core/position.ts';
import { formatTableRef } from '../../core/table-ref.ts';
import type { Cli } from '../cli.ts';

/** `sluice state export | import | reset`: the source state as a savepoint. */
export function stateCommands(program: Command, cli: Cli): void {
  const state = program.command('state').description('the source state as a savepoint: export, import, reset');
  state
    .command('export')
    .description('print the source state (position, commit sequence) as JSON')
    .action(async () => {
      const { exportState } = await import('../../ops/state-admin.ts');
      const { config, clients } = await cli.configure(program.opts());
      cli.out(JSON.stringify(await exportState(config, clients.store), null, 2));
    });
  state
    .command('import <file>')
    .description('restore a state exported with `state export`; refuses to move a source backwards unless --force')
    .option('--force', 'roll back on purpose (changes after the saved position are captured again, in a later history epoch)')
    .action(async (file: string, options: { force?: boolean }) => {
      const { createLogger } = await import('../../log.ts');
      const { importState, readStateFile } = await import('../../ops/state-admin.ts');
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
      const { createLogger } = await import('../../log.ts');
      const { resetState } = await import('../../ops/state-admin.ts');
      const { parseStartupSetting } = await import('../../config/config.ts');
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
}
