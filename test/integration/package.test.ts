import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

interface Resource {
  Type: string;
  Properties: Record<string, unknown>;
  DeletionPolicy?: string;
}
interface Template {
  Resources: Record<string, Resource>;
  Conditions: Record<string, unknown>;
}
interface Statement {
  Effect: string;
  Action: string[];
  Resource: unknown;
}

const out = mkdtempSync(join(tmpdir(), 'sluice-package-'));

async function packageStage(stage: string, params: string[] = []): Promise<Template> {
  const dir = join(out, stage);
  await promisify(execFile)('npx', ['sls', 'package', '--stage', stage, '--package', dir, ...params.map((p) => `--param=${p}`)], {
    env: { ...process.env, SLS_TELEMETRY_DISABLED: '1', AWS_ACCESS_KEY_ID: 'offline', AWS_SECRET_ACCESS_KEY: 'offline' },
  });
  return JSON.parse(readFileSync(join(dir, 'cloudformation-template-update-stack.json'), 'utf8')) as Template;
}

/** The inline policy statements of a role, with CloudFormation's Fn::If branches for the default params resolved away. */
function statements(template: Template, role: string): Statement[] {
  const policies = template.Resources[role]?.Properties.Policies as { PolicyDocument: { Statement: unknown[] } }[];
  return policies.flatMap((p) => p.PolicyDocument.Statement).filter((s): s is Statement => typeof s === 'object' && s !== null && 'Effect' in s);
}

