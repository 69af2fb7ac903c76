import { HeadBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import type { Config } from '../config/config.ts';
import { dialectOf } from '../source/mysql/dialect/dialect.ts';
import { filterWarnings } from '../source/mysql/filter-check.ts';
import { rdsBinlogRetention, retentionWarning } from '../source/mysql/rds.ts';
import { connect, preflight } from '../source/mysql/server.ts';
import { mysqlTarget, redact } from '../source/mysql/target.ts';
import type { StateStore } from '../state/store.ts';

/** One of `sluice doctor`'s checks: passed, or failed with why. */
export interface CheckResult {
  readonly name: string;
  readonly error?: Error;
}

/**
 * `sluice doctor`'s checks, one after another, each reported as it ends: the server's binlog
 * settings and grants, the state table, the bucket. Returns what is worth a warning (filters that
 * match nothing, locks the snapshot cannot take, a short RDS binlog retention).
 */
export async function doctor(
  config: Config,
  clients: { readonly store: StateStore; readonly s3: S3Client },
  report: (check: CheckResult) => void,
): Promise<{ readonly failed: boolean; readonly warnings: string[] }> {
  let failed = false;
  const check = async (name: string, run: () => Promise<unknown>) => {
    try {
      await run();
      report({ name });
    } catch (error) {
      failed = true;
      report({ name, error: error as Error });
    }
  };
  const warnings: string[] = [];
  await check(`MySQL ${config.mysqlSecretId ? `secret ${config.mysqlSecretId}` : redact(config.mysqlUrl ?? '')}: binlog settings and grants`, async () => {
    const conn = await connect(await mysqlTarget(config));
    try {
      await preflight(conn);
      warnings.push(...(await filterWarnings(conn, config)));
      const locks = await (await dialectOf(conn)).lockWarning(conn);
      if (locks) warnings.push(locks);
      const retention = retentionWarning(await rdsBinlogRetention(conn));
      if (retention) warnings.push(retention);
    } finally {
      await conn.end();
    }
  });
  await check(`DynamoDB table ${config.stateTable}`, () => clients.store.get(config.sourceId));
  await check(`S3 bucket ${config.bucket}`, async () => {
    await clients.s3.send(new HeadBucketCommand({ Bucket: config.bucket })).catch((error: { $metadata?: { httpStatusCode?: number } }) => {
      if (error.$metadata?.httpStatusCode !== 404) throw error;
      throw new Error('it does not exist: create it with `sluice init` (or deploy serverless.yml, which creates it), or fix the name');
    });
  });
  return { failed, warnings };
}
