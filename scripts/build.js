#!/usr/bin/env node
/**
 * Builds the `sluice` CLI into dist/ twice from lib/cli/main.ts: as ES modules split at each dynamic
 * import (dist/cli/main.js), so `sluice --help` loads commander and little else; and as one
 * CommonJS script (dist/cli/main.cjs) that bin/sluice.js runs commands with, compiled from a V8
 * code cache — a command loads ~3 MB of code (AWS SDK, mysql2, zongji, zod), and compiling it cost
 * every run ~0.1 s of CPU (docs/PERFORMANCE.md).
 *
 * npm packages are bundled too: Node resolving and loading ~900 package files one by one cost a
 * capture run ~0.2 s of CPU before any work (docs/PERFORMANCE.md). Left external, resolved from
 * node_modules at run time: packages that load files next to their own (DuckDB's native addon,
 * the SQL parser's WebAssembly) and optional ones the SDK looks for (`EXTERNAL`).
 *
 * dist/build.json lists the files the build depends on and when it started; bin/sluice.js refuses
 * to run a build older than any of them. Those are sluice's sources, this script, and — standing
 * in for the ~900 bundled package files — npm's record of the installed tree
 * (node_modules/.package-lock.json, rewritten by every install) and patches/ (applied after it).
 * Runs in ~1.5 s: `npm install`/`npm ci` (prepare), `npm start`, the test setup and the benchmarks
 * call it, so output is never stale. The Lambda bundles are built separately by serverless-esbuild
 * (serverless.yml).
 */
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Packages not bundled: they read files next to their own code, or are optional and absent. */
const EXTERNAL = ['@duckdb/node-api', '@aws-sdk/signature-v4-crt'];

/**
 * zod's `z.locales` re-exports every language's error messages: 0.36 MB, half of zod's part of the
 * bundle, parsed at every start of a command that reads its configuration. sluice uses the English
 * default, which zod imports on its own; the namespace becomes empty.
 */
const withoutZodLocales = {
  name: 'without-zod-locales',
  setup(build) {
    build.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      /[\\/]node_modules[\\/]zod[\\/]/.test(args.importer) ? { path: 'zod-locales', namespace: 'sluice-empty' } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'sluice-empty' }, () => ({ contents: 'export {};', loader: 'js' }));
  },
};

/**
 * iconv-lite (mysql2 and zongji each ship a copy) reads its CJK code tables from JSON files when a
 * charset first needs them, which sluice's connections never do; bundled, the tables' 1 MB would be
 * parsed at every start. They stay files, required from node_modules as iconv-lite would (dist/cli
 * and dist/chunks both sit two levels below the root).
 */
const iconvTablesOutside = {
  name: 'iconv-tables-outside',
  setup(build) {
    build.onResolve({ filter: /^\.\/tables\/.*\.json$/ }, (args) => {
      if (!/[\\/]iconv-lite[\\/]encodings$/.test(args.resolveDir)) return undefined;
      const file = relative(root, join(args.resolveDir, args.path)).split(sep).join('/');
      return { path: `../../${file}`, external: true };
    });
  },
};

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
    const common = {
      absWorkingDir: root,
      entryPoints: { 'cli/main': 'lib/cli/main.ts' },
      outdir: out,
      bundle: true,
      platform: 'node',
      target: 'node20',
      external: EXTERNAL,
      plugins: [withoutZodLocales, iconvTablesOutside],
      // Packages' ES module builds where they have one: a dynamic import() of a bundled CommonJS
      // module yields only its `default`, where Node's own import() also gives its named exports.
      mainFields: ['module', 'main'],
      sourcemap: 'linked',
      metafile: true,
      logLevel: 'warning',
    };
    const [result] = await Promise.all([
      esbuild.build({
        ...common,
        splitting: true,
        format: 'esm',
        // Bundled CommonJS packages require() Node's built-ins, which an ES module has no `require` for.
        banner: { js: "import { createRequire as __sluiceRequire } from 'node:module'; const require = __sluiceRequire(import.meta.url);" },
        chunkNames: 'chunks/[name]-[hash]',
      }),
      // The same CLI as one CommonJS script (dist/cli/main.cjs), which bin/sluice.js compiles with
      // a V8 code cache: Node 20 caches no ES module's compilation. Dynamic imports become lazy
      // initializers inside it, so a command still evaluates only the modules it reaches.
      esbuild.build({
        ...common,
        format: 'cjs',
        outExtension: { '.js': '.cjs' },
        // import() of Node's modules and of the external packages, as require(): a script compiled
        // from a code cache has no dynamic import callback (ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING).
        supported: { 'dynamic-import': false },
        define: { 'import.meta.url': '__sluiceModuleUrl' },
        // Strict first: esbuild's own "use strict" comes after the banner, where it is no directive.
        banner: { js: "'use strict';\nvar __sluiceModuleUrl = require('node:url').pathToFileURL(__filename).href;" },
      }),
    ]);
    // esbuild writes code as ASCII (escapes in strings and regular expressions) but keeps comments
    // as they are: with theirs made ASCII too, bin/sluice.js reads the script as latin1, a one-byte
    // string at once, where decoding 5 MB of UTF-8 took ~70 ms of every start. One UTF-16 unit
    // becomes one '?', so the source map's columns stay right.
    const script = join(out, 'cli', 'main.cjs');
    writeFileSync(script, readFileSync(script, 'utf8').replace(/[\u0080-\uffff]/g, '?'));
    const patches = existsSync(join(root, 'patches')) ? readdirSync(join(root, 'patches')).map((name) => `patches/${name}`) : [];
    const inputs = [
      ...Object.keys(result.metafile.inputs).filter((file) => !file.startsWith('node_modules/') && !file.startsWith('sluice-empty:')),
      'scripts/build.js',
      ...['node_modules/.package-lock.json', ...patches].filter((file) => existsSync(join(root, file))),
    ];
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
