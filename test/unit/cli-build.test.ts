import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';

/** bin/sluice.js copied into a scratch checkout, with a dist/ built at `builtAt` from lib/a.ts. */
function checkout(options: { dist: boolean; builtAt: number; sourceAt: number }): string {
  const root = mkdtempSync(join(tmpdir(), 'sluice-bin-'));
  mkdirSync(join(root, 'bin'));
  copyFileSync('bin/sluice.js', join(root, 'bin', 'sluice.js'));
  mkdirSync(join(root, 'lib'));
  writeFileSync(join(root, 'lib', 'a.ts'), 'export {};\n');
  utimesSync(join(root, 'lib', 'a.ts'), options.sourceAt / 1000, options.sourceAt / 1000);
  if (options.dist) {
    mkdirSync(join(root, 'dist', 'cli'), { recursive: true });
    writeFileSync(join(root, 'dist', 'build.json'), JSON.stringify({ startedAt: options.builtAt, inputs: ['lib/a.ts'] }));
    writeFileSync(join(root, 'dist', 'cli', 'main.js'), "export async function run() { console.log('ran dist'); return 0; }\n");
    writeFileSync(join(root, 'dist', 'cli', 'main.cjs'), "exports.run = async (argv) => { console.log('ran cjs', argv.join(' ')); return 3; };\n");
  }
  return root;
}

const run = (root: string, args: string[] = []) =>
  promisify(execFile)(process.execPath, [join(root, 'bin', 'sluice.js'), ...args]).then(
    ({ stdout }) => ({ code: 0, stdout, stderr: '' }),
    (error: { code: number; stdout: string; stderr: string }) => error,
  );

describe('bin/sluice.js', () => {
  const roots: string[] = [];
  afterEach(() => {
    for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
  });
  const now = Date.now();

  it('runs a build newer than its sources', async () => {
    const root = checkout({ dist: true, builtAt: now, sourceAt: now - 60_000 });
    roots.push(root);
    expect(await run(root)).toMatchObject({ code: 0, stdout: 'ran dist\n' });
  });

  it('refuses a build older than a source it was built from, naming the file and the fix', async () => {
    const root = checkout({ dist: true, builtAt: now - 60_000, sourceAt: now });
    roots.push(root);
    const result = await run(root);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/dist\/ is older than lib\/a\.ts; run `npm run build`/);
  });

  it('refuses a missing build, naming the fix', async () => {
    const root = checkout({ dist: false, builtAt: 0, sourceAt: now });
    roots.push(root);
    const result = await run(root);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/the CLI is not built \(dist\/ is missing\); run `npm run build`/);
  });

  it('runs help from the ES modules and a command from the CommonJS build, compiled from the code cache its first run wrote', async () => {
    const root = checkout({ dist: true, builtAt: now, sourceAt: now - 60_000 });
    roots.push(root);
    expect(await run(root, ['capture', '--help'])).toMatchObject({ code: 0, stdout: 'ran dist\n' });
    const cache = join(root, 'dist', 'cli', 'cache', `${now}-capture.v8`);
    expect(existsSync(cache)).toBe(false);
    expect(await run(root, ['capture', '--once'])).toMatchObject({ code: 3, stdout: 'ran cjs capture --once\n' });
    const written = statSync(cache);
    expect(written.size).toBeGreaterThan(0);
    // Accepted by V8, the cache is used as it is, not written again.
    expect(await run(root, ['capture'])).toMatchObject({ code: 3, stdout: 'ran cjs capture\n' });
    expect(statSync(cache).mtimeMs).toBe(written.mtimeMs);
    expect(existsSync(join(root, 'dist', 'cli', 'cache', `${now}-snapshot.v8`))).toBe(false);
  });

  it('replaces a cache V8 refuses, and runs the command all the same', async () => {
    const root = checkout({ dist: true, builtAt: now, sourceAt: now - 60_000 });
    roots.push(root);
    mkdirSync(join(root, 'dist', 'cli', 'cache'));
    const cache = join(root, 'dist', 'cli', 'cache', `${now}-status.v8`);
    writeFileSync(cache, 'not a code cache');
    expect(await run(root, ['status'])).toMatchObject({ code: 3, stdout: 'ran cjs status\n' });
    expect(readFileSync(cache, 'utf8')).not.toBe('not a code cache');
  });

  it("never runs a previous build's cached code, though V8 would take it for a script of the same length", async () => {
    const root = checkout({ dist: true, builtAt: now, sourceAt: now - 60_000 });
    roots.push(root);
    expect(await run(root, ['capture'])).toMatchObject({ stdout: 'ran cjs capture\n' });
    // A rebuild whose script differs only in a same-width constant.
    const script = join(root, 'dist', 'cli', 'main.cjs');
    writeFileSync(script, readFileSync(script, 'utf8').replace('ran cjs', 'new cjs'));
    writeFileSync(join(root, 'dist', 'build.json'), JSON.stringify({ startedAt: now + 1, inputs: ['lib/a.ts'] }));
    expect(await run(root, ['capture'])).toMatchObject({ stdout: 'new cjs capture\n' });
  });
});
