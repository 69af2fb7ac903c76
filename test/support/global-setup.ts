import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { down, env, type LocalServer, up } from '../../lib/local/stack.ts';
import { createOldTemporalTemplate } from './old-temporal.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    stackEnv: Record<string, string>;
    /** The server the stack runs as the source: SLUICE_TEST_SERVER (`npm run test:live-mysql`), else MariaDB. */
    stackServer: LocalServer;
  }
}

/**
 * Starts the local stack for the test run (a separate home from `npm start`'s, one per server) and
 * stops it after. Its progress lines are printed only if it fails to start. Every temporary file
 * of the run — the tests', and those of the processes they start — goes to one folder in the
 * system's temporary folder (TMPDIR, which os.tmpdir() and child processes follow), removed when
 * the run ends: a run leaves nothing there.
 */
export default async function setup(project: TestProject) {
  const server: LocalServer = process.env.SLUICE_TEST_SERVER === 'mysql' ? 'mysql' : 'mariadb';
  const home = join(process.cwd(), '.sluice', server === 'mysql' ? 'test-mysql' : 'test');
  // Tests spawn bin/sluice.js, which runs dist/: build it from the sources under test.
  execFileSync(process.execPath, ['scripts/build.js'], { stdio: 'inherit' });
  const lines: string[] = [];
  const scratch = mkdtempSync(join(tmpdir(), 'sluice-test-'));
  const removeScratch = () => rmSync(scratch, { recursive: true, force: true });
  try {
    const stack = await up({ home, server, log: (line) => lines.push(`[stack] ${line}`) });
    project.provide('stackEnv', { ...env(stack), TMPDIR: scratch });
    project.provide('stackServer', server);
    // Before any test file runs: it switches a server-global setting for a moment (MariaDB's alone).
    if (server === 'mariadb') await createOldTemporalTemplate(env(stack).SLUICE_LOCAL_ADMIN_URL as string);
  } catch (error) {
    removeScratch();
    for (const line of lines) console.error(line);
    throw error;
  }
  return async () => {
    removeScratch();
    if (process.env.SLUICE_KEEP_STACK !== '1') await down({ home });
  };
}
