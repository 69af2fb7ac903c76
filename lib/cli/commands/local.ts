import type { Command } from 'commander';
import { ErrorCode, SluiceError } from '../../errors.ts';
import type { LocalServer } from '../../local/stack.ts';
import { type Cli, defined, localDefaults, serverOption } from '../cli.ts';

/** `sluice local up | down | env`: the embedded local stack. */
export function localCommands(program: Command, cli: Cli): void {
  const local = program.command('local').description('the embedded local stack: MariaDB or MySQL 8.0, DynamoDB Local, S3 emulator');
  local
    .command('up')
    .description('start the local stack (idempotent) and create the bucket and state table')
    .addOption(serverOption())
    .action(async (options: { server?: LocalServer }) => {
      const { up, stackHome, localServer, sourceServer, env: stackEnv } = await import('../../local/stack.ts');
      const { initResources } = await import('../../aws.ts');
      const server = options.server ?? localServer(cli.io.env);
      const stack = await up({ home: stackHome(cli.io.env, server), server, log: (line) => cli.err(line) });
      const env = { ...stackEnv(stack), ...defined(cli.io.env) };
      const { config, clients } = await cli.open((await import('../../config/config.ts')).loadConfig(env), env);
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
      const { down, stackHome } = await import('../../local/stack.ts');
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
}
