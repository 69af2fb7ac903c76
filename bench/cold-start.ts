/**
 * npm run bench:cold-start — start-up a user or a Lambda pays before any work:
 *   - `sluice --help` as a whole process (target ≤ 0.3 s), beside `node -e 0` on the same machine;
 *   - the packaged poller: `sls package` (osls, offline) zip size (target ≤ 3 MB), and the time a
 *     fresh node process takes to import the bundled handler (module load + config + clients, what
 *     a cold start runs before the handler), measured from the unpacked zip.
 * Needs no stack. COLD_START_RUNS (10) sets the repetitions; medians are reported.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BENCH_HOME, machine, measure, median, ok, SLUICE, table } from './support.ts';

const RUNS = Number(process.env.COLD_START_RUNS ?? 10);
const MB = 1024 * 1024;
const dir = join(BENCH_HOME, 'cold-start');
rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
execFileSync(process.execPath, ['scripts/build.js'], { stdio: 'inherit' });

const runs = async (command: string, args: string[], env?: Record<string, string>) => {
  const all = [];
  for (let i = 0; i < RUNS; i++) all.push(ok(await measure(command, args, { env }), `${command} ${args.join(' ')}`));
  return { median: median(all), min: Math.min(...all.map((r) => r.seconds)) };
};
const node = await runs(process.execPath, ['-e', '0']);
const help = await runs(process.execPath, [...SLUICE, '--help']);

console.error('packaging with osls (offline)…');
const packaged = join(dir, 'package');
execFileSync('npx', ['sls', 'package', '--stage', 'dev', '--package', packaged], {
  env: { ...process.env, SLS_TELEMETRY_DISABLED: '1', AWS_ACCESS_KEY_ID: 'offline', AWS_SECRET_ACCESS_KEY: 'offline' },
  stdio: ['ignore', 'ignore', 'inherit'],
});
const zip = (name: string) => statSync(join(packaged, `${name}.zip`)).size;
// Unpacked under the checkout, the bundle resolves the AWS SDK from node_modules as Lambda's runtime provides it.
const unpacked = join(dir, 'poller');
execFileSync('unzip', ['-q', '-o', join(packaged, 'poller.zip'), '-d', unpacked]);
const handler = pathToFileURL(join(unpacked, 'functions', 'poller.mjs')).href;
const importScript = `const t = performance.now(); await import(${JSON.stringify(handler)}); const ready = performance.now();
console.log(JSON.stringify({ importMs: ready - t, readyMs: ready }));`;
const config = {
  SLUICE_SOURCE_ID: 'cold',
  SLUICE_MYSQL_URL: 'mysql://u:p@127.0.0.1:3306/',
  SLUICE_STATE_TABLE: 'sluice-state',
  SLUICE_BUCKET: 'sluice-bench',
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'offline',
  AWS_SECRET_ACCESS_KEY: 'offline',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
};
const imports = [];
for (let i = 0; i < RUNS; i++) {
  const run = ok(await measure(process.execPath, ['--input-type=module', '-e', importScript], { env: config }), 'import of the bundled poller');
  imports.push({ ...run, ...(JSON.parse(run.stdout) as { importMs: number; readyMs: number }) });
}
const imported = median(imports.map((r) => ({ ...r, seconds: r.importMs / 1000 })));

const s = (seconds: number) => `${seconds.toFixed(3)} s`;
console.log(`\n${machine().replace(/, median of .*/, '')}, median of ${RUNS} runs (min in brackets)\n`);
console.log(
  table(
    ['figure', 'measured', 'target'],
    [
      ['`node -e 0` (Node start alone)', `${s(node.median.seconds)} (${s(node.min)})`, ''],
      ['`sluice --help`, whole process', `${s(help.median.seconds)} (${s(help.min)})`, '≤ 0.3 s'],
      ['poller.zip', `${(zip('poller') / MB).toFixed(2)} MB`, '≤ 3 MB'],
      ['snapshot.zip', `${(zip('snapshot') / MB).toFixed(2)} MB`, ''],
      ['bundled poller handler file', `${(statSync(new URL(handler)).size / MB).toFixed(2)} MB`, ''],
      ['import of the bundled poller (module load, config, clients)', s(imported.importMs / 1000), ''],
      ['node start → poller handler ready, same process', s(imported.readyMs / 1000), ''],
      ['peak RSS after import', `${imported.peakRssMb.toFixed(0)} MB`, ''],
    ],
  ),
);
