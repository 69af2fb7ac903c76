import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LocalStackError } from '../errors.ts';
import { freePort, portOpen, spawnDetached, waitFor } from './process.ts';

/** Starts the fauxqs S3 emulator (in memory, path-style) as its own process. */
export async function startS3(dir: string): Promise<{ pid: number; port: number }> {
  let cli: string;
  try {
    cli = join(dirname(fileURLToPath(import.meta.resolve('fauxqs'))), 'cli.js');
  } catch (error) {
    throw new LocalStackError('the S3 emulator fauxqs is not installed; run `npm install` in the sluice folder', error);
  }
  const port = await freePort();
  const logFile = join(dir, 's3.log');
  const pid = spawnDetached(process.execPath, [cli], logFile, { ...process.env, FAUXQS_PORT: String(port), FAUXQS_LOGGER: 'false', FAUXQS_HOST: '127.0.0.1' });
  await waitFor('S3 emulator (fauxqs)', () => portOpen(port), 15_000, logFile);
  return { pid, port };
}
