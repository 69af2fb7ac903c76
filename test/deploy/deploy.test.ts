import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import {
  CloudFormationClient,
  CreateStackCommand,
  DeleteStackCommand,
  DescribeStacksCommand,
  GetTemplateCommand,
  ListStackResourcesCommand,
} from '@aws-sdk/client-cloudformation';
import { CloudWatchClient, DescribeAlarmsCommand, GetDashboardCommand } from '@aws-sdk/client-cloudwatch';
import { CloudWatchLogsClient, DescribeLogGroupsCommand } from '@aws-sdk/client-cloudwatch-logs';
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DescribeRuleCommand, EventBridgeClient, ListRuleNamesByTargetCommand, ListTargetsByRuleCommand } from '@aws-sdk/client-eventbridge';
import { GetRoleCommand, GetRolePolicyCommand, IAMClient, ListRolePoliciesCommand } from '@aws-sdk/client-iam';
import { GetFunctionConfigurationCommand, GetPolicyCommand, LambdaClient } from '@aws-sdk/client-lambda';
import {
  DeleteObjectsCommand,
  GetBucketEncryptionCommand,
  GetBucketLifecycleConfigurationCommand,
  GetBucketOwnershipControlsCommand,
  GetBucketVersioningCommand,
  GetPublicAccessBlockCommand,
  HeadBucketCommand,
  ListObjectVersionsCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { CreateSecretCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { GetTopicAttributesCommand, SNSClient } from '@aws-sdk/client-sns';
import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createClients } from '../../lib/aws.ts';
import { run } from '../../lib/cli/main.ts';
import { type Config, loadConfig } from '../../lib/config/config.ts';
import { loadVersion } from '../../lib/iceberg/table/table.ts';
import { eventLines } from '../../lib/materialize/change-log.ts';
import { s3ObjectStore } from '../../lib/sink/s3/object-store.ts';
import { mysqlTarget } from '../../lib/source/mysql/target.ts';
import { fold, loadHistory, mysqlRows } from '../support/fold.ts';
import { icebergRowsAt, mysqlTextOf } from '../support/iceberg-merge.ts';
import type { ChangeEvent } from '../support/source.ts';
import { type InvocationResult, PackagedFunctions } from './lambda.ts';

/*
 * `npx sls deploy --stage local` into an AWS emulator (moto's server mode, test/deploy/emulator.ts
 * says why not LocalStack), then what was created is checked by asking the emulator's APIs — not by
 * reading the template — and the deployed functions are run against the deployed table and bucket.
 *
 * moto accepts some resource types without creating them (its CloudFormation has no model for
 * them) and ignores some bucket properties. Those are detected, not assumed: the skipped resources
 * by comparing the stack's resources with its template, the bucket properties with a probe stack.
 * What was detected must equal GAPS — the list the README gives — so a check that did not run is
 * never reported as passed, and a gap moto closes fails the test until its check is written.
 */

const GAPS = {
  'AWS::CloudWatch::Alarm': "moto's CloudFormation has no model for alarms: the five alarms and their topic actions are accepted, not created",
  'AWS::Lambda::EventInvokeConfig':
    "moto's CloudFormation has no model for it: the functions' retry counts and on-failure destination (the dead-letter queue) are not set",
  'AWS::S3::BucketPolicy': "moto's CloudFormation has no model for it: the TLS-only and delete-only-staging bucket policies are not applied",
  PublicAccessBlockConfiguration: "moto's CloudFormation ignores the bucket's public-access block",
  VersioningConfiguration: "moto's CloudFormation ignores the bucket's versioning",
  LifecycleConfiguration: "moto's CloudFormation ignores the bucket's lifecycle rules",
  OwnershipControls: "moto's CloudFormation ignores the bucket's object-ownership setting",
  Architectures: "moto's CloudFormation ignores a function's architecture (every function is x86_64)",
  EphemeralStorage: "moto's CloudFormation ignores a function's ephemeral storage size (the Iceberg function's 4096 MB)",
} as const;

/** The same for the deploy with the optional features on. */
const OPTION_GAPS = {
  'AWS::Logs::LogGroup KmsKeyId': "moto's CloudFormation ignores a log group's KMS key (kmsKeyArn)",
} as const;

const { endpoint, mysqlUrl, mysqlAdminUrl, home } = inject('deployEnv');
const scratch = () => {
  const dir = join(home, 'tmp');
  mkdirSync(dir, { recursive: true });
  return dir;
};
const region = 'us-east-1';
const STACK = 'sluice-local';
const settings = { region, endpoint, credentials: { accessKeyId: 'test', secretAccessKey: 'test' } };
const cfn = new CloudFormationClient(settings);
const s3 = new S3Client({ ...settings, forcePathStyle: true });
const dynamo = new DynamoDBClient(settings);
const lambda = new LambdaClient(settings);
const iam = new IAMClient(settings);
const events = new EventBridgeClient(settings);
const sqs = new SQSClient(settings);
const sns = new SNSClient(settings);
const cloudwatch = new CloudWatchClient(settings);
const logs = new CloudWatchLogsClient(settings);
const secrets = new SecretsManagerClient(settings);

/** Runs `npx sls <command> --stage local` with the emulator as every AWS endpoint; a failure carries osls's output. */
async function sls(command: 'deploy' | 'remove', params: string[] = []): Promise<string> {
  try {
    const { stdout, stderr } = await promisify(execFile)('npx', ['sls', command, '--stage', 'local', ...params.map((p) => `--param=${p}`)], {
      env: {
        ...process.env,
        AWS_ENDPOINT_URL: endpoint,
        AWS_ACCESS_KEY_ID: 'test',
        AWS_SECRET_ACCESS_KEY: 'test',
        AWS_REGION: region,
        SLS_TELEMETRY_DISABLED: '1',
        // Its temporary files (a folder per function, left behind) stay in the suite's home, not the system's.
        TMPDIR: scratch(),
        // The local stage's MySQL: the suite's private MariaDB.
        SLUICE_MYSQL_URL: mysqlUrl,
      },
      timeout: 300_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    return `${stdout}${stderr}`;
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string };
    const output = `${e.stdout ?? ''}${e.stderr ?? ''}`.trim().split('\n').slice(-30).join('\n');
    throw new Error(`npx sls ${command} --stage local failed (emulator log: ${join(home, 'moto.log')}):\n${output || e.message}`);
  }
}

const detected: Record<string, string> = {};
const seconds: Record<string, number> = {};
async function timed<T>(name: string, work: () => Promise<T>): Promise<T> {
  const started = Date.now();
  try {
    return await work();
  } finally {
    seconds[name] = (Date.now() - started) / 1000;
  }
}

let outputs: Record<string, string> = {};
let physical: Record<string, string> = {};
const fn = (name: 'poller' | 'snapshot' | 'iceberg') => `${STACK}-${name}`;
const functionConfig = (name: 'poller' | 'snapshot' | 'iceberg') => lambda.send(new GetFunctionConfigurationCommand({ FunctionName: fn(name) }));

/** A role's inline policy statements, as the emulator stores them. */
async function statements(logicalId: string): Promise<{ Effect: string; Action: string | string[]; Resource: string | string[]; Condition?: unknown }[]> {
  const RoleName = physical[logicalId] as string;
  const names = (await iam.send(new ListRolePoliciesCommand({ RoleName }))).PolicyNames ?? [];
  const all = [];
  for (const PolicyName of names) {
    const document = decodeURIComponent((await iam.send(new GetRolePolicyCommand({ RoleName, PolicyName }))).PolicyDocument ?? '{}');
    // An `!If [cond, statement, !Ref AWS::NoValue]` whose condition is false: moto keeps it as null (AWS drops it).
    all.push(...parsePolicy(document).Statement.filter((statement: unknown) => statement !== null));
  }
  return all;
}

/**
 * A policy document as IAM returns it: JSON — or, from moto's CloudFormation, the Python literal of
 * the dict it stored (single quotes, True/False/None); the policies hold no quote inside a value.
 */
function parsePolicy(document: string) {
  try {
    return JSON.parse(document);
  } catch {
    return JSON.parse(
      document
        .replaceAll("'", '"')
        .replace(/\bTrue\b/g, 'true')
        .replace(/\bFalse\b/g, 'false')
        .replace(/\bNone\b/g, 'null'),
    );
  }
}

/** IAM's matching of an action or ARN against a pattern with `*` (and `?`) wildcards. */
const matches = (pattern: string, value: string) =>
  new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replaceAll('*', '.*')
      .replaceAll('?', '.')}$`,
  ).test(value);
const list = (v: string | string[]) => (Array.isArray(v) ? v : [v]);

/** Whether some Allow statement grants `action` on `resource` (and under which condition, if any). */
function allows(policy: Awaited<ReturnType<typeof statements>>, action: string, resource: string): false | { condition?: unknown } {
  const hit = policy.find((s) => s.Effect === 'Allow' && list(s.Action).some((a) => matches(a, action)) && list(s.Resource).some((r) => matches(r, resource)));
  return hit ? { condition: hit.Condition } : false;
}

/** The Allow statements that grant `action` on any resource at all. */
const grants = (policy: Awaited<ReturnType<typeof statements>>, action: string) =>
  policy.filter((s) => s.Effect === 'Allow' && list(s.Action).some((a) => matches(a, action)));

// What could not be checked, with the reason, and how long each step took: .sluice/deploy/report.json.
afterAll(() => {
  mkdirSync(home, { recursive: true });
  writeFileSync(join(home, 'report.json'), `${JSON.stringify({ notEmulated: detected, seconds }, null, 2)}\n`);
});

describe('serverless deploy --stage local into the AWS emulator', () => {
  it('deploys the whole stack', async () => {
    await timed('deploy', () => sls('deploy'));
    const stack = (await cfn.send(new DescribeStacksCommand({ StackName: STACK }))).Stacks?.[0];
    expect(['CREATE_COMPLETE', 'UPDATE_COMPLETE']).toContain(stack?.StackStatus);
    outputs = Object.fromEntries((stack?.Outputs ?? []).map((o) => [o.OutputKey, o.OutputValue]));
    expect(outputs).toMatchObject({ StateTableName: 'sluice-local-state', BucketName: 'sluice-local', DashboardName: 'sluice-local' });
    const resources = (await cfn.send(new ListStackResourcesCommand({ StackName: STACK }))).StackResourceSummaries ?? [];
    physical = Object.fromEntries(resources.filter((r) => r.LogicalResourceId).map((r) => [r.LogicalResourceId, r.PhysicalResourceId]));
  });

  it('detects what the emulator accepted without creating it', async () => {
    const template = JSON.parse((await cfn.send(new GetTemplateCommand({ StackName: STACK }))).TemplateBody ?? '{}') as {
      Resources: Record<string, { Type: string; Condition?: string }>;
    };
    // Conditional resources (VPC endpoints, Glue, …) are off in the local stage; every other one must exist.
    const unconditional = Object.entries(template.Resources).filter(([, r]) => !r.Condition);
    const skipped = unconditional.filter(([id]) => !(id in physical));
    for (const [, r] of skipped) detected[r.Type] = GAPS[r.Type as keyof typeof GAPS] ?? `not created (no known reason: ${r.Type})`;

    // The bucket properties: a probe bucket that sets each shows which ones moto applies.
    await cfn.send(
      new CreateStackCommand({
        StackName: 'sluice-probe',
        TemplateBody: JSON.stringify({
          Resources: {
            Probe: {
              Type: 'AWS::S3::Bucket',
              Properties: {
                BucketName: 'sluice-probe',
                PublicAccessBlockConfiguration: { BlockPublicAcls: true },
                VersioningConfiguration: { Status: 'Enabled' },
                LifecycleConfiguration: { Rules: [{ Id: 'r', Status: 'Enabled', ExpirationInDays: 1 }] },
                OwnershipControls: { Rules: [{ ObjectOwnership: 'BucketOwnerEnforced' }] },
              },
            },
            ProbeFunction: {
              Type: 'AWS::Lambda::Function',
              Properties: {
                FunctionName: 'sluice-probe',
                Runtime: 'nodejs22.x',
                Handler: 'index.handler',
                Role: physical.PollerRole && (await iam.send(new GetRoleCommand({ RoleName: physical.PollerRole }))).Role?.Arn,
                Code: { ZipFile: 'export const handler = async () => 1;' },
                Architectures: ['arm64'],
                EphemeralStorage: { Size: 1024 },
              },
            },
          },
        }),
      }),
    );
    const probes = {
      PublicAccessBlockConfiguration: () => s3.send(new GetPublicAccessBlockCommand({ Bucket: 'sluice-probe' })),
      VersioningConfiguration: async () => {
        if ((await s3.send(new GetBucketVersioningCommand({ Bucket: 'sluice-probe' }))).Status !== 'Enabled') throw new Error('not versioned');
      },
      LifecycleConfiguration: () => s3.send(new GetBucketLifecycleConfigurationCommand({ Bucket: 'sluice-probe' })),
      OwnershipControls: () => s3.send(new GetBucketOwnershipControlsCommand({ Bucket: 'sluice-probe' })),
      Architectures: async () => {
        const f = await lambda.send(new GetFunctionConfigurationCommand({ FunctionName: 'sluice-probe' }));
        if (f.Architectures?.[0] !== 'arm64') throw new Error('not arm64');
      },
      EphemeralStorage: async () => {
        const f = await lambda.send(new GetFunctionConfigurationCommand({ FunctionName: 'sluice-probe' }));
        if (f.EphemeralStorage?.Size !== 1024) throw new Error('not 1024 MB');
      },
    };
    for (const [property, probe] of Object.entries(probes)) {
      if (
        await probe().then(
          () => false,
          () => true,
        )
      )
        detected[property] = GAPS[property as keyof typeof GAPS];
    }
    await cfn.send(new DeleteStackCommand({ StackName: 'sluice-probe' }));
    expect(detected).toEqual(GAPS);
  });

  // Its public-access block, versioning, lifecycle rules and ownership are in GAPS.
  it('the bucket: encrypted by default (AES256)', async () => {
    const encryption = await s3.send(new GetBucketEncryptionCommand({ Bucket: outputs.BucketName }));
    expect(encryption.ServerSideEncryptionConfiguration?.Rules?.[0]?.ApplyServerSideEncryptionByDefault?.SSEAlgorithm).toBe('AES256');
  });

  it('the state table: key pk (string hash), on demand', async () => {
    const table = (await dynamo.send(new DescribeTableCommand({ TableName: outputs.StateTableName }))).Table;
    expect(table?.KeySchema).toEqual([{ AttributeName: 'pk', KeyType: 'HASH' }]);
    expect(table?.AttributeDefinitions).toEqual([{ AttributeName: 'pk', AttributeType: 'S' }]);
    expect(table?.BillingModeSummary?.BillingMode).toBe('PAY_PER_REQUEST');
  });

  it('the functions: runtime, handler, size, role and the environment that names the deployed resources', async () => {
    const [poller, snapshot, iceberg] = await Promise.all([functionConfig('poller'), functionConfig('snapshot'), functionConfig('iceberg')]);
    // Their architectures and the Iceberg function's disk are in GAPS.
    expect([poller, snapshot, iceberg].map((f) => [f.Runtime, f.Handler, f.Timeout, f.MemorySize])).toEqual([
      ['nodejs22.x', 'functions/poller.handler', 70, 1024],
      ['nodejs22.x', 'functions/snapshot.handler', 900, 1024],
      ['nodejs22.x', 'functions/iceberg.handler', 900, 3008],
    ]);
    const roles = await Promise.all(['PollerRole', 'SnapshotRole', 'IcebergRole'].map((id) => iam.send(new GetRoleCommand({ RoleName: physical[id] }))));
    expect([poller.Role, snapshot.Role, iceberg.Role]).toEqual(roles.map((r) => r.Role?.Arn));
    for (const f of [poller, snapshot, iceberg])
      expect(f.Environment?.Variables).toMatchObject({
        SLUICE_BUCKET: outputs.BucketName,
        SLUICE_STATE_TABLE: outputs.StateTableName,
        SLUICE_SNAPSHOT_FUNCTION: fn('snapshot'),
        SLUICE_MYSQL_URL: mysqlUrl,
        // For `sluice sources`, which gives a registered source the stack's alarms.
        SLUICE_ALARM_TOPIC_ARN: outputs.AlarmTopicArn,
        SLUICE_LAG_ALARM_SECONDS: '900',
      });
    const groups = (await logs.send(new DescribeLogGroupsCommand({ logGroupNamePrefix: `/aws/lambda/${STACK}-` }))).logGroups ?? [];
    expect(groups.map((g) => [g.logGroupName, g.retentionInDays]).sort()).toEqual(
      ['iceberg', 'poller', 'snapshot'].map((name) => [`/aws/lambda/${STACK}-${name}`, 30]),
    );
  });

  it('the schedules: the poller every minute, the Iceberg merge every 5 minutes but disabled, each allowed to invoke its function', async () => {
    for (const [name, expression, state] of [
      ['poller', 'rate(1 minute)', 'ENABLED'],
      ['iceberg', 'rate(5 minutes)', 'DISABLED'],
    ] as const) {
      const arn = (await functionConfig(name)).FunctionArn as string;
      const rules = (await events.send(new ListRuleNamesByTargetCommand({ TargetArn: arn }))).RuleNames ?? [];
      expect(rules, name).toHaveLength(1);
      const rule = await events.send(new DescribeRuleCommand({ Name: rules[0] }));
      expect([rule.ScheduleExpression, rule.State]).toEqual([expression, state]);
      expect((await events.send(new ListTargetsByRuleCommand({ Rule: rules[0] }))).Targets?.map((t) => t.Arn)).toEqual([arn]);
      const policy = JSON.parse((await lambda.send(new GetPolicyCommand({ FunctionName: fn(name) }))).Policy ?? '{}');
      expect(policy.Statement).toEqual([
        expect.objectContaining({
          Principal: { Service: 'events.amazonaws.com' },
          Action: 'lambda:InvokeFunction',
          Condition: { ArnLike: { 'AWS:SourceArn': rule.Arn } },
        }),
      ]);
    }
  });

  it("the roles' policies: what each function may do, on the deployed resources' ARNs", async () => {
    const table = (await dynamo.send(new DescribeTableCommand({ TableName: outputs.StateTableName }))).Table?.TableArn as string;
    const queue = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: outputs.FailedInvocationsQueueUrl, AttributeNames: ['QueueArn'] }))).Attributes
      ?.QueueArn as string;
    const bucket = `arn:aws:s3:::${outputs.BucketName}`;
    const snapshotFn = (await functionConfig('snapshot')).FunctionArn as string;
    for (const role of ['PollerRole', 'SnapshotRole']) {
      const policy = await statements(role);
      expect(allows(policy, 's3:PutObject', `${bucket}/_staging/x`), role).toBeTruthy();
      expect(allows(policy, 's3:DeleteObject', `${bucket}/_staging/x`), role).toBeTruthy();
      expect(allows(policy, 's3:PutObject', `${bucket}/tables/x`), role).toBeTruthy();
      // Write-once: nothing outside _staging/ can be deleted, nor anything under iceberg/ written.
      for (const key of ['tables/x', 'manifests/x', 'schema/x', 'iceberg/x'])
        expect(allows(policy, 's3:DeleteObject', `${bucket}/${key}`), `${role} ${key}`).toBe(false);
      expect(allows(policy, 's3:PutObject', `${bucket}/iceberg/x`), role).toBe(false);
      expect(allows(policy, 's3:ListBucket', bucket), role).toEqual({ condition: { StringLike: { 's3:prefix': ['_staging/*', '*/_staging/*'] } } });
      // A registered source's output, under <prefix><id>/: the same rules.
      expect(allows(policy, 's3:DeleteObject', `${bucket}/orders/_staging/x`), role).toBeTruthy();
      expect(allows(policy, 's3:PutObject', `${bucket}/orders/tables/x`), role).toBeTruthy();
      for (const key of ['orders/tables/x', 'orders/manifests/x', 'orders/iceberg/x'])
        expect(allows(policy, 's3:DeleteObject', `${bucket}/${key}`), `${role} ${key}`).toBe(false);
      expect(allows(policy, 'dynamodb:UpdateItem', table), role).toBeTruthy();
      expect(allows(policy, 'lambda:InvokeFunction', snapshotFn), role).toBeTruthy();
      expect(allows(policy, 'sqs:SendMessage', queue), role).toBeTruthy();
      // No secret of its own in the local stage: only registered sources' secrets, those tagged for this stack.
      expect(
        grants(policy, 'secretsmanager:GetSecretValue').map((s) => s.Condition),
        role,
      ).toEqual([{ StringEquals: { 'secretsmanager:ResourceTag/sluice-stack': STACK } }]);
    }
    // A tick reads the registry and starts one poller invocation per due source.
    const poller = await statements('PollerRole');
    expect(allows(poller, 'dynamodb:BatchGetItem', table)).toBeTruthy();
    expect(allows(poller, 'lambda:InvokeFunction', (await functionConfig('poller')).FunctionArn as string)).toBeTruthy();
    const iceberg = await statements('IcebergRole');
    expect(allows(iceberg, 's3:DeleteObject', `${bucket}/iceberg/x`)).toBeTruthy();
    expect(allows(iceberg, 's3:GetObject', `${bucket}/tables/x`)).toBeTruthy();
    for (const key of ['tables/x', 'manifests/x', '_staging/x']) {
      expect(allows(iceberg, 's3:DeleteObject', `${bucket}/${key}`), key).toBe(false);
      expect(allows(iceberg, 's3:PutObject', `${bucket}/${key}`), key).toBe(false);
    }
    expect(allows(iceberg, 'lambda:InvokeFunction', snapshotFn)).toBe(false);
    // No Glue database in the local stage, so no Glue access.
    expect(grants(iceberg, 'glue:CreateTable')).toEqual([]);
  });

  it('the alarm topic and the dead-letter queue exist as declared (the alarms and destinations: GAPS)', async () => {
    const topic = await sns.send(new GetTopicAttributesCommand({ TopicArn: outputs.AlarmTopicArn }));
    expect(topic.Attributes?.DisplayName).toBe('sluice local alarms');
    const queue = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: outputs.FailedInvocationsQueueUrl, AttributeNames: ['All'] }));
    expect(queue.Attributes).toMatchObject({ MessageRetentionPeriod: '1209600', SqsManagedSseEnabled: 'true' });
    const dashboard = JSON.parse((await cloudwatch.send(new GetDashboardCommand({ DashboardName: outputs.DashboardName }))).DashboardBody ?? '{}');
    expect(dashboard.widgets.length).toBeGreaterThan(0);
  });
});

/** What EventBridge sends for a schedule: its own `source` is not a source of the fleet. */
const scheduledEvent = {
  version: '0',
  id: '53dc4d37-cffa-4f76-80c9-8b7d4a4d2eaa',
  'detail-type': 'Scheduled Event',
  source: 'aws.events',
  account: '123456789012',
  time: '2026-12-05T10:00:00Z',
  region: 'us-east-1',
  resources: ['arn:aws:events:us-east-1:123456789012:rule/sluice-local-poller'],
  detail: {},
};

describe('the deployed functions against the deployed resources (their packaged bundles, run locally)', () => {
  let functions: PackagedFunctions;
  let config: Config;
  /** The deployed poller's environment with the emulator's endpoints: what an operator's CLI runs with. */
  let deployedEnv: Record<string, string>;
  let admin: mysql.Connection;
  const db = 'shop';

  beforeAll(async () => {
    mkdirSync(join(home, 'bundles'), { recursive: true });
    functions = await PackagedFunctions.start(lambda, { packageDir: resolve('.serverless'), workDir: join(home, 'bundles'), endpoint, region });
    // Read the output the way a user would: the poller's deployed settings, the emulator's endpoints.
    const env = {
      ...((await functionConfig('poller')).Environment?.Variables ?? {}),
      AWS_REGION: region,
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_ENDPOINT_URL: endpoint,
      SLUICE_S3_FORCE_PATH_STYLE: 'true',
    };
    deployedEnv = env;
    config = loadConfig(env);
    Object.assign(process.env, { AWS_ENDPOINT_URL: endpoint, AWS_REGION: region, AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test' });
    admin = await mysql.createConnection({ uri: mysqlAdminUrl, multipleStatements: true, timezone: 'Z', dateStrings: true });
  });
  afterAll(async () => {
    await admin?.end();
    await functions?.[Symbol.asyncDispose]();
  });

  const ok = (r: InvocationResult) => {
    expect(r.error, `${r.functionName}: ${JSON.stringify(r.error)}`).toBeUndefined();
    return r.result as Record<string, unknown>;
  };

  /** The table by the format's rule over the deployed bucket's change log, next to MariaDB's. */
  async function compare(table: string) {
    const { s3: client } = createClients(config);
    const all: ChangeEvent[] = [];
    for await (const { manifest, line } of eventLines(client, config.bucket, config.prefix, config.sourceId))
      all.push({ ...(JSON.parse(line) as ChangeEvent), raw: line, commitSeq: manifest.commit_seq });
    const history = await loadHistory(client, config.bucket, config.prefix, config.sourceId, db, table);
    return {
      output: fold(
        all.filter((e) => e.db === db && e.table === table),
        history,
      ),
      mysql: await mysqlRows(await mysqlTarget(config), db, table),
    };
  }

  it('a poller run requests the initial snapshot, the snapshot function copies the tables, the next run captures changes: the change log equals MariaDB', async () => {
    await admin.query(`CREATE DATABASE ${db}; USE ${db};
      CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40), price DECIMAL(10,2), at DATETIME(3));
      INSERT INTO items SELECT seq, CONCAT('item ', seq), seq / 4, '2026-12-01 10:00:00.125' FROM seq_1_to_1500;
      CREATE TABLE notes (body TEXT);
      INSERT INTO notes VALUES ('a'), ('a'), ('ü')`);
    const first = ok(await timed('poller', () => functions.invoke(fn('poller'), {})));
    expect(first.snapshotRequested).toBeDefined();
    expect(functions.queue).toEqual([{ functionName: fn('snapshot'), event: { snapshotId: first.snapshotRequested } }]);
    // The planner fans out to workers, which continue themselves if time runs out: all of it.
    const snapshot = await timed('snapshot', () => functions.drain());
    for (const r of snapshot) ok(r);
    expect(snapshot.some((r) => (r.result as { complete?: boolean }).complete)).toBe(true);

    await admin.query(`UPDATE ${db}.items SET price = price * 2 WHERE id <= 100; DELETE FROM ${db}.items WHERE id > 1400;
      INSERT INTO ${db}.items VALUES (2000, 'new', 1.5, NULL); DELETE FROM ${db}.notes WHERE body = 'a' LIMIT 1`);
    const second = ok(await functions.invoke(fn('poller'), {}));
    expect(second.status).toBe('captured');
    for (const table of ['items', 'notes']) {
      const { output, mysql: rows } = await compare(table);
      expect(output, table).toEqual(rows);
      expect(rows.length, table).toBe(table === 'items' ? 1401 : 2);
    }
  });

  it('the Iceberg function merges every table: its Iceberg tables equal MariaDB', async () => {
    const run = await timed('iceberg', () => functions.invoke(fn('iceberg'), {}));
    const tables = ok(run) as unknown as { table: string; status: string }[];
    expect(tables.map((t) => [t.table, t.status]).sort()).toEqual([
      [`${db}.items`, 'merged'],
      [`${db}.notes`, 'merged'],
    ]);
    const { s3: client, merges } = createClients(config);
    const store = s3ObjectStore(client, config.bucket);
    const sql = async (query: string, values?: unknown[]) => (await admin.query(query, values))[0] as Record<string, unknown>[];
    for (const table of ['items', 'notes']) {
      const key = (await merges.get(config.sourceId, { db, table }))?.metadataKey as string;
      const rows = await icebergRowsAt(store, (await loadVersion(store, key)).metadata);
      expect(rows, table).toEqual(await mysqlTextOf(sql, db, table));
    }
  });

  it('a fleet of three added with `sluice sources add`: each gets its alarms; a tick starts one poller per source, each captures its own database under its own prefix', async () => {
    const { s3: client } = createClients(config);
    // The CLI with the deployed poller's environment, as an operator runs it against the stack.
    const cli = async (...args: string[]) => {
      const out: string[] = [];
      const code = await run(args, {
        env: { ...deployedEnv, SLUICE_HOME: '/nonexistent' },
        stdout: { write: (t: string) => out.push(t) },
        stderr: { write: (t: string) => out.push(t) },
      });
      expect(code, out.join('')).toBe(0);
      return out.join('');
    };
    const sources = ['north', 'south', 'west'];
    for (const name of sources) {
      await admin.query(`CREATE DATABASE fleet_${name}; CREATE TABLE fleet_${name}.t (id INT PRIMARY KEY, v VARCHAR(20))`);
      await cli('sources', 'add', name, '--url', config.mysqlUrl as string, '--include', `fleet_${name}\\.t`, '--startup', 'latest');
    }
    // Each source has the stack's alarms, named after it, on the stack's topic.
    const alarms = async (name: string) =>
      (await cloudwatch.send(new DescribeAlarmsCommand({ AlarmNamePrefix: `${config.stateTable}-${name}-` }))).MetricAlarms ?? [];
    const north = await alarms('north');
    expect(north.map((a) => a.AlarmName).sort()).toEqual(['errors', 'lag', 'purge-risk', 'stalled'].map((what) => `${config.stateTable}-north-${what}`));
    expect(new Set(north.flatMap((a) => a.AlarmActions))).toEqual(new Set([outputs.AlarmTopicArn]));
    expect(north.find((a) => a.MetricName === 'LagSeconds')?.Dimensions).toEqual([
      { Name: 'service', Value: 'sluice' },
      { Name: 'source', Value: 'north' },
    ]);
    const tick = async () => {
      ok(await functions.invoke(fn('poller'), scheduledEvent));
      expect(functions.queue.map((q) => q.event).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)))).toEqual(
        sources.map((source) => ({ sourceId: source })),
      );
      for (const r of await functions.drain()) expect(ok(r).status).toBe('captured');
    };
    await timed('fleet tick', tick); // each source's first run: it starts at the server's end
    for (const name of sources)
      await admin.query(`INSERT INTO fleet_${name}.t VALUES (1, '${name}'), (2, '${name}!'); UPDATE fleet_${name}.t SET v = 'x' WHERE id = 1`);
    await tick();
    for (const name of sources) {
      const events: ChangeEvent[] = [];
      for await (const { line } of eventLines(client, config.bucket, `${config.prefix}${name}/`, name)) events.push(JSON.parse(line) as ChangeEvent);
      const rows = events.filter((e) => e.op !== 't').map((e) => [e.db, e.op, e.after?.v]);
      expect(rows, name).toEqual([
        [`fleet_${name}`, 'c', name],
        [`fleet_${name}`, 'c', `${name}!`],
        [`fleet_${name}`, 'u', 'x'],
      ]);
    }
    // Paused, its alarms send nothing; removed, they are gone.
    await cli('sources', 'pause', 'west');
    expect((await alarms('west')).map((a) => a.ActionsEnabled)).toEqual([false, false, false, false]);
    for (const name of sources) await cli('sources', 'remove', name);
    expect(await alarms('north')).toEqual([]);
  });
});

describe('serverless remove --stage local', () => {
  it('deletes the stack and what it created', async () => {
    // CloudFormation does not delete a bucket that holds objects: empty it first (as on AWS).
    for (;;) {
      const listed = await s3.send(new ListObjectVersionsCommand({ Bucket: 'sluice-local' }));
      const objects = [...(listed.Versions ?? []), ...(listed.DeleteMarkers ?? [])].map((v) => ({ Key: v.Key as string, VersionId: v.VersionId }));
      if (!objects.length) break;
      await s3.send(new DeleteObjectsCommand({ Bucket: 'sluice-local', Delete: { Objects: objects } }));
    }
    await timed('remove', () => sls('remove'));
    await expect(cfn.send(new DescribeStacksCommand({ StackName: STACK }))).rejects.toThrow(/does not exist/);
    for (const name of ['poller', 'snapshot', 'iceberg'] as const)
      await expect(functionConfig(name), name).rejects.toMatchObject({ name: 'ResourceNotFoundException' });
    await expect(dynamo.send(new DescribeTableCommand({ TableName: 'sluice-local-state' }))).rejects.toMatchObject({ name: 'ResourceNotFoundException' });
    await expect(s3.send(new HeadBucketCommand({ Bucket: 'sluice-local' }))).rejects.toMatchObject({ name: 'NotFound' });
    await expect(sqs.send(new GetQueueAttributesCommand({ QueueUrl: outputs.FailedInvocationsQueueUrl }))).rejects.toThrow();
    for (const id of ['PollerRole', 'SnapshotRole', 'IcebergRole'])
      await expect(iam.send(new GetRoleCommand({ RoleName: physical[id] })), id).rejects.toThrow();
  });
});

describe('serverless deploy --stage local with the optional features on (VPC and its endpoints, a secret, KMS keys)', () => {
  it('creates the VPC endpoints, puts the capturing functions in the VPC and lets them read the secret through its key', async () => {
    // The network and keys a user already has: made in the emulator by a stack of their own.
    await cfn.send(
      new CreateStackCommand({
        StackName: 'sluice-network',
        TemplateBody: JSON.stringify({
          Resources: {
            Vpc: { Type: 'AWS::EC2::VPC', Properties: { CidrBlock: '10.9.0.0/16' } },
            SubnetA: { Type: 'AWS::EC2::Subnet', Properties: { VpcId: { Ref: 'Vpc' }, CidrBlock: '10.9.1.0/24' } },
            SubnetB: { Type: 'AWS::EC2::Subnet', Properties: { VpcId: { Ref: 'Vpc' }, CidrBlock: '10.9.2.0/24' } },
            Routes: { Type: 'AWS::EC2::RouteTable', Properties: { VpcId: { Ref: 'Vpc' } } },
            Functions: { Type: 'AWS::EC2::SecurityGroup', Properties: { GroupDescription: 'the sluice functions', VpcId: { Ref: 'Vpc' } } },
            Key: { Type: 'AWS::KMS::Key', Properties: { KeyPolicy: { Version: '2012-10-17', Statement: [] } } },
            // A probe: does the emulator apply a log group's KMS key?
            ProbeLogs: { Type: 'AWS::Logs::LogGroup', Properties: { LogGroupName: 'sluice-probe', KmsKeyId: { 'Fn::GetAtt': ['Key', 'Arn'] } } },
          },
          Outputs: Object.fromEntries(
            [
              ['Vpc', { Ref: 'Vpc' }],
              ['SubnetA', { Ref: 'SubnetA' }],
              ['SubnetB', { Ref: 'SubnetB' }],
              ['Routes', { Ref: 'Routes' }],
              ['Functions', { 'Fn::GetAtt': ['Functions', 'GroupId'] }],
              ['Key', { 'Fn::GetAtt': ['Key', 'Arn'] }],
            ].map(([name, value]) => [name, { Value: value }]),
          ),
        }),
      }),
    );
    const net = Object.fromEntries(
      ((await cfn.send(new DescribeStacksCommand({ StackName: 'sluice-network' }))).Stacks?.[0]?.Outputs ?? []).map((o) => [
        o.OutputKey,
        o.OutputValue as string,
      ]),
    );
    const secret = (
      await secrets.send(
        new CreateSecretCommand({ Name: 'sluice/local', SecretString: JSON.stringify({ username: 'sluice', password: 'x', host: '127.0.0.1', port: 3306 }) }),
      )
    ).ARN as string;
    // The runbook's first-deploy parameters, with the emulator's network.
    await timed('deploy with every option', () =>
      sls('deploy', [
        `mysqlSecretArn=${secret}`,
        `mysqlSecretKmsKeyArn=${net.Key}`,
        `kmsKeyArn=${net.Key}`,
        `subnetIds=${net.SubnetA},${net.SubnetB}`,
        `securityGroupIds=${net.Functions}`,
        `vpcId=${net.Vpc}`,
        `routeTableIds=${net.Routes}`,
        'vpcEndpoints=s3,dynamodb,secretsmanager,lambda',
      ]),
    );
    expect(['CREATE_COMPLETE', 'UPDATE_COMPLETE']).toContain((await cfn.send(new DescribeStacksCommand({ StackName: STACK }))).Stacks?.[0]?.StackStatus);
    const resources = (await cfn.send(new ListStackResourcesCommand({ StackName: STACK }))).StackResourceSummaries ?? [];
    const created = new Set(resources.map((r) => r.LogicalResourceId));
    for (const id of ['S3GatewayEndpoint', 'DynamoDbGatewayEndpoint', 'SecretsManagerEndpoint', 'LambdaEndpoint', 'VpcEndpointSecurityGroup'])
      expect(created, id).toContain(id);
    const [poller, snapshot, iceberg] = await Promise.all([functionConfig('poller'), functionConfig('snapshot'), functionConfig('iceberg')]);
    for (const f of [poller, snapshot]) {
      expect(f.VpcConfig?.SubnetIds?.slice().sort()).toEqual([net.SubnetA, net.SubnetB].sort());
      expect(f.VpcConfig?.SecurityGroupIds).toEqual([net.Functions]);
    }
    // The Iceberg merge never talks to MySQL: outside the VPC.
    expect(iceberg.VpcConfig?.SubnetIds ?? []).toEqual([]);
    physical = Object.fromEntries(resources.filter((r) => r.LogicalResourceId).map((r) => [r.LogicalResourceId, r.PhysicalResourceId]));
    for (const role of ['PollerRole', 'SnapshotRole']) {
      const policy = await statements(role);
      expect(allows(policy, 'secretsmanager:GetSecretValue', secret), role).toBeTruthy();
      expect(allows(policy, 'kms:Decrypt', net.Key as string), role).toEqual({
        condition: { StringEquals: { 'kms:ViaService': `secretsmanager.${region}.amazonaws.com` } },
      });
    }
    expect(allows(await statements('IcebergRole'), 'secretsmanager:GetSecretValue', secret)).toBe(false);
    const topic = await sns.send(
      new GetTopicAttributesCommand({
        TopicArn: (await cfn.send(new DescribeStacksCommand({ StackName: STACK }))).Stacks?.[0]?.Outputs?.find((o) => o.OutputKey === 'AlarmTopicArn')
          ?.OutputValue,
      }),
    );
    expect(topic.Attributes?.KmsMasterKeyId).toBe(net.Key);
    const optionGaps: Record<string, string> = {};
    const probe = (await logs.send(new DescribeLogGroupsCommand({ logGroupNamePrefix: 'sluice-probe' }))).logGroups?.[0];
    if (probe?.kmsKeyId === net.Key) {
      const groups = (await logs.send(new DescribeLogGroupsCommand({ logGroupNamePrefix: `/aws/lambda/${STACK}-` }))).logGroups ?? [];
      expect(groups.map((g) => g.kmsKeyId)).toEqual([net.Key, net.Key, net.Key]);
    } else optionGaps['AWS::Logs::LogGroup KmsKeyId'] = OPTION_GAPS['AWS::Logs::LogGroup KmsKeyId'];
    Object.assign(detected, optionGaps);
    expect(optionGaps).toEqual(OPTION_GAPS);

    await timed('remove with every option', () => sls('remove'));
    await expect(cfn.send(new DescribeStacksCommand({ StackName: STACK }))).rejects.toThrow(/does not exist/);
  });
});
