import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { LocalStackError } from '../errors.ts';
import { freePort, portOpen, spawnDetached, waitFor } from './process.ts';

/** Starts the fauxqs S3 emulator (in memory, path-style) as its own process. */
export async function startS3(dir: string): Promise<{ pid: number; port: number }> {
  // fauxqs exports only its ESM entry, so look for its CLI along the module search path.
  const searched = createRequire(import.meta.url).resolve.paths('fauxqs') ?? [];
  const cli = searched.map((dir) => join(dir, 'fauxqs', 'dist', 'cli.js')).find((path) => existsSync(path));
  if (!cli) throw new LocalStackError('the S3 emulator fauxqs is not installed; run `npm install` in the sluice folder');
  const port = await freePort();
  const logFile = join(dir, 's3.log');
  const pid = spawnDetached(process.execPath, [cli], logFile, { ...process.env, FAUXQS_PORT: String(port), FAUXQS_LOGGER: 'false', FAUXQS_HOST: '127.0.0.1' });
  await waitFor('S3 emulator (fauxqs)', () => portOpen(port), 15_000, logFile);
  return { pid, port };
}
