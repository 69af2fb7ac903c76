import type { Command } from 'commander';
import type { LocalServer } from '../../local/stack.ts';
import { type Cli, serverOption } from '../cli.ts';

/** `sluice demo`: the local stack, a stream of changes, captured as the schedule would. */
export function demoCommand(program: Command, cli: Cli): void {
  program
    .command('demo')
    .description('start the local stack, write a stream of changes, capture them as the schedule would, show what landed')
    .option('--rounds <n>', 'capture rounds', (v) => Number(v), 4)
    .addOption(serverOption())
    .action(async (options: { rounds: number; server?: LocalServer }) => {
      const { runDemo } = await import('../demo.ts');
      const { localServer } = await import('../../local/stack.ts');
      const server = options.server ?? localServer(cli.io.env);
      if (!(await runDemo(options.rounds, { env: cli.io.env, server, say: (line) => cli.out(line) }))) cli.fail();
    });
}
