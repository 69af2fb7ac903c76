import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { BucketAlreadyOwnedByYou, CreateBucketCommand, HeadBucketCommand, S3Client } from '@aws-sdk/client-s3';
import type { Config } from './config/config.ts';
import { ErrorCode, SluiceError } from './errors.ts';
import { SourceRegistry } from './fleet/registry.ts';
import { profileClient } from './profile.ts';
import { DynamoDbStateStore, ensureStateTable } from './state/dynamodb.ts';
import { DynamoDbSnapshotStore } from './state/dynamodb-snapshots.ts';
import { DynamoDbRewriteBuckets } from './state/iceberg-buckets.ts';
import { DynamoDbMergeStore } from './state/iceberg-store.ts';

/** The environment the SDK reads its settings from (process.env, unless a caller passes its own). */
export type Env = Readonly<Record<string, string | undefined>>;

/**
 * A client's region, endpoint and static credentials, from the variables the SDK itself reads
 * (AWS_REGION, AWS_ENDPOINT_URL_<SERVICE> or AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID…) but taken from
 * `env`: the CLI hands its own environment (flags, the local stack's defaults) to the clients
 * without writing process.env. What `env` does not set, the SDK resolves as usual.
 */
export function sdkSettings(env: Env, service: 'S3' | 'DYNAMODB' | 'GLUE' | 'CLOUDWATCH') {
  const region = env.AWS_REGION ?? env.AWS_DEFAULT_REGION;
  const endpoint = env[`AWS_ENDPOINT_URL_${service}`] ?? env.AWS_ENDPOINT_URL;
  const { AWS_ACCESS_KEY_ID: accessKeyId, AWS_SECRET_ACCESS_KEY: secretAccessKey, AWS_SESSION_TOKEN: sessionToken } = env;
  return {
    ...(region ? { region } : {}),
    ...(endpoint ? { endpoint } : {}),
    ...(accessKeyId && secretAccessKey ? { credentials: { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) } } : {}),
  };
}

/**
 * AWS clients from configuration alone: endpoints come from AWS_ENDPOINT_URL(_S3|_DYNAMODB), so the
 * local stack, LocalStack and AWS need no code path of their own.
 */
export function createClients(config: Config, env: Env = process.env) {
  const s3 = new S3Client({ ...sdkSettings(env, 'S3'), forcePathStyle: config.s3ForcePathStyle, maxAttempts: 5 });
  const dynamo = dynamoClient(env);
  profileClient(s3, 's3');
  nameMissingBucket(s3);
  return {
    s3,
    dynamo,
    registry: new SourceRegistry(dynamo, config.stateTable),
    store: new DynamoDbStateStore(dynamo, config.stateTable),
    snapshots: new DynamoDbSnapshotStore(dynamo, config.stateTable),
    merges: new DynamoDbMergeStore(dynamo, config.stateTable),
    buckets: new DynamoDbRewriteBuckets(dynamo, config.stateTable),
  };
}

/**
 * The DynamoDB client alone, from the environment: what reads the fleet's registry before a
 * source's configuration (and so `createClients`) exists.
 */
export function dynamoClient(env: Env = process.env): DynamoDBClient {
  const dynamo = new DynamoDBClient({ ...sdkSettings(env, 'DYNAMODB'), maxAttempts: 5 });
  profileClient(dynamo, 'dynamodb');
  nameMissing(dynamo, (error, input, command) =>
    error.name === 'ResourceNotFoundException' && command !== 'DescribeTableCommand'
      ? new SluiceError(ErrorCode.STATE_TABLE_MISSING, `the DynamoDB table ${tableOf(input)} (SLUICE_STATE_TABLE) does not exist: ${MISSING_FIX}`, {
          cause: error,
        })
      : undefined,
  );
  return dynamo;
}

/*
 * The SDK's bare "does not exist" for the state table and the bucket become errors naming them and
 * `sluice init`, whichever command ran into it. DescribeTable and HeadBucket are left alone: `init`
 * asks them to find out what to create.
 */
const MISSING_FIX = 'create it with `sluice init` (or deploy serverless.yml, which creates it), or fix the name';

function nameMissingBucket(s3: S3Client): void {
  nameMissing(s3, (error, input) =>
    error.name === 'NoSuchBucket'
      ? new SluiceError(ErrorCode.BUCKET_MISSING, `the S3 bucket ${String(input.Bucket)} (SLUICE_BUCKET) does not exist: ${MISSING_FIX}`, { cause: error })
      : undefined,
  );
}

function nameMissing(
  client: S3Client | DynamoDBClient,
  missing: (error: { name?: string }, input: Record<string, unknown>, command?: string) => SluiceError | undefined,
): void {
  (client as S3Client).middlewareStack.add(
    (next, context) => async (args) => {
      try {
        return await next(args);
      } catch (error) {
        throw missing(error as { name?: string }, args.input as Record<string, unknown>, context.commandName) ?? error;
      }
    },
    { step: 'initialize', name: 'sluiceMissingResources' },
  );
}

/** The table a request names: its TableName, or the first one of a batch or a transaction. */
function tableOf(input: Record<string, unknown>): string {
  if (typeof input.TableName === 'string') return input.TableName;
  const batch = Object.keys((input.RequestItems as Record<string, unknown> | undefined) ?? {})[0];
  const item = (input.TransactItems as Record<string, { TableName?: string }>[] | undefined)?.[0];
  return batch ?? Object.values(item ?? {})[0]?.TableName ?? 'named by SLUICE_STATE_TABLE';
}

/** Creates the bucket and state table if missing (local and dev use; serverless.yml owns them in AWS). */
export async function initResources(
  config: Config,
  clients: Omit<ReturnType<typeof createClients>, 'merges' | 'buckets' | 'registry'>,
): Promise<{ bucket: 'exists' | 'created' }> {
  await ensureStateTable(clients.dynamo, config.stateTable);
  try {
    await clients.s3.send(new HeadBucketCommand({ Bucket: config.bucket }));
    return { bucket: 'exists' };
  } catch {
    try {
      await clients.s3.send(new CreateBucketCommand({ Bucket: config.bucket }));
    } catch (error) {
      // Created concurrently by another `init`: that is what we wanted.
      if (!(error instanceof BucketAlreadyOwnedByYou)) throw error;
    }
    return { bucket: 'created' };
  }
}

/** Counts requests per command name on a client (benchmarks report S3 requests per 1M rows). */
export function countRequests(client: S3Client | DynamoDBClient): Map<string, number> {
  const counts = new Map<string, number>();
  (client as S3Client).middlewareStack.add(
    (next, context) => (args) => {
      const name = context.commandName ?? 'unknown';
      counts.set(name, (counts.get(name) ?? 0) + 1);
      return next(args);
    },
    { step: 'initialize', name: 'sluiceRequestCounter' },
  );
  return counts;
}
