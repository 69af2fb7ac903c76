import { execFile, execFileSync } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { GetFunctionConfigurationCommand, type LambdaClient } from '@aws-sdk/client-lambda';

const run = promisify(execFile);
const RUNNER = resolve('test/deploy/run-bundle.mjs');

/** What one invocation returned (or threw), and the JSON documents (logs, EMF metrics) it printed. */
export interface InvocationResult {
  functionName: string;
  result?: unknown;
  error?: { name?: string; message?: string; code?: string };
  documents: Record<string, unknown>[];
}

/**
 * Lambda's data plane for functions the emulator created but cannot run (moto needs Docker for
 * that): each invocation runs the deployed bundle — the package zip whose SHA-256 is the function's
 * deployed CodeSha256, unzipped — in a fresh Node process with the function's deployed environment
 * (read back from GetFunctionConfiguration) plus the endpoint settings that point the AWS SDK at the
 * emulator. The AWS SDK comes from the project's node_modules, as the Lambda runtime provides its own.
 *
 * The functions' own async invocations (poller → snapshot, snapshot fan-out) reach a local Invoke
 * endpoint (AWS_ENDPOINT_URL_LAMBDA) that queues them; `drain` runs the queue as Lambda would.
 */
export class PackagedFunctions implements AsyncDisposable {
  private readonly bundles = new Map<string, string>();

  private constructor(
    /** The asynchronous invocations the functions made, not run yet. */
    readonly queue: { functionName: string; event: unknown }[],
    private readonly lambda: LambdaClient,
    private readonly options: { packageDir: string; workDir: string; endpoint: string; region: string },
    private readonly server: Server,
  ) {}

  static async start(lambda: LambdaClient, options: { packageDir: string; workDir: string; endpoint: string; region: string }): Promise<PackagedFunctions> {
    const queue: { functionName: string; event: unknown }[] = [];
    const server = createServer((req: IncomingMessage, res) => {
      let body = '';
      req.on('data', (chunk) => {
        body += chunk;
      });
      req.on('end', () => {
        const name = /\/functions\/([^/]+)\/invocations/.exec(req.url ?? '')?.[1];
        // Only what the functions do: asynchronous (Event) invocations by name.
        if (!name || req.headers['x-amz-invocation-type'] !== 'Event') {
          res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ message: 'only Event invocations are emulated' }));
          return;
        }
        queue.push({ functionName: decodeURIComponent(name), event: JSON.parse(body || '{}') });
        res.writeHead(202, { 'content-type': 'application/json' }).end();
      });
    });
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    return new PackagedFunctions(queue, lambda, options, server);
  }

  private get invokeEndpoint(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The unzipped package whose SHA-256 (base64) is `sha256`: proof that what runs is what was deployed. */
  private bundle(sha256: string): string {
    const known = this.bundles.get(sha256);
    if (known) return known;
    for (const file of readdirSync(this.options.packageDir).filter((f) => f.endsWith('.zip'))) {
      const zip = join(this.options.packageDir, file);
      if (createHash('sha256').update(readFileSync(zip)).digest('base64') !== sha256) continue;
      const dir = join(this.options.workDir, file.replace(/\.zip$/, ''));
      if (!existsSync(dir)) {
        mkdirSync(dir, { recursive: true });
        execFileSync('unzip', ['-q', '-o', zip, '-d', dir]);
      }
      this.bundles.set(sha256, dir);
      return dir;
    }
    throw new Error(`no package zip in ${this.options.packageDir} has the deployed CodeSha256 ${sha256}: deploy again (sls deploy rewrites .serverless/)`);
  }

  /** Runs one invocation of the deployed function `functionName` with `event`. */
  async invoke(functionName: string, event: unknown): Promise<InvocationResult> {
    const config = await this.lambda.send(new GetFunctionConfigurationCommand({ FunctionName: functionName }));
    const dir = this.bundle(config.CodeSha256 ?? '');
    const handler = config.Handler ?? '';
    const dot = handler.lastIndexOf('.');
    const requestId = randomUUID();
    const request = join(this.options.workDir, `${requestId}.request.json`);
    const response = join(this.options.workDir, `${requestId}.response.json`);
    writeFileSync(
      request,
      JSON.stringify({
        file: join(dir, `${handler.slice(0, dot)}.mjs`),
        export: handler.slice(dot + 1),
        event,
        functionName,
        functionArn: config.FunctionArn,
        memoryMb: config.MemorySize,
        timeoutSeconds: config.Timeout,
        requestId,
      }),
    );
    const env = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      TZ: 'UTC',
      ...config.Environment?.Variables,
      AWS_REGION: this.options.region,
      AWS_DEFAULT_REGION: this.options.region,
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      AWS_LAMBDA_FUNCTION_NAME: functionName,
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(config.MemorySize),
      AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
      // Endpoint configuration only: the emulator for every AWS API, the local queue for Invoke.
      AWS_ENDPOINT_URL: this.options.endpoint,
      AWS_ENDPOINT_URL_LAMBDA: this.invokeEndpoint,
      SLUICE_S3_FORCE_PATH_STYLE: 'true',
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    };
    const { stdout } = await run(process.execPath, [RUNNER, request, response], {
      env,
      maxBuffer: 64 * 1024 * 1024,
      timeout: (config.Timeout ?? 60) * 1000 + 30_000,
    });
    // Kept for a failing run: what the function printed (its JSON logs and EMF metrics).
    writeFileSync(join(this.options.workDir, `${requestId}.log`), stdout);
    const documents = stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    return { functionName, ...(JSON.parse(readFileSync(response, 'utf8')) as Omit<InvocationResult, 'functionName' | 'documents'>), documents };
  }

  /** Runs the queued asynchronous invocations (and those they queue) until none is left. */
  async drain(): Promise<InvocationResult[]> {
    const results: InvocationResult[] = [];
    for (let next = this.queue.shift(); next; next = this.queue.shift()) results.push(await this.invoke(next.functionName, next.event));
    return results;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await new Promise<void>((done) => this.server.close(() => done()));
  }
}
