import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { TestSource } from './source.ts';

const run = promisify(execFile);

/** Runs the real `sluice` command; never throws, returns the exit code and output. */
export async function sluice(args: string[], env: Record<string, string | undefined>): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['bin/sluice.js', ...args], {
      env,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** The environment that points the CLI at a test source (and never at a local stack of the checkout). */
export function cliEnv(source: TestSource, extra: Record<string, string> = {}): Record<string, string | undefined> {
  return { ...process.env, SLUICE_SOURCE_ID: source.db, SLUICE_PREFIX: source.db, SLUICE_INCLUDE: `${source.db}.*`, SLUICE_HOME: '/nonexistent', ...extra };
}
