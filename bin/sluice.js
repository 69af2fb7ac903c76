#!/usr/bin/env node
// Runs the CLI compiled by scripts/build.js (dist/), so a start does not pay for transpiling.
// A missing build, or one older than a source it was built from, is refused rather than run stale.
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import Module from 'node:module';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';

const root = new URL('../', import.meta.url);
/** dist/build.json, or why dist/ cannot be run: missing, or older than a source it was built from. */
function currentBuild() {
  let build;
  try {
    build = JSON.parse(readFileSync(new URL('dist/build.json', root), 'utf8'));
  } catch {
    return { problem: 'the CLI is not built (dist/ is missing)' };
  }
  for (const input of build.inputs) {
    let mtime;
    try {
      mtime = statSync(new URL(input, root)).mtimeMs;
    } catch {
      return { problem: `dist/ was built from ${input}, which is gone` };
    }
    if (mtime > build.startedAt) return { problem: `dist/ is older than ${input}` };
  }
  return { build };
}

const { build, problem } = currentBuild();
if (problem) {
  console.error(`sluice: ${problem}; run \`npm run build\` (npm install, npm start and npm test build it too)`);
  process.exit(1);
}
// Source maps are not enabled here: Node reads and indexes every loaded chunk's map at load time
// (~0.17 s of CPU per start with the bundled packages). dist/ keeps the maps; for stack traces with
// source positions run with NODE_OPTIONS=--enable-source-maps.
// The AWS SDK warns on every start under Node 20 that versions from 2027 on will need Node 22; the
// SDK sluice ships is pinned by package-lock.json, so the warning says nothing about this install.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/**
 * Runs a command from dist/cli/main.cjs, compiled from the V8 code cache of `command`
 * (dist/cli/cache/<build>-<command>.v8): ~0.1 s less CPU than loading the ES modules, whose
 * compilation Node 20 never caches. A cache is written after the command's first run, or after V8
 * refused it (a different Node or V8 flags), holding what that run compiled; one per command, as
 * each reaches other code. It is named by the build (build.json's start time) because V8 checks a
 * cache against the script's length only: a run of the previous build ending after a rebuild must
 * not leave its code for the new script. A dist/ that cannot be written to leaves commands uncached.
 */
async function runCached(command, argv, io) {
  const file = fileURLToPath(new URL('dist/cli/main.cjs', root));
  const name = /^[a-z][a-z-]*$/.test(command) ? command : 'other';
  const cacheFile = fileURLToPath(new URL(`dist/cli/cache/${build.startedAt}-${name}.v8`, root));
  let cachedData;
  // The build leaves the script ASCII (scripts/build.js): latin1 reads it as it is, without decoding.
  try {
    cachedData = readFileSync(cacheFile);
  } catch {}
  const script = new vm.Script(Module.wrap(readFileSync(file, 'latin1')), { filename: file, cachedData });
  const bundle = { exports: {} };
  script.runInThisContext()(bundle.exports, Module.createRequire(file), bundle, file, dirname(file));
  const code = await bundle.exports.run(argv, io);
  if (!cachedData || script.cachedDataRejected) {
    try {
      mkdirSync(dirname(cacheFile), { recursive: true });
      writeFileSync(`${cacheFile}.${process.pid}`, script.createCachedData());
      renameSync(`${cacheFile}.${process.pid}`, cacheFile); // whole or not at all, for runs starting meanwhile
    } catch {}
  }
  return code;
}

const argv = process.argv.slice(2);
const io = { env: process.env, stdout: process.stdout, stderr: process.stderr };
const command = argv.find((arg) => !arg.startsWith('-'));
// Help and the version need commander alone: the split ES modules load least for them.
const helpOnly = !command || command === 'help' || argv.some((arg) => ['-h', '--help', '-V', '--version'].includes(arg));
if (helpOnly) {
  const { run } = await import('../dist/cli/main.js');
  process.exitCode = await run(argv, io);
} else process.exitCode = await runCached(command, argv, io);
