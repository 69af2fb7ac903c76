import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { freePort, portOpen, spawnDetached, waitFor } from '../../lib/local/process.ts';

const run = promisify(execFile);

/*
 * The AWS emulator the deploy suite deploys into: moto's server mode, one process serving every
 * AWS API on one loopback port, installed on first use into the git-ignored .tools/deploy/moto.
 *
 * Why not LocalStack (localstack-core 2026.3.0 from PyPI, run on the host without Docker): it needs
 * Python 3.12+, and with its unpinned dependencies held back it starts, but CloudFormation cannot
 * create a Lambda function: "Error while creating lambda: Installation of lambda-runtime
 * v0.1.41-pre failed." (the runtime's init binary is downloaded at run time, and each function
 * then needs a Docker container); its DynamoDB downloads a JDK 21 and DynamoDB Local v2 at first use.
 * moto creates functions without running them, so the suite runs the packaged bundles itself.
 */

const REQUIREMENTS = resolve('test/deploy/moto-requirements.txt');
/** Where the venv lives (git-ignored), and the marker holding the pins it was installed from. */
export const TOOLS = resolve('.tools/deploy');
const VENV = join(TOOLS, 'moto');
const MARKER = join(TOOLS, 'moto-installed.txt');
const SERVER = join(VENV, 'bin', 'moto_server');

/** Installs the pinned moto unless the marker says it is there; returns the seconds it took (0: installed). */
export async function ensureMoto(): Promise<number> {
  const pins = readFileSync(REQUIREMENTS, 'utf8');
  if (existsSync(MARKER) && readFileSync(MARKER, 'utf8') === pins && existsSync(SERVER)) return 0;
  const started = Date.now();
  rmSync(VENV, { recursive: true, force: true });
  mkdirSync(TOOLS, { recursive: true });
  await step('the local Python (python3 -m venv)', 'python3', ['-m', 'venv', VENV]);
  await step('PyPI', join(VENV, 'bin', 'pip'), ['install', '--quiet', '--disable-pip-version-check', '-r', REQUIREMENTS]);
  writeFileSync(MARKER, pins);
  return (Date.now() - started) / 1000;
}

/** A step of the install; a failure names where it installs from and the command to run by hand. */
async function step(from: string, command: string, args: string[]) {
  try {
    await run(command, args, { maxBuffer: 64 * 1024 * 1024, timeout: 10 * 60_000 });
  } catch (error) {
    const e = error as { stderr?: string; stdout?: string; message: string };
    const detail = `${e.stderr ?? ''}${e.stdout ?? ''}`.trim().split('\n').slice(-15).join('\n') || e.message;
    throw new Error(
      `Installing the AWS emulator (moto[server], pinned in test/deploy/moto-requirements.txt) from ${from} failed. npm run test:deploy needs ${from} on first use; run by hand to see why:\n  ${command} ${args.join(' ')}\n${detail}`,
    );
  }
}

/** Starts moto's server on a free loopback port, logging to `<dir>/moto.log`. */
export async function startMoto(dir: string): Promise<{ pid: number; port: number; endpoint: string }> {
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const log = join(dir, 'moto.log');
  const pid = spawnDetached(SERVER, ['-H', '127.0.0.1', '-p', String(port)], log);
  await waitFor('moto_server', () => portOpen(port), 30_000, log);
  // "localhost", not 127.0.0.1: moto takes a template URL's bucket from its path only for localhost
  // (or amazonaws.com) hosts, and serverless-localstack builds the TemplateURL from this endpoint.
  return { pid, port, endpoint: `http://localhost:${port}` };
}
