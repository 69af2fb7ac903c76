import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DeleteObjectsCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crashAt } from '../../lib/commit/faults.ts';
import { loadConfig } from '../../lib/config/config.ts';
import { tlsOptions } from '../../lib/source/mysql/tls.ts';
import { emittedMetricNames, graphedMetricNames } from '../support/emitted-metrics.ts';
import { inProcessWorkers, merge } from '../support/iceberg-merge.ts';
import { testSource } from '../support/source.ts';

interface Resource {
  Type: string;
  Properties: Record<string, unknown>;
  DeletionPolicy?: string;
  Condition?: string;
}
interface Template {
  Resources: Record<string, Resource>;
  Conditions: Record<string, unknown>;
  Parameters: Record<string, { Default: string }>;
}
interface Statement {
  Sid?: string;
  Effect: string;
  Action: string[];
  Resource?: unknown;
  NotResource?: unknown;
  Principal?: unknown;
  Condition?: Record<string, Record<string, string | string[]>>;
}

const SECRET = 'arn:aws:secretsmanager:us-east-1:123456789012:secret:prod/sluice-AbCdEf';
const SECRET_KEY = 'arn:aws:kms:us-east-1:123456789012:key/11111111-2222-3333-4444-555555555555';
const KEY = 'arn:aws:kms:us-east-1:123456789012:key/66666666-7777-8888-9999-000000000000';

const out = mkdtempSync(join(tmpdir(), 'sluice-package-'));

async function packageStage(stage: string, params: string[] = [], name = stage): Promise<Template> {
  const dir = join(out, name);
  await promisify(execFile)('npx', ['sls', 'package', '--stage', stage, '--package', dir, ...params.map((p) => `--param=${p}`)], {
    env: { ...process.env, SLS_TELEMETRY_DISABLED: '1', AWS_ACCESS_KEY_ID: 'offline', AWS_SECRET_ACCESS_KEY: 'offline' },
  });
  return JSON.parse(readFileSync(join(dir, 'cloudformation-template-update-stack.json'), 'utf8')) as Template;
}

/**
 * A value with CloudFormation's condition functions worked out, as a deployment would with the
 * stack parameters' defaults (osls puts the serverless params there); a Ref or Sub of stack
 * parameters only is filled in, other Refs, GetAtt and Sub stay as they are.
 */
function resolve(template: Template, value: unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => resolve(template, v));
  if (typeof value !== 'object' || value === null) return value;
  const entries = Object.entries(value);
  const [fn, args] = entries[0] ?? [];
  const list = args as unknown[];
  if (entries.length === 1)
    switch (fn) {
      case 'Condition':
        return holds(template, args as string);
      case 'Fn::Equals':
        return JSON.stringify(resolve(template, list[0])) === JSON.stringify(resolve(template, list[1]));
      case 'Fn::Not':
        return resolve(template, list[0]) !== true;
      case 'Fn::And':
        return list.every((c) => resolve(template, c) === true);
      case 'Fn::Or':
        return list.some((c) => resolve(template, c) === true);
      case 'Fn::Join':
        return (resolve(template, list[1]) as string[]).join(list[0] as string);
      case 'Fn::Split':
        return String(resolve(template, list[1])).split(list[0] as string);
      case 'Fn::If':
        return resolve(template, holds(template, list[0] as string) ? list[1] : list[2]);
      case 'Ref':
        return template.Parameters[args as string]?.Default ?? value;
      case 'Fn::Sub': {
        const filled = typeof args === 'string' ? args.replace(/\$\{(\w+)\}/g, (ref, name) => template.Parameters[name]?.Default ?? ref) : undefined;
        return filled === undefined || filled.includes('${') ? value : filled;
      }
    }
  return Object.fromEntries(entries.map(([k, v]) => [k, resolve(template, v)]));
}

const holds = (template: Template, condition: string) => {
  const definition = template.Conditions[condition];
  if (definition === undefined) throw new Error(`no condition ${condition}`);
  return resolve(template, definition) === true;
};

/** The Iceberg function's environment as deployed, conditions worked out. */
const icebergEnvironment = (template: Template) =>
  resolve(template, (template.Resources.IcebergLambdaFunction?.Properties.Environment as { Variables?: unknown } | undefined)?.Variables ?? {}) as Record<
    string,
    string
  >;

/** The resources a deployment would create: those without a condition, or whose condition holds. */
const deployed = (template: Template) =>
  Object.fromEntries(Object.entries(template.Resources).filter(([, r]) => r.Condition === undefined || holds(template, r.Condition)));

/** The inline policy statements of a role as deployed: Fn::If worked out, AWS::NoValue dropped. */
function statements(template: Template, role: string): Statement[] {
  const policies = resolve(template, template.Resources[role]?.Properties.Policies) as { PolicyDocument: { Statement: unknown[] } }[];
  return policies.flatMap((p) => p.PolicyDocument.Statement).filter((s): s is Statement => typeof s === 'object' && s !== null && 'Effect' in s);
}

/** One request as IAM sees it: an action on a resource, with the condition keys it carries. */
interface Access {
  action: string;
  resource: string;
  context?: Record<string, string | string[]>;
}

const BUCKET_ARN = 'arn:aws:s3:::bucket';
const TABLE_ARN = 'arn:aws:dynamodb:us-east-1:123456789012:table/state';
const TABLE_BUCKET_ARN = 'arn:aws:s3tables:us-east-1:123456789012:bucket/sluice-lake';

/** The ARN patterns a statement's Resource (or NotResource) stands for, the bucket's and table's ARNs filled in. */
function arns(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(arns);
  if (typeof value === 'string') return [value];
  const v = value as { 'Fn::Sub'?: string; 'Fn::GetAtt'?: [string, string] };
  if (typeof v['Fn::Sub'] === 'string')
    return [v['Fn::Sub'].replace(/\$\{OutputBucket\.Arn\}/, BUCKET_ARN).replace(/\$\{S3TablesBucket\.TableBucketARN\}/, TABLE_BUCKET_ARN)];
  if (v['Fn::GetAtt']?.[0] === 'OutputBucket') return [BUCKET_ARN];
  if (v['Fn::GetAtt']?.[0] === 'StateTable') return [TABLE_ARN];
  if (v['Fn::GetAtt']?.[0] === 'S3TablesBucket') return [TABLE_BUCKET_ARN];
  return [JSON.stringify(value)];
}

const glob = (pattern: string) =>
  new RegExp(
    `^${pattern
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replaceAll('*', '.*')
      .replaceAll('?', '.')}$`,
  );

/**
 * IAM's matching for the parts these policies use: exact actions, wildcard resources, StringLike
 * conditions, ForAllValues:StringLike (true for a request without the key, as in IAM) and Null.
 */
