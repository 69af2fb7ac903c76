/** npm run chaos — the long chaos run: prints rounds, faults per kind, events checked and differences (must be 0). */
import { join } from 'node:path';
import { localServer, runStack, env as stackEnv } from '../../lib/local/stack.ts';
import { runChaos } from './harness.ts';

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true'; // read when the first client is made

const rounds = Number(process.env.CHAOS_ROUNDS ?? 50);
const perRound = Number(process.env.CHAOS_MUTATIONS ?? 1100);
const seed = Number(process.env.CHAOS_SEED ?? Date.now() % 100_000);
// SLUICE_LOCAL_SERVER=mysql: the workload runs on a private live MySQL 8.0.31 instead of MariaDB.
const server = localServer();
await using stack = await runStack({ home: join(process.cwd(), '.sluice', `chaos-${server}`), server, log: (line) => console.error(`[stack] ${line}`) });
Object.assign(process.env, stackEnv(stack));
console.log(`chaos on ${server}: ${rounds} rounds × ${perRound} mutations, seed ${seed} (replay with CHAOS_SEED=${seed})`);
const report = await runChaos({ rounds, mutationsPerRound: perRound, seed, server, env: stackEnv(stack), log: (line) => console.log(line) });
const injected = Object.entries(report.faults).filter(([kind]) => !kind.startsWith('failed run'));
console.log(
  `\nchaos passed in ${report.seconds} s: ${report.rounds} rounds, ${report.mutations} row changes, ${report.eventsChecked} events checked, ${report.differences} differences`,
);
console.log(`faults injected: ${injected.reduce((a, [, n]) => a + n, 0)}`);
console.log(
  `failovers: ${report.failovers.followed} followed by GTID, ${report.failovers.stopped} stopped with POSITION_FOREIGN and reset${report.failovers.rotatedFirst ? ` (${report.failovers.rotatedFirst} after a binlog rotation, for the position to carry a GTID set)` : ''}${report.failovers.rebuiltFirst ? `; ${report.failovers.rebuiltFirst} replicas differed from their primary and were built again first` : ''}`,
);
for (const [kind, n] of Object.entries(report.faults).sort((a, b) => b[1] - a[1])) console.log(`  ${String(n).padStart(5)}  ${kind}`);
