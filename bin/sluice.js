#!/usr/bin/env node
// Runs the CLI compiled by scripts/build.js (dist/), so a start does not pay for transpiling.
// A missing build, or one older than a source it was built from, is refused rather than run stale.
import { readFileSync, statSync } from 'node:fs';

const root = new URL('../', import.meta.url);
/** Why dist/ cannot be run, or undefined when it is current. */
function staleness() {
  let build;
  try {
    build = JSON.parse(readFileSync(new URL('dist/build.json', root), 'utf8'));
  } catch {
    return 'the CLI is not built (dist/ is missing)';
  }
  for (const input of build.inputs) {
    let mtime;
    try {
      mtime = statSync(new URL(input, root)).mtimeMs;
    } catch {
      return `dist/ was built from ${input}, which is gone`;
    }
    if (mtime > build.startedAt) return `dist/ is older than ${input}`;
  }
  return undefined;
}

const problem = staleness();
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
const { run } = await import('../dist/cli/main.js');
process.exitCode = await run(process.argv.slice(2), { env: process.env, stdout: process.stdout, stderr: process.stderr });
