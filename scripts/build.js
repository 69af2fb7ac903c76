#!/usr/bin/env node
/**
 * Builds the `sluice` CLI into dist/: lib/cli/main.ts and the modules it reaches, as ES modules
 * split at each dynamic import, so `sluice --help` loads commander and little else while each
 * command loads its own modules (AWS SDK, DuckDB, zongji) when it runs. Packages stay external:
 * they are resolved from node_modules at run time, as they would be from the sources.
 *
 * dist/build.json lists the source files the build read and when it started; bin/sluice.js
 * refuses to run a build older than any of them. Runs in ~0.1 s: `npm install`/`npm ci`
 * (prepare), `npm start`, the test setup and the benchmarks call it, so output is never stale.
 * The Lambda bundles are built separately by serverless-esbuild (serverless.yml).
 */
import { existsSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Builds dist/ (replacing it whole, so a CLI starting meanwhile never mixes two builds). */
export async function buildCli() {
  let esbuild;
  try {
    esbuild = await import('esbuild');
  } catch {
    throw new Error('esbuild is not installed (were devDependencies left out?): run `npm install`, then `npm run build`');
  }
  const startedAt = Date.now();
  const out = join(root, `dist.tmp-${process.pid}`);
  rmSync(out, { recursive: true, force: true });
  try {
    const result = await esbuild.build({
      absWorkingDir: root,
      entryPoints: { 'cli/main': 'lib/cli/main.ts' },
      outdir: out,
      bundle: true,
      splitting: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      packages: 'external',
      chunkNames: 'chunks/[name]-[hash]',
      sourcemap: 'linked',
      metafile: true,
      logLevel: 'warning',
    });
    const inputs = Object.keys(result.metafile.inputs).filter((file) => !file.startsWith('node_modules/'));
    writeFileSync(join(out, 'build.json'), `${JSON.stringify({ startedAt, inputs }, null, 1)}\n`);
    const dist = join(root, 'dist');
    const old = join(root, `dist.old-${process.pid}`);
    if (existsSync(dist)) renameSync(dist, old);
    renameSync(out, dist);
    rmSync(old, { recursive: true, force: true });
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    await buildCli();
  } catch (error) {
    console.error(`sluice build: ${error.message}`);
    process.exitCode = 1;
  }
}
