import type { Command } from 'commander';
import type { Cli } from '../cli.ts';

/** `sluice doctor`: configuration, the server's settings and grants, DynamoDB and S3 access (lib/ops/doctor.ts). */
export function doctorCommand(program: Command, cli: Cli): void {
  program
    .command('doctor')
    .description('check configuration, MySQL settings and grants, DynamoDB and S3 access')
    .action(async () => {
      const { doctor } = await import('../../ops/doctor.ts');
      const { config, clients } = await cli.configure(program.opts());
      const { failed, warnings } = await doctor(config, clients, ({ name, error }) => cli.out(error ? `FAIL  ${name}: ${error.message}` : `ok    ${name}`));
      for (const warning of warnings) cli.out(`WARN  ${warning}`);
      if (failed) cli.fail();
    });
}
