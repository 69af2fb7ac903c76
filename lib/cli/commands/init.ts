import type { Command } from 'commander';
import type { Cli } from '../cli.ts';

/** `sluice init`: the bucket and the state table. */
export function initCommand(program: Command, cli: Cli): void {
  program
    .command('init')
    .description('create the S3 bucket and DynamoDB state table if they are missing')
    .action(async () => {
      const { initResources } = await import('../../aws.ts');
      const { config, clients } = await cli.configure(program.opts());
      const { bucket } = await initResources(config, clients);
      cli.out(`state table ${config.stateTable} ready; bucket ${config.bucket} ${bucket}`);
    });
}
