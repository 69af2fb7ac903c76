import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

interface Template {
  Resources: Record<string, { Type: string; Properties: Record<string, unknown> }>;
}

describe('serverless package (osls 3, offline)', () => {
  const out = mkdtempSync(join(tmpdir(), 'sluice-package-'));
  let template: Template;
  beforeAll(async () => {
    await promisify(execFile)('npx', ['sls', 'package', '--stage', 'dev', '--package', out], {
      env: { ...process.env, SLS_TELEMETRY_DISABLED: '1', AWS_ACCESS_KEY_ID: 'offline', AWS_SECRET_ACCESS_KEY: 'offline' },
    });
    template = JSON.parse(readFileSync(join(out, 'cloudformation-template-update-stack.json'), 'utf8')) as Template;
  }, 120_000);
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  const ofType = (type: string) => Object.values(template.Resources).filter((r) => r.Type === type);

  it('deploys the poller on nodejs22.x/arm64, scheduled every minute, with the SDK left out of the bundle', () => {
    const poller = template.Resources.PollerLambdaFunction;
    expect(poller?.Properties).toMatchObject({ Runtime: 'nodejs22.x', Architectures: ['arm64'], Timeout: 70 });
    expect(ofType('AWS::Events::Rule')[0]?.Properties.ScheduleExpression).toBe('rate(1 minute)');
    const zip = readFileSync(join(out, 'poller.zip'));
    expect(zip.length).toBeLessThan(4 * 1024 * 1024);
    expect(zip.includes(Buffer.from('node_modules/@aws-sdk/client-s3'))).toBe(false);
  });

  it('deploys the snapshot function with the 15-minute timeout and lets only sluice invoke it', () => {
    expect(template.Resources.SnapshotLambdaFunction?.Properties).toMatchObject({ Runtime: 'nodejs22.x', Timeout: 900 });
    const env = (template.Resources.PollerLambdaFunction?.Properties.Environment as { Variables: Record<string, unknown> } | undefined)?.Variables ?? {};
    expect(env.SLUICE_SNAPSHOT_FUNCTION).toBe('sluice-dev-snapshot');
    expect(env.SLUICE_STARTUP).toBe('initial');
    const invoke = JSON.stringify(template.Resources.IamRoleLambdaExecution?.Properties.Policies);
    expect(invoke).toContain('lambda:InvokeFunction');
    expect(invoke).toContain('function:sluice-dev-snapshot');
  });

  it('creates an on-demand state table and a private, encrypted bucket that expires abandoned staging', () => {
    expect(template.Resources.StateTable?.Properties.BillingMode).toBe('PAY_PER_REQUEST');
    const bucket = template.Resources.OutputBucket?.Properties;
    expect(bucket?.PublicAccessBlockConfiguration).toEqual({
      BlockPublicAcls: true,
      BlockPublicPolicy: true,
      IgnorePublicAcls: true,
      RestrictPublicBuckets: true,
    });
    expect(JSON.stringify(bucket?.BucketEncryption)).toContain('AES256');
    expect(JSON.stringify(bucket?.LifecycleConfiguration)).toContain('_staging/');
  });

  it('grants no wildcard actions and no wildcard resources on data', () => {
    const policies = ofType('AWS::IAM::Role').flatMap(
      (r) => (r.Properties.Policies as { PolicyDocument: { Statement: { Action: string[]; Resource: unknown }[] } }[]) ?? [],
    );
    const statements = policies.flatMap((p) => p.PolicyDocument.Statement);
    expect(statements.length).toBeGreaterThan(0);
    for (const statement of statements) {
      expect(statement.Action.some((a) => a === '*' || a.endsWith(':*'))).toBe(false);
      const resource = JSON.stringify(statement.Resource);
      if (statement.Action.some((a) => a.startsWith('s3:') || a.startsWith('dynamodb:'))) expect(resource).not.toBe('"*"');
    }
  });
});
