import type { Command } from 'commander';
import type { Cli } from '../cli.ts';

/** `sluice doctor`: configuration, the server's settings and grants, DynamoDB and S3 access. */
export function doctorCommand(program: Command, cli: Cli): void {
  program
    .command('doctor')
    .description('check configuration, MySQL settings and grants, DynamoDB and S3 access')
    .action(async () => {
      const { connect, preflight } = await import('../../source/mysql/server.ts');
      const { filterWarnings } = await import('../../source/mysql/filter-check.ts');
      const { lockWarning } = await import('../../source/mysql/grants.ts');
      const { dialectOf } = await import('../../source/mysql/dialect.ts');
      const { rdsBinlogRetention, retentionWarning } = await import('../../source/mysql/rds.ts');
      const { mysqlTarget, redact } = await import('../../source/mysql/target.ts');
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
}