function matches(statement: Statement, access: Access): boolean {
  if (!statement.Action.includes(access.action)) return false;
  const resourceMatch = (v: unknown) => arns(v).some((a) => glob(a).test(access.resource));
  if (statement.Resource !== undefined && !resourceMatch(statement.Resource)) return false;
  if (statement.NotResource !== undefined && resourceMatch(statement.NotResource)) return false;
  for (const [operator, keys] of Object.entries(statement.Condition ?? {}))
    for (const [key, values] of Object.entries(keys)) {
      const actual = access.context?.[key];
      const like = (value: string) => [values].flat().some((v) => glob(v).test(value));
      if (operator === 'StringLike') {
        if (typeof actual !== 'string' || !like(actual)) return false;
      } else if (operator === 'ForAllValues:StringLike') {
        if (![actual ?? []].flat().every(like)) return false;
      } else if (operator === 'Null') {
        if ((actual === undefined) !== (values === 'true')) return false;
      } else throw new Error(`condition operator ${operator} not modelled`);
    }
  return true;
}

const bucketPolicy = (template: Template) =>
  (template.Resources.OutputBucketPolicy?.Properties.PolicyDocument as { Statement: Statement[] } | undefined)?.Statement ?? [];

/** Whether a role may make a request: some statement of its own allows it and the bucket policy does not deny it to that role. */
function allowed(template: Template, role: string, access: Access): boolean {
  const denies = bucketPolicy(template).filter((s) => s.Effect === 'Deny' && JSON.stringify(s.Principal).includes(`"${role}"`));
  return statements(template, role).some((s) => s.Effect === 'Allow' && matches(s, access)) && !denies.some((s) => matches(s, access));
}

/**
 * Records every S3 and DynamoDB request a client makes, as the IAM accesses it needs (keys relative
 * to `prefix`; item keys with the templates' source id `main` for `sourceId`).
 */
function recordAccesses(client: S3Client | DynamoDBClient, prefix: string, into: () => Access[], sourceId = 'main') {
  const object = (key: string) => `${BUCKET_ARN}/${key.startsWith(prefix) ? key.slice(prefix.length) : `OUTSIDE-PREFIX/${key}`}`;
  const item = (pk: string) => pk.replace(new RegExp(`^([a-z]+)#${sourceId}(?=#|$)`), '$1#main');
  (client as S3Client).middlewareStack.add(
    (next, context) => (args) => {
      const input = args.input as Record<string, unknown> & { Key?: string; Prefix?: string; CopySource?: string; Delete?: { Objects: { Key: string }[] } };
      const command = (context.commandName ?? '').replace(/Command$/, '');
      const list = into();
      if (['GetItem', 'PutItem', 'UpdateItem', 'DeleteItem', 'Query', 'Scan'].includes(command)) {
        const { Key, Item } = args.input as { Key?: { pk?: { S?: string } }; Item?: { pk?: { S?: string } } };
        const pk = (Key ?? Item)?.pk?.S;
        list.push({ action: `dynamodb:${command}`, resource: TABLE_ARN, context: pk === undefined ? {} : { 'dynamodb:LeadingKeys': [item(pk)] } });
      } else if (command === 'PutObject' || command === 'CreateMultipartUpload' || command === 'UploadPart' || command === 'CompleteMultipartUpload')
        list.push({ action: 's3:PutObject', resource: object(input.Key ?? '') });
      else if (command === 'GetObject' || command === 'HeadObject') list.push({ action: 's3:GetObject', resource: object(input.Key ?? '') });
      else if (command === 'AbortMultipartUpload') list.push({ action: 's3:AbortMultipartUpload', resource: object(input.Key ?? '') });
      else if (command === 'DeleteObject') list.push({ action: 's3:DeleteObject', resource: object(input.Key ?? '') });
      else if (command === 'DeleteObjects') for (const { Key } of input.Delete?.Objects ?? []) list.push({ action: 's3:DeleteObject', resource: object(Key) });
      else if (command === 'CopyObject') {
        const from = decodeURIComponent((input.CopySource ?? '').slice((input.CopySource ?? '').indexOf('/') + 1));
        list.push({ action: 's3:GetObject', resource: object(from) }, { action: 's3:PutObject', resource: object(input.Key ?? '') });
      } else if (command === 'ListObjectsV2') {
        const p = input.Prefix ?? '';
        list.push({
          action: 's3:ListBucket',
          resource: BUCKET_ARN,
          context: { 's3:prefix': p.startsWith(prefix) ? p.slice(prefix.length) : `OUTSIDE-PREFIX/${p}` },
        });
      } else list.push({ action: `unmodelled:${command}`, resource: '*' });
      return next(args);
    },
    { step: 'initialize', name: 'iamAccessRecorder' },
  );
}

