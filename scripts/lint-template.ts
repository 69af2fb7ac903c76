/*
 * `npm run lint:template`: AWS's CloudFormation linter (cfn-lint, with the serverless rules of
 * cfn-lint-serverless) over the templates `sls package` builds for a dev stage, a prod stage with
 * every optional part on (secret and its KMS key, a KMS key for logs and alarms, a VPC with every
 * endpoint, the Iceberg merge with Glue) and a prod stage publishing to an Amazon S3 Tables table
 * bucket through its Iceberg REST endpoint (the REST catalog settings, the table bucket and its
 * IAM; a plain REST catalog is the other branch of the same conditions). Any finding fails: each warning is
 * fixed, or suppressed in serverless.yml with its reason. cfn-lint is installed on first use,
 * pinned, into the git-ignored .tools/cfn-lint.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const PINS = ['cfn-lint==1.58.0', 'cfn-lint-serverless==0.3.6'];
const TOOLS = resolve('.tools/cfn-lint');
const CFN_LINT = join(TOOLS, 'venv', 'bin', 'cfn-lint');

const ACCOUNT = '123456789012';
const STAGES: { name: string; stage: string; params: string[] }[] = [
  { name: 'dev', stage: 'dev', params: [] },
  {
    name: 'prod, every option on (Glue table optimizers among them)',
    stage: 'prod',
    params: [
      'prefix=cdc/',
      `mysqlSecretArn=arn:aws:secretsmanager:us-east-1:${ACCOUNT}:secret:prod/sluice-AbCdEf`,
      `mysqlSecretKmsKeyArn=arn:aws:kms:us-east-1:${ACCOUNT}:key/11111111-2222-3333-4444-555555555555`,
      `kmsKeyArn=arn:aws:kms:us-east-1:${ACCOUNT}:key/66666666-7777-8888-9999-000000000000`,
      'subnetIds=subnet-0123456789abcdef0,subnet-0123456789abcdef1',
      'securityGroupIds=sg-0123456789abcdef0',
      'vpcId=vpc-0123456789abcdef0',
      'routeTableIds=rtb-0123456789abcdef0',
      'vpcEndpoints=s3,dynamodb,secretsmanager,lambda',
      'icebergEnabled=true',
      'icebergMaintenance=glue',
    ],
  },
  {
    name: 'prod, Iceberg into S3 Tables',
    stage: 'prod',
    params: ['prefix=cdc/', 'icebergEnabled=true', 's3TablesBucket=sluice-prod-lake', 'icebergRestNamespace=sluice', 'icebergMaintenance=catalog'],
  },
];

async function ensureCfnLint(): Promise<void> {
  const marker = join(TOOLS, 'installed.json');
  if (existsSync(marker) && readFileSync(marker, 'utf8') === JSON.stringify(PINS) && existsSync(CFN_LINT)) return;
  rmSync(TOOLS, { recursive: true, force: true });
  try {
    await run('python3', ['-m', 'venv', join(TOOLS, 'venv')]);
    await run(join(TOOLS, 'venv', 'bin', 'pip'), ['install', '--quiet', '--disable-pip-version-check', ...PINS], { timeout: 10 * 60_000 });
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    throw new Error(`Installing ${PINS.join(' ')} from PyPI failed (the template lint needs PyPI on first use):\n${(e.stderr ?? e.message).trim()}`);
  }
  writeFileSync(marker, JSON.stringify(PINS));
}

async function main(): Promise<number> {
  await ensureCfnLint();
  const out = mkdtempSync(join(tmpdir(), 'sluice-lint-'));
  // Where `sls package` and its plugins put their temporary files (one folder per function each
  // run, left behind): inside `out`, removed below.
  const scratch = join(out, 'tmp');
  mkdirSync(scratch);
  let findings = 0;
  try {
    for (const [i, { name, stage, params }] of STAGES.entries()) {
      const dir = join(out, String(i));
      await run('npx', ['sls', 'package', '--stage', stage, '--package', dir, ...params.map((p) => `--param=${p}`)], {
        env: {
          ...process.env,
          SLS_TELEMETRY_DISABLED: '1',
          TMPDIR: scratch,
          AWS_ACCESS_KEY_ID: process.env.AWS_ACCESS_KEY_ID ?? 'offline',
          AWS_SECRET_ACCESS_KEY: process.env.AWS_SECRET_ACCESS_KEY ?? 'offline',
        },
      });
      const template = join(dir, 'cloudformation-template-update-stack.json');
      // Exit status: a bit per level found (2 errors, 4 warnings, 8 informational); 0 is clean.
      const result = await run(CFN_LINT, ['--append-rules', 'cfn_lint_serverless.rules', '--', template]).then(
        (r) => ({ code: 0, stdout: r.stdout }),
        (e: { code?: number; stdout?: string }) => ({ code: e.code ?? 1, stdout: e.stdout ?? '' }),
      );
      const count = result.stdout.split('\n').filter((l) => /^[EWI]S?\d{4} /.test(l)).length;
      findings += result.code === 0 ? 0 : Math.max(count, 1);
      console.log(`${name}: ${result.code === 0 ? 'clean' : `${count} findings`}`);
      if (result.stdout.trim()) console.log(result.stdout.trim());
    }
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
  return findings ? 1 : 0;
}

process.exitCode = await main();