describe('serverless package (osls 3, offline)', () => {
  let dev: Template;
  let prod: Template;
  beforeAll(async () => {
    // One after the other: osls packages through a shared .esbuild folder.
    dev = await packageStage('dev');
    prod = await packageStage('prod', [
      'mysqlSecretArn=arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/sluice-AbCdEf',
      'subnetIds=subnet-1,subnet-2',
      'securityGroupIds=sg-1',
    ]);
  }, 180_000);
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  const ofType = (template: Template, type: string) => Object.values(template.Resources).filter((r) => r.Type === type);

  it('deploys the poller on nodejs22.x/arm64 every minute and the snapshot function, with the SDK left out of the bundles', () => {
    expect(dev.Resources.PollerLambdaFunction?.Properties).toMatchObject({ Runtime: 'nodejs22.x', Architectures: ['arm64'], Timeout: 70 });
    expect(dev.Resources.SnapshotLambdaFunction?.Properties).toMatchObject({ Runtime: 'nodejs22.x', Timeout: 900 });
    expect(ofType(dev, 'AWS::Events::Rule')[0]?.Properties.ScheduleExpression).toBe('rate(1 minute)');
    for (const fn of ['poller', 'snapshot']) {
      const zip = readFileSync(join(out, 'dev', `${fn}.zip`));
      expect(zip.length).toBeLessThan(4 * 1024 * 1024);
      expect(zip.includes(Buffer.from('node_modules/@aws-sdk/client-s3'))).toBe(false);
    }
    const env = (dev.Resources.PollerLambdaFunction?.Properties.Environment as { Variables: Record<string, unknown> } | undefined)?.Variables ?? {};
    expect(env).toMatchObject({ SLUICE_SNAPSHOT_FUNCTION: 'sluice-dev-snapshot', SLUICE_STARTUP: 'initial', SLUICE_SAFETY_MARGIN_SECONDS: '15' });
    expect(env.SLUICE_BUCKET).toEqual({ Ref: 'OutputBucket' });
  });

  it('sends failed async invocations to a queue; scheduled runs are not retried', () => {
    const configs = ofType(dev, 'AWS::Lambda::EventInvokeConfig').map((r) => r.Properties);
    expect(configs).toHaveLength(2);
    for (const config of configs) expect(JSON.stringify(config.DestinationConfig)).toContain('FailedInvocations');
    expect(configs.map((c) => c.MaximumRetryAttempts).sort()).toEqual([0, 2]);
  });

  it('creates an on-demand, recoverable state table, protected from deletion outside dev', () => {
    expect(dev.Resources.StateTable?.Properties).toMatchObject({
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
    });
    expect(dev.Conditions.Protect).toEqual({ 'Fn::Equals': ['false', 'true'] });
    expect(prod.Conditions.Protect).toEqual({ 'Fn::Equals': ['true', 'true'] });
    expect(prod.Resources.StateTable?.DeletionPolicy).toBe('Retain');
    expect(prod.Resources.OutputBucket?.DeletionPolicy).toBe('Retain');
  });

  it('creates a private, encrypted, TLS-only bucket that expires abandoned staging', () => {
    const bucket = dev.Resources.OutputBucket?.Properties;
    expect(bucket?.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    expect(JSON.stringify(bucket?.BucketEncryption)).toContain('AES256');
    expect(JSON.stringify(bucket?.LifecycleConfiguration)).toContain('_staging/');
    const policy = JSON.stringify(dev.Resources.OutputBucketPolicy?.Properties.PolicyDocument);
    expect(policy).toContain('"Effect":"Deny"');
    expect(policy).toContain('"aws:SecureTransport":"false"');
  });

  it('gives each function its own least-privilege role: no wildcard actions, no wildcard resources', () => {
    expect(dev.Resources.PollerLambdaFunction?.Properties.Role).toEqual({ 'Fn::GetAtt': ['PollerRole', 'Arn'] });
    expect(dev.Resources.SnapshotLambdaFunction?.Properties.Role).toEqual({ 'Fn::GetAtt': ['SnapshotRole', 'Arn'] });
    expect(dev.Resources.IamRoleLambdaExecution).toBeUndefined();
    for (const role of ['PollerRole', 'SnapshotRole']) {
      const list = statements(dev, role);
      expect(list.length).toBeGreaterThan(4);
      for (const statement of list) {
        expect(statement.Action.some((a) => a === '*' || a.endsWith(':*'))).toBe(false);
        expect(JSON.stringify(statement.Resource)).not.toBe('"*"');
      }
      const actions = list.flatMap((s) => s.Action);
      expect(actions).toEqual(expect.arrayContaining(['dynamodb:UpdateItem', 's3:PutObject', 'lambda:InvokeFunction']));
      expect(actions).not.toContain('dynamodb:DeleteItem');
      expect(actions).not.toContain('s3:DeleteBucket');
    }
    // The secret is readable only when configured, and then only that secret.
    expect(JSON.stringify(dev.Resources.PollerRole)).toContain('HasSecret');
    expect(prod.Conditions.HasSecret).toEqual({
      'Fn::Not': [{ 'Fn::Equals': ['arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/sluice-AbCdEf', ''] }],
    });
  });

  it('puts the functions in the given VPC, and in none by default', () => {
    expect(dev.Conditions.HasVpc).toEqual({ 'Fn::Not': [{ 'Fn::Equals': ['', ''] }] });
    const vpc = JSON.stringify(prod.Resources.PollerLambdaFunction?.Properties.VpcConfig);
    expect(vpc).toContain('subnet-1,subnet-2');
    expect(vpc).toContain('sg-1');
    expect(prod.Conditions.HasVpc).toEqual({ 'Fn::Not': [{ 'Fn::Equals': ['subnet-1,subnet-2', ''] }] });
  });

  it('alarms on poller errors, lag, purge risk and failed invocations, through one topic', () => {
    const alarms = ofType(dev, 'AWS::CloudWatch::Alarm').map((a) => a.Properties);
    expect(alarms.map((a) => a.MetricName).sort()).toEqual(['ApproximateNumberOfMessagesVisible', 'Errors', 'LagSeconds', 'TimeToPurgeSeconds']);
    for (const alarm of alarms) expect(alarm.AlarmActions).toEqual([{ Ref: 'AlarmTopic' }]);
    const lag = alarms.find((a) => a.MetricName === 'LagSeconds');
    expect(lag).toMatchObject({ Namespace: 'sluice', Threshold: 900, TreatMissingData: 'breaching' });
    expect(alarms.find((a) => a.MetricName === 'TimeToPurgeSeconds')).toMatchObject({ Threshold: 21600, ComparisonOperator: 'LessThanThreshold' });
  });
});
