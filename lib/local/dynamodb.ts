import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalStackError } from '../errors.ts';
import { freePort, portOpen, spawnDetached, waitFor } from './process.ts';

/** AWS's DynamoDB Local ships inside this npm package; we take the jar, not its 300 dependencies. */
const SIMULATOR = 'amplify-dynamodb-simulator@2.9.30';

function cacheDir(): string {
  return join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'sluice', SIMULATOR.replace('@', '-'));
}

/** Returns the folder holding DynamoDBLocal.jar, fetching it once per machine with `npm pack`. */
function ensureDynamoDbLocal(log: (line: string) => void): string {
  const emulator = join(cacheDir(), 'emulator');
  if (existsSync(join(emulator, 'DynamoDBLocal.jar'))) return emulator;
  log(`fetching DynamoDB Local (${SIMULATOR}) into ${cacheDir()}…`);
  const work = mkdtempSync(join(tmpdir(), 'sluice-ddb-'));
  try {
    const tarball = execFileSync('npm', ['pack', SIMULATOR, '--silent', '--pack-destination', work], { encoding: 'utf8' }).trim().split('\n').pop();
    execFileSync('tar', ['-xzf', join(work, tarball ?? ''), '-C', work, 'package/emulator']);
    mkdirSync(cacheDir(), { recursive: true });
    renameSync(join(work, 'package', 'emulator'), emulator);
  } catch (error) {
    throw new LocalStackError(`could not fetch ${SIMULATOR} with npm pack; check npm registry access`, error);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return emulator;
}

function ensureJava(): void {
  try {
    execFileSync('java', ['-version'], { stdio: 'pipe' });
  } catch {
    throw new LocalStackError(
      'java was not found; DynamoDB Local needs Java 17 or newer (Debian/Ubuntu: `sudo apt-get install -y openjdk-17-jre-headless`, macOS: `brew install openjdk@17`).',
    );
  }
}

export async function startDynamoDbLocal(dir: string, log: (line: string) => void): Promise<{ pid: number; port: number }> {
  ensureJava();
  const emulator = ensureDynamoDbLocal(log);
  const port = await freePort();
  const logFile = join(dir, 'dynamodb.log');
  const pid = spawnDetached(
    'java',
    [
      '-Xmx512m',
      `-Djava.library.path=${join(emulator, 'DynamoDBLocal_lib')}`,
      '-jar',
      join(emulator, 'DynamoDBLocal.jar'),
      '-inMemory',
      '-sharedDb',
      '-disableTelemetry',
      '-port',
      String(port),
    ],
    logFile,
    process.env,
    dir, // it writes dynamodb-local-metadata.json into its working directory
  );
  await waitFor('DynamoDB Local', () => portOpen(port), 30_000, logFile);
  return { pid, port };
}