describe('serverless package (osls 3, offline)', () => {
  let dev: Template;
  let prod: Template;
  /** prod with the optional parameters set: KMS keys, every VPC endpoint, versioning off, TLS `required`. */
  let optIns: Template;
  /** prod with the Iceberg merge publishing to an S3 Tables table bucket. */
  let s3Tables: Template;
  /** prod with the Iceberg merge publishing to a REST catalog (the Glue Data Catalog's endpoint). */
  let rest: Template;
  /** prod with Glue's table optimizers maintaining the Iceberg tables (icebergMaintenance: glue). */
  let glueOptimizers: Template;
  beforeAll(async () => {
    // One after the other: osls packages through a shared .esbuild folder.
    dev = await packageStage('dev');
    prod = await packageStage('prod', [
      'prefix=cdc/',
      `mysqlSecretArn=${SECRET}`,
      'subnetIds=subnet-1,subnet-2',
      'securityGroupIds=sg-1',
      'vpcId=vpc-1',
      'routeTableIds=rtb-1,rtb-2',
      'vpcEndpoints=dynamodb,lambda',
      'icebergEnabled=true',
    ]);
    optIns = await packageStage(
      'prod',
      [
        'versioning=false',
        'noncurrentVersionDays=30',
        'mysqlTls=required',
        `mysqlSecretArn=${SECRET}`,
        `mysqlSecretKmsKeyArn=${SECRET_KEY}`,
        `kmsKeyArn=${KEY}`,
        'subnetIds=subnet-3',
        'securityGroupIds=sg-3,sg-4',
        'vpcId=vpc-2',
        'routeTableIds=rtb-3',
        'vpcEndpoints=s3,dynamodb,secretsmanager,lambda',
      ],
      'prod-opt-ins',
    );
    s3Tables = await packageStage('prod', ['prefix=cdc/', 'icebergEnabled=true', 's3TablesBucket=sluice-lake', 'icebergRestNamespace=sluice'], 'prod-s3tables');
    glueOptimizers = await packageStage('prod', ['prefix=cdc/', 'icebergEnabled=true', 'icebergMaintenance=glue'], 'prod-glue-optimizers');
    rest = await packageStage(
      'prod',
      [
        'icebergEnabled=true',
        'icebergCatalog=rest',
        'icebergRestUri=https://glue.us-east-1.amazonaws.com/iceberg',
        'icebergRestWarehouse=123456789012',
        'icebergRestSigningName=glue',
        'icebergRestNamespace=lake.sluice',
      ],
      'prod-rest',
    );
  }, 300_000);
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  const ofType = (template: Template, type: string) => Object.values(template.Resources).filter((r) => r.Type === type);

  it('deploys the poller on nodejs22.x/arm64 every minute and the snapshot function, with the SDK left out of the bundles', () => {
    expect(dev.Resources.PollerLambdaFunction?.Properties).toMatchObject({ Runtime: 'nodejs22.x', Architectures: ['arm64'], Timeout: 70 });
    expect(dev.Resources.SnapshotLambdaFunction?.Properties).toMatchObject({ Runtime: 'nodejs22.x', Timeout: 900 });
    expect(ofType(dev, 'AWS::Events::Rule')[0]?.Properties.ScheduleExpression).toBe('rate(1 minute)');
    for (const fn of ['poller', 'snapshot']) {
      const zip = readFileSync(join(out, 'dev', `${fn}.zip`));
      expect(zip.length).toBeLessThan(3 * 1024 * 1024);
      expect(zip.includes(Buffer.from('node_modules/@aws-sdk/client-s3'))).toBe(false);
    }
    // DDL is read by sluice's own column grammar: the poller ships no parser package (its WASM was 1.3 MB).
    const poller = readFileSync(join(out, 'dev', 'poller.zip'));
    expect(poller.includes(Buffer.from('node_modules/@guanmingchiu/sqlparser-ts'))).toBe(false);
    // The binlog reader tells zongji's events apart by class name: minified, the bundle keeps names
    // (esbuild keepNames), or the deployed poller reads the binlog and captures no row.
    const code = execFileSync('unzip', ['-p', join(out, 'dev', 'poller.zip'), 'functions/poller.mjs'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    for (const event of ['WriteRows', 'UpdateRows', 'DeleteRows', 'MariadbGtid', 'MariadbGtidList', 'Xid'])
      expect(code, event).toMatch(new RegExp(`static\\{\\w+\\(this,"${event}"\\)\\}`));
    const env = (dev.Resources.PollerLambdaFunction?.Properties.Environment as { Variables: Record<string, unknown> } | undefined)?.Variables ?? {};
    expect(env).toMatchObject({
      SLUICE_SNAPSHOT_FUNCTION: 'sluice-dev-snapshot',
      SLUICE_STARTUP: 'initial',
      SLUICE_SAFETY_MARGIN_SECONDS: '15',
      SLUICE_ON_HISTORY_CHANGE: 'follow',
    });
    expect(env.SLUICE_BUCKET).toEqual({ Ref: 'OutputBucket' });
  });

  it('sends failed async invocations to a queue; scheduled runs are not retried', () => {
    const configs = ofType(dev, 'AWS::Lambda::EventInvokeConfig').map((r) => r.Properties);
    expect(configs).toHaveLength(3);
    for (const config of configs) expect(JSON.stringify(config.DestinationConfig)).toContain('FailedInvocations');
    expect(configs.map((c) => c.MaximumRetryAttempts).sort()).toEqual([0, 0, 2]);
  });

  it('creates an on-demand, recoverable state table, protected from deletion outside dev', () => {
    expect(dev.Resources.StateTable?.Properties).toMatchObject({
      BillingMode: 'PAY_PER_REQUEST',
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
    });
    expect(resolve(dev, dev.Resources.StateTable?.Properties.DeletionProtectionEnabled)).toBe(false);
    expect(resolve(prod, prod.Resources.StateTable?.Properties.DeletionProtectionEnabled)).toBe(true);
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

  it('versions the bucket outside dev (a parameter turns it off) and expires old versions and staging leftovers', () => {
    const bucket = (t: Template) => resolve(t, t.Resources.OutputBucket?.Properties) as Record<string, unknown>;
    expect(bucket(prod).VersioningConfiguration).toEqual({ Status: 'Enabled' });
    expect(bucket(dev).VersioningConfiguration).toEqual({ Status: 'Suspended' });
    expect(bucket(optIns).VersioningConfiguration).toEqual({ Status: 'Suspended' });
    const rules = (t: Template) => (bucket(t).LifecycleConfiguration as { Rules: Record<string, unknown>[] }).Rules;
    expect(rules(prod)).toEqual([
      {
        Id: 'expire-abandoned-staging',
        Status: 'Enabled',
        Prefix: 'cdc/_staging/',
        ExpirationInDays: 1,
        NoncurrentVersionExpiration: { NoncurrentDays: 1 },
        AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 },
      },
      // The whole bucket: an overwritten or deleted final object can be restored for 90 days.
      { Id: 'expire-old-versions', Status: 'Enabled', NoncurrentVersionExpiration: { NoncurrentDays: 90 }, ExpiredObjectDeleteMarker: true },
    ]);
    expect(rules(optIns)[1]?.NoncurrentVersionExpiration).toEqual({ NoncurrentDays: '30' });
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
    // The stack's secret is readable only when configured, and then only that secret; registered
    // sources' secrets only when tagged for this stack.
    const fleetSecrets = {
      Sid: 'RegisteredSourceSecrets',
      Effect: 'Allow',
      Action: ['secretsmanager:GetSecretValue'],
      // biome-ignore lint/suspicious/noTemplateCurlyInString: CloudFormation's Fn::Sub placeholders
      Resource: { 'Fn::Sub': 'arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:*' },
      Condition: { StringEquals: { 'secretsmanager:ResourceTag/sluice-stack': expect.stringMatching(/^sluice-(dev|prod)$/) } },
    };
    expect(JSON.stringify(dev.Resources.PollerRole)).toContain('HasSecret');
    expect(statements(dev, 'PollerRole').filter((s) => s.Action.includes('secretsmanager:GetSecretValue'))).toEqual([fleetSecrets]);
    expect(statements(prod, 'PollerRole').filter((s) => s.Action.includes('secretsmanager:GetSecretValue'))).toEqual([
      { Effect: 'Allow', Action: ['secretsmanager:GetSecretValue'], Resource: SECRET },
      fleetSecrets,
    ]);
  });

  it('lets the functions delete only under _staging/; tables/, manifests/ and schema/ are write-once for them', () => {
    for (const [template, prefix] of [
      [dev, ''],
      [prod, 'cdc/'],
    ] as const) {
      const object = (key: string) => `${BUCKET_ARN}/${prefix}${key}`;
      for (const role of ['PollerRole', 'SnapshotRole']) {
        const list = statements(template, role);
        const staging = list.find((s) => s.Sid === 'StagingObjects');
        expect(staging?.Action).toContain('s3:DeleteObject');
        // The stack's own source's keys, and a registered source's under <prefix><id>/.
        expect(arns(staging?.Resource)).toEqual([object('_staging/*'), object('*/_staging/*')]);
        // Whatever statement grants a delete, it is for staging keys only.
        for (const s of list.filter((s) => s.Action.some((a) => /^s3:Delete/.test(a))))
          expect(arns(s.Resource)).toEqual([object('_staging/*'), object('*/_staging/*')]);
        const final = list.find((s) => s.Sid === 'FinalObjectsWriteOnce');
        expect(final?.Action.sort()).toEqual(['s3:GetObject', 's3:PutObject']);
        expect(arns(final?.Resource)).toEqual(['', '*/'].flatMap((source) => ['tables/*', 'manifests/*', 'schema/*'].map((k) => object(`${source}${k}`))));

        const may = (action: string, key: string) => allowed(template, role, { action, resource: object(key) });
        expect(may('s3:DeleteObject', '_staging/main/binlog/run/db/t.jsonl.gz')).toBe(true);
        expect(may('s3:DeleteObject', 'orders/_staging/orders/binlog/run/db/t.jsonl.gz')).toBe(true);
        expect(may('s3:PutObject', '_staging/main/snapshot/s1/t-0/w/00000001/manifest.json')).toBe(true);
        for (const key of [
          'tables/db/t/main-000000000001.jsonl.gz',
          'manifests/main/000000000001.json',
          'schema/db/t.json',
          'orders/tables/db/t/orders-000000000001.jsonl.gz',
          'orders/manifests/orders/000000000001.json',
        ]) {
          expect(may('s3:PutObject', key)).toBe(true);
          expect(may('s3:GetObject', key)).toBe(true);
          expect(may('s3:DeleteObject', key)).toBe(false);
          expect(may('s3:DeleteObjectVersion', key)).toBe(false);
        }
        // iceberg/ belongs to the (future) merge function's own role; nothing outside the prefix is reachable.
        for (const key of ['iceberg/db/t/metadata/v1.metadata.json', 'orders/iceberg/db/t/metadata/v1.metadata.json', '../other/x', 'other/x']) {
          expect(may('s3:PutObject', key)).toBe(false);
          expect(may('s3:DeleteObject', key)).toBe(false);
        }
        expect(may('s3:DeleteObjectVersion', '_staging/main/binlog/x')).toBe(false);
        const list_ = (p: string) => allowed(template, role, { action: 's3:ListBucket', resource: BUCKET_ARN, context: { 's3:prefix': `${prefix}${p}` } });
        expect(list_('_staging/main/binlog/')).toBe(true);
        expect(list_('orders/_staging/orders/binlog/')).toBe(true);
        expect(list_('tables/')).toBe(false);
        expect(allowed(template, role, { action: 's3:ListBucket', resource: BUCKET_ARN })).toBe(false);
      }
      // The bucket policy denies the same deletes to both roles, whatever policy is attached to them later.
      const denies = bucketPolicy(template).filter((s) => s.Effect === 'Deny');
      const broad = (action: string, key: string) =>
        denies.some((s) => JSON.stringify(s.Principal).includes('PollerRole') && matches(s, { action, resource: object(key) }));
      expect(JSON.stringify(denies.find((s) => s.Sid === 'FunctionsDeleteOnlyStaging')?.Principal)).toContain('SnapshotRole');
      expect(broad('s3:DeleteObject', 'tables/db/t/x.jsonl.gz')).toBe(true);
      expect(broad('s3:DeleteObject', 'manifests/main/000000000001.json')).toBe(true);
      expect(broad('s3:DeleteObject', '_staging/main/binlog/x')).toBe(false);
      expect(broad('s3:DeleteObject', 'orders/_staging/orders/binlog/x')).toBe(false);
      expect(broad('s3:DeleteObject', 'orders/tables/db/t/x.jsonl.gz')).toBe(true);
      expect(broad('s3:DeleteObjectVersion', 'tables/db/t/x.jsonl.gz')).toBe(true);
      expect(denies.some((s) => matches(s, { action: 's3:PutBucketVersioning', resource: BUCKET_ARN }))).toBe(true);
    }
  });

  it('allows every S3 and DynamoDB request the functions make: commits, a crash after staging, roll-forwards, a snapshot', async () => {
    await using source = await testSource('iam');
    const poller: Access[] = [];
    const snapshot: Access[] = [];
    let current = poller;
    recordAccesses(source.clients.s3, source.config.prefix, () => current);
    recordAccesses(source.clients.dynamo, source.config.prefix, () => current, source.config.sourceId);
    await source.sql('CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))');
    await source.capture();
    await source.sql("INSERT INTO t VALUES (1, 'a'), (2, 'b')");
    await source.capture();
    // Staged but never committed: the next run deletes the garbage.
    await source.sql("INSERT INTO t VALUES (3, 'c')");
    await expect(source.capture({ faults: crashAt('after-staging') })).rejects.toThrow(/injected crash/);
    // Committed and copied; the staging copies then vanish (a crash right after their delete), so
    // the roll-forward finds the final objects by HeadObject instead.
    await source.sql("UPDATE t SET v = 'd' WHERE id = 1");
    await expect(source.capture({ faults: crashAt('before-clear') })).rejects.toThrow(/injected crash/);
    current = [];
    const staged = await source.stagingKeys();
    expect(staged.length).toBeGreaterThan(0);
    await source.clients.s3.send(new DeleteObjectsCommand({ Bucket: source.config.bucket, Delete: { Objects: staged.map((Key) => ({ Key })) } }));
    current = poller;
    await source.capture();
    current = snapshot;
    const { rows } = await source.snapshot({ tables: [`${source.db}.t`] });
    expect(rows).toBe(3);

    const kinds = (accesses: Access[]) =>
      new Set(accesses.map((a) => (a.resource.startsWith(BUCKET_ARN) ? `${a.action} ${a.resource.slice(BUCKET_ARN.length + 1).split('/')[0]}` : a.action)));
    // The scenario did exercise what the policy is about.
    expect(kinds(poller)).toEqual(
      new Set([
        's3:PutObject _staging',
        's3:GetObject _staging',
        's3:DeleteObject _staging',
        's3:ListBucket ',
        's3:PutObject tables',
        's3:PutObject manifests',
        's3:GetObject tables',
        's3:GetObject manifests',
        's3:PutObject schema',
        's3:GetObject schema',
        'dynamodb:UpdateItem',
      ]),
    );
    expect(kinds(snapshot)).toContain('s3:PutObject manifests');
    expect(poller.filter((a) => !allowed(dev, 'PollerRole', a))).toEqual([]);
    expect(snapshot.filter((a) => !allowed(dev, 'SnapshotRole', a))).toEqual([]);
  });

  it('ships the Iceberg merge with DuckDB on x86_64, scheduled but disabled until a parameter turns it on, with its Glue database', () => {
    expect(dev.Resources.IcebergLambdaFunction?.Properties).toMatchObject({ Architectures: ['x86_64'], Timeout: 900, MemorySize: 3008 });
    const zip = readFileSync(join(out, 'dev', 'iceberg.zip'));
    expect(zip.includes(Buffer.from('node_modules/@duckdb/node-bindings-linux-x64/libduckdb.so'))).toBe(true);
    expect(zip.includes(Buffer.from('node_modules/@aws-sdk/client-s3'))).toBe(false);
    expect(readFileSync(join(out, 'dev', 'poller.zip')).includes(Buffer.from('duckdb'))).toBe(false);
    const rules = ofType(dev, 'AWS::Events::Rule').map((r) => r.Properties);
    expect(rules.find((r) => JSON.stringify(r.Targets).includes('Iceberg'))).toMatchObject({ ScheduleExpression: 'rate(5 minutes)', State: 'DISABLED' });
    const env = (dev.Resources.IcebergLambdaFunction?.Properties.Environment as { Variables: Record<string, unknown> } | undefined)?.Variables;
    expect(env).toMatchObject({ SLUICE_GLUE_DATABASE: 'sluice_dev', SLUICE_ICEBERG_RETENTION_HOURS: '24' });
    // The Glue database exists only while the merge is enabled (prod here); the function runs outside the VPC.
    expect(deployed(dev).GlueDatabase).toBeUndefined();
    expect(resolve(prod, deployed(prod).GlueDatabase?.Properties)).toMatchObject({ DatabaseInput: { Name: 'sluice_prod' } });
    expect(prod.Resources.GlueDatabase?.DeletionPolicy).toBe('Retain');
    expect(prod.Resources.IcebergLambdaFunction?.Properties.VpcConfig).toBeUndefined();
    expect(prod.Resources.PollerLambdaFunction?.Properties.VpcConfig).toBeDefined();
  });

  it('lets the Iceberg merge read the change log, write and delete only under iceberg/, and touch only its Glue database', () => {
    for (const [template, prefix] of [
      [dev, ''],
      [prod, 'cdc/'],
    ] as const) {
      const object = (key: string) => `${BUCKET_ARN}/${prefix}${key}`;
      const may = (action: string, key: string) => allowed(template, 'IcebergRole', { action, resource: object(key) });
      for (const key of ['tables/db/t/main-000000000001.jsonl.gz', 'manifests/main/000000000001.json', 'schema/main/db/t/000001.json']) {
        expect(may('s3:GetObject', key)).toBe(true);
        expect(may('s3:PutObject', key)).toBe(false);
        expect(may('s3:DeleteObject', key)).toBe(false);
      }
      for (const action of ['s3:PutObject', 's3:GetObject', 's3:DeleteObject']) expect(may(action, 'iceberg/db/t/data/m000000000001-data.parquet')).toBe(true);
      expect(may('s3:DeleteObjectVersion', 'iceberg/db/t/data/m000000000001-data.parquet')).toBe(false);
      const list = statements(template, 'IcebergRole');
      for (const statement of list) {
        expect(statement.Action.some((a) => a === '*' || a.endsWith(':*'))).toBe(false);
        expect(JSON.stringify(statement.Resource)).not.toBe('"*"');
      }
      const glue = list.find((s) => s.Sid === 'GlueTables');
      if (template === dev)
        expect(glue).toBeUndefined(); // the merge is disabled there: no Glue database to touch
      else {
        expect(glue?.Action.sort()).toEqual(['glue:CreateTable', 'glue:GetTable', 'glue:UpdateTable']);
        expect(JSON.stringify(glue?.Resource)).toContain(`table/\${GlueDatabaseName}/*`);
        expect(template.Parameters.GlueDatabaseName?.Default).toBe('sluice_prod');
      }
    }
    // The other functions cannot touch the Iceberg tables.
    for (const role of ['PollerRole', 'SnapshotRole'])
      expect(allowed(dev, role, { action: 's3:PutObject', resource: `${BUCKET_ARN}/iceberg/db/t/metadata/v1.metadata.json` })).toBe(false);
  });

  it('allows every S3 and DynamoDB request the Iceberg merge makes: a merge, a crash after staging and its redo, nothing new', async () => {
    await using source = await testSource('iamice');
    const accesses: Access[] = [];
    await source.capture();
    await source.sql("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20)); INSERT INTO t VALUES (1, 'a'), (2, 'b')");
    await source.capture();
    // Only the merges' requests count (the captures between them are the poller's).
    let recording = true;
    recordAccesses(source.clients.s3, source.config.prefix, () => (recording ? accesses : []));
    recordAccesses(source.clients.dynamo, source.config.prefix, () => (recording ? accesses : []), source.config.sourceId);
    expect((await merge(source)).tables[0]?.status).toBe('merged');
    recording = false;
    await source.sql("UPDATE t SET v = 'c' WHERE id = 1");
    await source.capture();
    recording = true;
    expect((await merge(source, { faults: crashAt('after-staging') })).tables[0]?.status).toBe('failed');
    expect((await merge(source)).tables[0]?.status).toBe('merged');
    expect((await merge(source)).tables[0]?.status).toBe('up-to-date');
    const kinds = new Set(
      accesses.map((a) => (a.resource.startsWith(BUCKET_ARN) ? `${a.action} ${a.resource.slice(BUCKET_ARN.length + 1).split('/')[0]}` : a.action)),
    );
    expect(kinds).toEqual(
      new Set([
        's3:GetObject tables',
        's3:GetObject manifests',
        's3:GetObject schema',
        's3:GetObject iceberg',
        's3:PutObject iceberg',
        // The redo deletes what the crashed run staged before staging again.
        's3:DeleteObject iceberg',
        's3:ListBucket ',
        'dynamodb:GetItem',
        'dynamodb:UpdateItem',
      ]),
    );
    expect(accesses.filter((a) => !allowed(dev, 'IcebergRole', a))).toEqual([]);
  });

  it('allows every S3 and DynamoDB request of a first load split into buckets, with workers and a crashed bucket', async () => {
    await using source = await testSource('iamsplit', { SLUICE_ICEBERG_BUCKET_ROWS: '2', SLUICE_ICEBERG_WORKERS: '2' });
    await source.capture();
    await source.sql("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20)); INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')");
    await source.capture();
    const accesses: Access[] = [];
    recordAccesses(source.clients.s3, source.config.prefix, () => accesses);
    recordAccesses(source.clients.dynamo, source.config.prefix, () => accesses, source.config.sourceId);
    const workers = inProcessWorkers(source);
    expect((await merge(source, { faults: crashAt('bucket-staged'), maxBuckets: 1 })).tables[0]?.status).toBe('failed');
    expect((await merge(source, { invoke: workers.invoke })).tables[0]?.status).toBe('merged');
    await workers.settled();
    expect(workers.started()).toBeGreaterThan(0);
    // The committed rewrite's bucket items are deleted.
    expect(accesses.map((a) => a.action)).toContain('dynamodb:DeleteItem');
    expect(accesses.filter((a) => !allowed(dev, 'IcebergRole', a))).toEqual([]);
  });

  it('lets no role delete items table-wide: the merge deletes only the bucket items of its rewrites', () => {
    const item = (pk: string): Access => ({ action: 'dynamodb:DeleteItem', resource: TABLE_ARN, context: { 'dynamodb:LeadingKeys': [pk] } });
    for (const template of [dev, prod, s3Tables, rest])
      for (const role of ['PollerRole', 'SnapshotRole', 'IcebergRole']) {
        // Whatever statement grants a delete, it names the keys it may delete.
        for (const s of statements(template, role).filter((s) => s.Action.some((a) => a === 'dynamodb:DeleteItem' || a === 'dynamodb:*')))
          expect(JSON.stringify(s.Condition), role).toContain('dynamodb:LeadingKeys');
        const may = (pk: string) => allowed(template, role, item(pk));
        // Any source's rewrite buckets: the merge function serves every source of the fleet.
        expect(may('iceberg#main#shop/orders#rewrite#m000000000007#0003')).toBe(role === 'IcebergRole');
        expect(may('iceberg#orders#shop/orders#rewrite#m1#0000')).toBe(role === 'IcebergRole');
        for (const pk of ['source#main', 'iceberg#main#shop/orders', 'snapshot#main#s1', 'chunk#main#s1#x', 'fleet#orders', 'fleet'])
          expect(may(pk), `${role} ${pk}`).toBe(false);
        // ForAllValues holds for a request without the key; the Null condition does not.
        expect(allowed(template, role, { action: 'dynamodb:DeleteItem', resource: TABLE_ARN })).toBe(false);
      }
  });

  it('creates the S3 Tables table bucket only when asked, and points the merge at its Iceberg REST endpoint', () => {
    for (const t of [dev, prod, rest]) {
      expect(deployed(t).S3TablesBucket).toBeUndefined();
      expect(statements(t, 'IcebergRole').flatMap((s) => s.Action.filter((a) => a.startsWith('s3tables:')))).toEqual([]);
    }
    expect(s3Tables.Resources.S3TablesBucket?.Condition).toBe('HasS3Tables');
    const bucket = resolve(s3Tables, deployed(s3Tables).S3TablesBucket?.Properties);
    // Unreferenced-file removal deletes what sluice never deletes there (a crashed attempt's files, expired snapshots' files).
    expect(bucket).toEqual({ TableBucketName: 'sluice-lake', UnreferencedFileRemoval: { Status: 'Enabled', UnreferencedDays: 3, NoncurrentDays: 10 } });
    expect(s3Tables.Resources.S3TablesBucket?.DeletionPolicy).toBe('Retain');
    expect(deployed(s3Tables).GlueDatabase).toBeUndefined();

    const env = icebergEnvironment(s3Tables);
    expect(env).toMatchObject({
      SLUICE_GLUE_DATABASE: '',
      SLUICE_ICEBERG_CATALOG: 'rest',
      SLUICE_ICEBERG_REST_URI: { 'Fn::Sub': `https://s3tables.\${AWS::Region}.\${AWS::URLSuffix}/iceberg` },
      SLUICE_ICEBERG_REST_WAREHOUSE: { 'Fn::GetAtt': ['S3TablesBucket', 'TableBucketARN'] },
      SLUICE_ICEBERG_REST_SIGNING_NAME: 's3tables',
      SLUICE_ICEBERG_REST_SIGNING_REGION: '',
      SLUICE_ICEBERG_REST_NAMESPACE: 'sluice',
      SLUICE_ICEBERG_REST_LOCATION: 'catalog',
    });
    // What the function makes of it, with the stack's values filled in.
    const deployedEnv = {
      ...env,
      SLUICE_ICEBERG_REST_URI: 'https://s3tables.us-east-1.amazonaws.com/iceberg',
      SLUICE_ICEBERG_REST_WAREHOUSE: TABLE_BUCKET_ARN,
    } as Record<string, string>;
    expect(loadConfig({ ...deployedEnv, SLUICE_BUCKET: 'bucket', SLUICE_MYSQL_URL: 'mysql://u:p@h:3306/' }).iceberg.catalog).toEqual({
      kind: 'rest',
      uri: 'https://s3tables.us-east-1.amazonaws.com/iceberg',
      warehouse: TABLE_BUCKET_ARN,
      namespace: ['sluice'],
      auth: { kind: 'sigv4', signingName: 's3tables', region: undefined },
      location: 'catalog',
    });
  });

  it('gives the merge exactly the S3 Tables actions of the REST endpoint, on that table bucket and its tables only', () => {
    const list = statements(s3Tables, 'IcebergRole');
    const granting = list.filter((s) => s.Action.some((a) => a.startsWith('s3tables:')));
    expect(granting.map((s) => s.Sid)).toEqual(['S3TablesBucket', 'S3TablesTables']);
    const [bucket, tables] = granting;
    expect(bucket?.Action.sort()).toEqual(['s3tables:CreateNamespace', 's3tables:CreateTable', 's3tables:GetNamespace', 's3tables:GetTableBucket']);
    expect(arns(bucket?.Resource)).toEqual([TABLE_BUCKET_ARN]);
    expect(tables?.Action.sort()).toEqual([
      's3tables:GetTable',
      's3tables:GetTableData',
      's3tables:GetTableMetadataLocation',
      's3tables:PutTableData',
      's3tables:UpdateTableMetadataLocation',
    ]);
    expect(arns(tables?.Resource)).toEqual([`${TABLE_BUCKET_ARN}/table/*`]);
    for (const statement of list) {
      expect(statement.Action.some((a) => a === '*' || a.endsWith(':*'))).toBe(false);
      expect(JSON.stringify(statement.Resource)).not.toBe('"*"');
    }
    const may = (action: string, resource: string) => allowed(s3Tables, 'IcebergRole', { action, resource });
    const table = `${TABLE_BUCKET_ARN}/table/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0`;
    for (const action of ['s3tables:UpdateTableMetadataLocation', 's3tables:PutTableData', 's3tables:GetTableData']) {
      expect(may(action, table)).toBe(true);
      expect(may(action, 'arn:aws:s3tables:us-east-1:123456789012:bucket/other/table/0f1e2d3c')).toBe(false);
    }
    expect(may('s3tables:CreateTable', TABLE_BUCKET_ARN)).toBe(true);
    expect(may('s3tables:CreateTable', 'arn:aws:s3tables:us-east-1:123456789012:bucket/sluice-lake-2')).toBe(false);
    // Deleting, renaming, policies and maintenance settings stay the owner's.
    for (const action of ['s3tables:DeleteTable', 's3tables:RenameTable', 's3tables:PutTableMaintenanceConfiguration', 's3tables:PutTablePolicy'])
      expect(may(action, table), action).toBe(false);
    expect(may('s3tables:DeleteTableBucket', TABLE_BUCKET_ARN)).toBe(false);
    // The change log and iceberg/ stay as before (sluice's own metadata chain may be kept there).
    expect(may('s3:GetObject', `${BUCKET_ARN}/cdc/tables/db/t/main-000000000001.jsonl.gz`)).toBe(true);
    expect(may('s3:PutObject', `${BUCKET_ARN}/cdc/iceberg/db/t/metadata/v1.metadata.json`)).toBe(true);
    expect(list.find((s) => s.Sid === 'GlueTables')).toBeUndefined();
  });

  it("hands maintenance to Glue's table optimizers only when asked: their role, the merge's right to create them and pass it, sluice's own maintenance off", () => {
    const env = icebergEnvironment(glueOptimizers);
    expect(env.SLUICE_ICEBERG_MAINTENANCE).toBe('catalog');
    expect(env.SLUICE_GLUE_OPTIMIZER_ROLE_ARN).toEqual({ 'Fn::GetAtt': ['GlueOptimizerRole', 'Arn'] });
    const ROLE = 'arn:aws:iam::123456789012:role/sluice-prod-GlueOptimizerRole-X';
    const config = loadConfig({ ...env, SLUICE_GLUE_OPTIMIZER_ROLE_ARN: ROLE, SLUICE_BUCKET: 'bucket', SLUICE_MYSQL_URL: 'mysql://u:p@h:3306/' });
    expect(config.iceberg.catalog).toEqual({ kind: 'glue', database: 'sluice_prod', optimizerRoleArn: ROLE });
    expect(config.iceberg.maintenance).toBe('catalog');

    const role = deployed(glueOptimizers).GlueOptimizerRole;
    expect((role?.Properties.AssumeRolePolicyDocument as { Statement: Statement[] } | undefined)?.Statement).toEqual([
      { Effect: 'Allow', Principal: { Service: 'glue.amazonaws.com' }, Action: 'sts:AssumeRole' },
    ]);
    const object = (key: string) => `${BUCKET_ARN}/cdc/${key}`;
    const may = (action: string, key: string) => allowed(glueOptimizers, 'GlueOptimizerRole', { action, resource: object(key) });
    for (const action of ['s3:GetObject', 's3:PutObject', 's3:DeleteObject']) expect(may(action, 'iceberg/shop/orders/data/00001.parquet'), action).toBe(true);
    for (const key of ['tables/shop/orders/main-000000000001.jsonl.gz', 'manifests/main/000000000001.json', '_staging/x'])
      for (const action of ['s3:GetObject', 's3:PutObject', 's3:DeleteObject']) expect(may(action, key), `${action} ${key}`).toBe(false);
    const list = statements(glueOptimizers, 'GlueOptimizerRole');
    expect(list.find((s) => s.Sid === 'GlueTables')?.Action.sort()).toEqual(['glue:GetTable', 'glue:UpdateTable']);
    expect(JSON.stringify(list.find((s) => s.Sid === 'OptimizerLogs')?.Resource)).toMatch(
      /iceberg-compaction.*iceberg-retention.*iceberg-orphan-file-deletion/,
    );
    // The bucket policy holds its deletes to iceberg/ too.
    const deny = bucketPolicy(glueOptimizers).find((s) => s.Sid === 'IcebergDeletesOnlyIceberg');
    expect(JSON.stringify(resolve(glueOptimizers, deny?.Principal))).toContain('GlueOptimizerRole');

    const merge = statements(glueOptimizers, 'IcebergRole');
    expect(merge.find((s) => s.Sid === 'GlueTableOptimizers')?.Action).toEqual(['glue:CreateTableOptimizer']);
    const pass = merge.find((s) => s.Sid === 'PassOptimizerRole');
    expect(pass?.Resource).toEqual({ 'Fn::GetAtt': ['GlueOptimizerRole', 'Arn'] });
    expect(pass?.Condition).toEqual({ StringEquals: { 'iam:PassedToService': 'glue.amazonaws.com' } });
    expect(merge.filter((s) => s.Action.includes('iam:PassRole'))).toEqual([pass]);

    // Off by default: sluice maintains, no optimizer role, nothing to create or pass.
    for (const t of [dev, prod, s3Tables]) {
      expect(deployed(t).GlueOptimizerRole).toBeUndefined();
      // S3 Tables maintains its tables itself: the merge builds on that by default.
      expect(icebergEnvironment(t).SLUICE_ICEBERG_MAINTENANCE).toBe(t === s3Tables ? 'catalog' : 'sluice');
      expect(icebergEnvironment(t).SLUICE_GLUE_OPTIMIZER_ROLE_ARN).toBe('');
      expect(statements(t, 'IcebergRole').filter((s) => s.Action.some((a) => a === 'iam:PassRole' || a === 'glue:CreateTableOptimizer'))).toEqual([]);
    }
  });

  it('passes a REST catalog to the merge, with no Glue database and no permission the catalog needs', () => {
    const env = icebergEnvironment(rest);
    expect(env).toMatchObject({
      SLUICE_GLUE_DATABASE: '',
      SLUICE_ICEBERG_CATALOG: 'rest',
      SLUICE_ICEBERG_REST_URI: 'https://glue.us-east-1.amazonaws.com/iceberg',
      SLUICE_ICEBERG_REST_WAREHOUSE: '123456789012',
      SLUICE_ICEBERG_REST_SIGNING_NAME: 'glue',
      SLUICE_ICEBERG_REST_NAMESPACE: 'lake.sluice',
      SLUICE_ICEBERG_REST_LOCATION: '',
    });
    // Tokens and client secrets would sit in plain environment: the template has no place for them.
    expect(Object.keys(env).filter((k) => /^SLUICE_ICEBERG_REST_(TOKEN|CREDENTIAL|SCOPE|OAUTH)/.test(k))).toEqual([]);
    expect(loadConfig({ ...env, SLUICE_BUCKET: 'bucket', SLUICE_MYSQL_URL: 'mysql://u:p@h:3306/' }).iceberg.catalog).toMatchObject({
      kind: 'rest',
      namespace: ['lake', 'sluice'],
      auth: { kind: 'sigv4', signingName: 'glue' },
    });
    expect(deployed(rest).GlueDatabase).toBeUndefined();
    expect(statements(rest, 'IcebergRole').filter((s) => s.Action.some((a) => /^(glue|s3tables|lakeformation):/.test(a)))).toEqual([]);
    // Off by default: the catalog is Glue, as before these parameters.
    for (const t of [dev, prod]) {
      const off = icebergEnvironment(t);
      expect(off.SLUICE_ICEBERG_CATALOG).toBe('glue');
      for (const [name, value] of Object.entries(off)) if (name.startsWith('SLUICE_ICEBERG_REST_')) expect(value, name).toBe('');
    }
  });

  it('decrypts the secret with its customer-managed key, through Secrets Manager only, and only when that key is given', () => {
    const kms = (t: Template, role: string) => statements(t, role).filter((s) => s.Action.some((a) => a.startsWith('kms:')));
    for (const role of ['PollerRole', 'SnapshotRole']) {
      expect(kms(dev, role)).toEqual([]);
      // A secret under the AWS-managed key needs no KMS grant.
      expect(statements(prod, role).some((s) => s.Action.includes('secretsmanager:GetSecretValue'))).toBe(true);
      expect(kms(prod, role)).toEqual([]);
      const [decrypt, ...others] = kms(optIns, role);
      expect(others).toEqual([]);
      expect(decrypt).toMatchObject({ Effect: 'Allow', Action: ['kms:Decrypt'], Resource: SECRET_KEY });
      expect(JSON.stringify(decrypt?.Condition?.StringEquals?.['kms:ViaService'])).toContain('secretsmanager.');
    }
  });

  it('encrypts the log groups and the alarm topic with the given KMS key, and with AWS-owned keys by default', () => {
    const encryption = (t: Template) => {
      const r = (id: string) => resolve(t, t.Resources[id]?.Properties) as Record<string, unknown>;
      return [r('PollerLogGroup').KmsKeyId, r('SnapshotLogGroup').KmsKeyId, r('AlarmTopic').KmsMasterKeyId];
    };
    expect(encryption(optIns)).toEqual([KEY, KEY, KEY]);
    for (const t of [dev, prod]) expect(encryption(t)).toEqual([{ Ref: 'AWS::NoValue' }, { Ref: 'AWS::NoValue' }, { Ref: 'AWS::NoValue' }]);
    expect(optIns.Resources.PollerLogGroup?.Properties.LogGroupName).toBe('/aws/lambda/sluice-prod-poller');
  });

  it('verifies MySQL TLS against the RDS CA bundle by default; another CA or mode is a parameter', () => {
    const environment = (t: Template, fn: string) =>
      (t.Resources[`${fn}LambdaFunction`]?.Properties.Environment as { Variables: Record<string, unknown> } | undefined)?.Variables ?? {};
    const tls = (env: Record<string, unknown>) => {
      const strings = Object.fromEntries(Object.entries(env).filter(([, v]) => typeof v === 'string'));
      const config = loadConfig({ ...strings, SLUICE_BUCKET: 'bucket', SLUICE_MYSQL_URL: 'mysql://u:p@h:3306/' });
      return tlsOptions(config.mysqlTls, config.mysqlCa);
    };
    for (const t of [dev, prod])
      for (const fn of ['Poller', 'Snapshot']) {
        const env = environment(t, fn);
        expect(env).toMatchObject({ SLUICE_MYSQL_TLS: 'verify', SLUICE_MYSQL_CA: 'rds' });
        // What the function makes of it: certificate checks on, against the Amazon RDS roots.
        expect(tls(env)?.rejectUnauthorized).toBe(true);
        expect(tls(env)?.ca).toContain('-----BEGIN CERTIFICATE-----');
      }
    // `required` encrypts only; the CA parameter is then ignored.
    expect(environment(optIns, 'Poller')).toMatchObject({ SLUICE_MYSQL_TLS: 'required' });
    expect(tls(environment(optIns, 'Poller'))).toEqual({ rejectUnauthorized: false });
  });

  it('puts the functions in the given VPC, and in none by default', () => {
    for (const fn of ['PollerLambdaFunction', 'SnapshotLambdaFunction']) {
      expect(resolve(dev, dev.Resources[fn]?.Properties.VpcConfig)).toEqual({ Ref: 'AWS::NoValue' });
      expect(resolve(prod, prod.Resources[fn]?.Properties.VpcConfig)).toEqual({ SubnetIds: ['subnet-1', 'subnet-2'], SecurityGroupIds: ['sg-1'] });
    }
  });

  it('creates the VPC endpoints asked for, so private subnets need no NAT gateway; none by default', () => {
    const endpoints = (t: Template) =>
      Object.values(deployed(t))
        .filter((r) => r.Type === 'AWS::EC2::VPCEndpoint')
        .map((r) => resolve(t, r.Properties) as Record<string, unknown>);
    const service = (e: Record<string, unknown>) =>
      JSON.stringify(e.ServiceName)
        .replace(/.*\}\./, '')
        .replace(/"}$/, '');
    expect(endpoints(dev)).toEqual([]);
    expect(deployed(dev).VpcEndpointSecurityGroup).toBeUndefined();

    const all = endpoints(optIns);
    expect(all.map(service).sort()).toEqual(['dynamodb', 'lambda', 's3', 'secretsmanager']);
    for (const e of all) {
      expect(e.VpcId).toBe('vpc-2');
      if (e.VpcEndpointType === 'Gateway') expect(e.RouteTableIds).toEqual(['rtb-3']);
      else {
        expect(e).toMatchObject({ VpcEndpointType: 'Interface', PrivateDnsEnabled: true, SecurityGroupIds: [{ Ref: 'VpcEndpointSecurityGroup' }] });
        expect(e.SubnetIds).toEqual(['subnet-3']);
      }
    }
    expect(
      all
        .filter((e) => e.VpcEndpointType === 'Gateway')
        .map(service)
        .sort(),
    ).toEqual(['dynamodb', 's3']);
    // The endpoints' security group admits HTTPS from the functions' (first) security group only.
    expect(resolve(optIns, optIns.Resources.VpcEndpointSecurityGroup?.Properties)).toMatchObject({
      VpcId: 'vpc-2',
      SecurityGroupIngress: [{ IpProtocol: 'tcp', FromPort: 443, ToPort: 443, SourceSecurityGroupId: { 'Fn::Select': [0, ['sg-3', 'sg-4']] } }],
    });

    // Only what is named: a VPC that has S3 and Secrets Manager endpoints already.
    expect(endpoints(prod).map(service).sort()).toEqual(['dynamodb', 'lambda']);
    expect(endpoints(prod).find((e) => e.VpcEndpointType === 'Gateway')?.RouteTableIds).toEqual(['rtb-1', 'rtb-2']);
    expect(deployed(prod).VpcEndpointSecurityGroup).toBeDefined();
  });

  it('alarms on poller errors, lag, purge risk, failed invocations and a followed failover, through one topic', () => {
    const alarms = ofType(dev, 'AWS::CloudWatch::Alarm').map((a) => a.Properties);
    expect(alarms.map((a) => a.MetricName ?? 'metric math').sort()).toEqual([
      'ApproximateNumberOfMessagesVisible',
      'Errors',
      'LagSeconds',
      'Repositions',
      'TimeToPurgeSeconds',
      'metric math',
    ]);
    for (const alarm of alarms) expect(alarm.AlarmActions).toEqual([{ Ref: 'AlarmTopic' }]);
    const lag = alarms.find((a) => a.MetricName === 'LagSeconds');
    expect(lag).toMatchObject({ Namespace: 'sluice', Threshold: 900, TreatMissingData: 'breaching' });
    expect(alarms.find((a) => a.MetricName === 'TimeToPurgeSeconds')).toMatchObject({ Threshold: 21600, ComparisonOperator: 'LessThanThreshold' });
    // A followed failover is a notice: any one alarms, and no run (no data) is not one.
    expect(alarms.find((a) => a.MetricName === 'Repositions')).toMatchObject({
      Namespace: 'sluice',
      Statistic: 'Sum',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
    });
    // Lag's pair: the binlog beyond the stored position while the position stands still.
    const stalled = alarms.find((a) => a.Metrics) as { Metrics: { Id: string; Expression?: string; MetricStat?: { Metric: { MetricName: string } } }[] };
    expect(stalled.Metrics.find((m) => m.Expression)?.Expression).toBe('IF(lag > 0 AND age > 900, 1, 0)');
    const emitted = emittedMetricNames();
    for (const alarm of alarms.filter((a) => a.Namespace === 'sluice')) expect(emitted).toContain(alarm.MetricName);
    for (const m of stalled.Metrics.filter((m) => m.MetricStat)) expect(emitted).toContain(m.MetricStat?.Metric.MetricName);
  });

  it('deploys one dashboard per stage that graphs only metrics the functions emit', () => {
    for (const [stage, template] of [
      ['dev', dev],
      ['prod', prod],
    ] as const) {
      const dashboard = deployed(template).Dashboard?.Properties as { DashboardName: string; DashboardBody: string };
      expect(dashboard.DashboardName).toBe(`sluice-${stage}`);
      const graphed = graphedMetricNames(dashboard.DashboardBody);
      expect(graphed.size).toBeGreaterThan(8);
      expect(graphed).toContain('Repositions');
      expect([...graphed].filter((name) => !emittedMetricNames().has(name))).toEqual([]);
      expect(dashboard.DashboardBody).toContain(`"sluice-${stage}-poller"`);
    }
  });
});
