/**
 * npm run bench:past-4gib — a binlog file past 4 GiB on the embedded MariaDB, live (issue #27; CI
 * replays a recorded MySQL file grown past 4 GiB instead: test/mysql/past-4gib.test.ts). One
 * transaction writes PAST_4GIB_MIB (4,200) rows of 1 MiB to a table sluice does not capture,
 * between a row of one it does before and one after, so its file runs past 4 GiB before it rotates.
 * Prints what MariaDB writes there (SHOW BINLOG EVENTS: the exact Pos, End_log_pos modulo 2^32), then
 *   1. `sluice capture --once` reads across it: the stored position and the manifests' are exact;
 *   2. the position reset to the transaction's end (past 4 GiB, where MariaDB cannot start a dump):
 *      a run too short (3 s) stops with RESUME_PAST_4GIB; the next re-reads the file from its start and
 *      captures only what follows it, once.
 * Some minutes, and some 13 GB of disk writes (InnoDB, the binlog cache, the binlog); it drops the
 * table and purges the binlog it wrote at the end.
 */

import { loadConfig } from '../lib/config/config.ts';
import { adminConnection } from '../lib/local/stack.ts';
import { eventLines, manifests } from '../lib/materialize/change-log.ts';
import { benchStack, dropOutput, measure, SLUICE, table } from './support.ts';

const MIB = Number(process.env.PAST_4GIB_MIB ?? 4_200);
const G = 2 ** 32;

const { stack, env: stackEnv, clients } = await benchStack();
await using _stack = stack;
const conn = await adminConnection(stack);
// One commit per transaction (SLUICE_BATCH_MAX_EVENTS=1): the manifests show every transaction's end.
const env = {
  ...stackEnv,
  SLUICE_SOURCE_ID: 'past4g',
  SLUICE_PREFIX: 'past4g/',
  SLUICE_INCLUDE: 'big4g\\.t',
  SLUICE_STARTUP: 'latest',
  SLUICE_BATCH_MAX_EVENTS: '1',
  SLUICE_LOG_LEVEL: 'WARN',
};
const config = loadConfig(env);
const prefix = config.prefix;
const sluice = async (args: string[], extra: Record<string, string> = {}) => {
  const run = await measure(process.execPath, [...SLUICE, ...args], { env: { ...env, ...extra } });
  if (process.env.PAST_4GIB_VERBOSE) console.log(`sluice ${args.join(' ')}: exit ${run.code}\n${run.stdout}${run.stderr}`);
  return run;
};
const rows = async <T>(sql: string) => (await conn.query(sql))[0] as unknown as T[];
const started = Date.now();
const at = () => `${((Date.now() - started) / 1000).toFixed(0)} s`;

await dropOutput(clients, config.bucket, prefix);
await conn.query(`DROP DATABASE IF EXISTS big4g; CREATE DATABASE big4g;
  CREATE TABLE big4g.t (id INT PRIMARY KEY, note VARCHAR(32)) ENGINE=InnoDB;
  CREATE TABLE big4g.big (id INT PRIMARY KEY, b LONGBLOB) ENGINE=InnoDB;
  FLUSH BINARY LOGS`);
await sluice(['state', 'reset', '--to', 'latest']).catch(() => undefined);
const first = await sluice(['capture', '--once', '--seconds', '60']);
if (first.code !== 0) throw new Error(`first capture: ${first.stderr}`);

const [begin] = await rows<{ File: string; Position: number }>('SHOW MASTER STATUS');
const file = begin?.File as string;
console.log(`${at()}: writing one transaction of ${MIB} MiB into ${file} from ${begin?.Position}`);
await conn.query("INSERT INTO big4g.t VALUES (1, 'before')");
await conn.query(`BEGIN; INSERT INTO big4g.t VALUES (2, 'first of the large one');
  INSERT INTO big4g.big SELECT seq, REPEAT('x', 1048576) FROM big4g.seq_1_to_${MIB};
  INSERT INTO big4g.t VALUES (3, 'last of the large one'); COMMIT`);
await conn.query("INSERT INTO big4g.t VALUES (4, 'after')");
const logs = await rows<{ Log_name: string; File_size: number }>('SHOW BINARY LOGS');
const size = Number(logs.find((l) => l.Log_name === file)?.File_size);
console.log(`${at()}: ${file} is ${size} bytes (${(size / G).toFixed(3)} × 4 GiB); the server went on in the next file`);

// What MariaDB writes past 4 GiB: the last events of the file.
const events = await rows<{ Pos: number; End_log_pos: number; Event_type: string; Info: string }>(
  `SHOW BINLOG EVENTS IN '${file}' FROM ${begin?.Position} LIMIT ${MIB * 2 + 100}`,
);
const tail = events.slice(-5);
console.log(`${at()}: SHOW BINLOG EVENTS IN '${file}', its last events:`);
console.log(
  table(
    ['Pos', 'End_log_pos', 'Event_type', 'Pos + length (exact end)'],
    tail.map((e, i) => [e.Pos, e.End_log_pos, e.Event_type, i + 1 < tail.length ? Number(tail[i + 1]?.Pos) : size]),
  ),
);
const rotate = events.at(-1);
if (rotate?.Event_type !== 'Rotate' || Number(rotate.Pos) <= G) throw new Error('the file did not end with a ROTATE past 4 GiB: raise PAST_4GIB_MIB');
const end = Number(rotate.Pos);

// 1. Read across.
const across = await sluice(['capture', '--once', '--seconds', '900']);
if (across.code !== 0) throw new Error(`capture across: ${across.stderr}`);
const positions: { pos: number; gtid?: string }[] = [];
for await (const m of manifests(clients.s3, config.bucket, prefix, config.sourceId)) if (m.position?.to.file === file) positions.push(m.position.to);
const sources: string[] = [];
for await (const { line } of eventLines(clients.s3, config.bucket, prefix, config.sourceId)) {
  const event = JSON.parse(line) as { op: string; after?: { id: number }; source: { file: string; pos: number }; seq: string };
  if (event.op === 'c' && event.after) sources.push(`id ${event.after.id}: ${event.source.file}:${event.source.pos}, seq ${event.seq}`);
}
console.log(`${at()}: capture across 4 GiB: ${across.seconds.toFixed(1)} s, peak RSS ${across.peakRssMb.toFixed(0)} MB`);
console.log(`  positions the manifests store in ${file}: ${positions.map((p) => p.pos).join(', ')}`);
console.log(`  the large transaction's end: ${end}, stored ${positions.some((p) => p.pos === end) ? 'exactly' : 'NOT'}`);
for (const line of sources) console.log(`  ${line}`);

// 2. Resume past 4 GiB.
const reset = await sluice(['state', 'reset', '--to', `position:${file}:${end}`]);
if (reset.code !== 0) throw new Error(`state reset: ${reset.stderr}`);
const short = await sluice(['capture', '--once', '--seconds', '3'], { SLUICE_SAFETY_MARGIN_SECONDS: '1' });
console.log(`${at()}: a 3 s run from ${file}:${end}: exit ${short.code}, ${/RESUME_PAST_4GIB: .*$/m.exec(short.stderr)?.[0] ?? short.stderr}`);
const resumed = await sluice(['capture', '--once', '--seconds', '900']);
if (resumed.code !== 0) throw new Error(`capture resumed: ${resumed.stderr}`);
console.log(`${at()}: the run that re-read ${file} up to ${end}: ${resumed.seconds.toFixed(1)} s, peak RSS ${resumed.peakRssMb.toFixed(0)} MB`);
const ids: number[] = [];
for await (const { line } of eventLines(clients.s3, config.bucket, prefix, config.sourceId)) {
  const event = JSON.parse(line) as { op: string; after?: { id: number } };
  if (event.op === 'c' && event.after) ids.push(event.after.id);
}
console.log(`  inserts captured over all runs, by id: ${ids.sort().join(', ')} (4 twice: the reset moved back past it on purpose)`);

await conn.query('DROP DATABASE big4g; FLUSH BINARY LOGS');
const [now] = await rows<{ File: string }>('SHOW MASTER STATUS');
await conn.query(`PURGE BINARY LOGS TO '${now?.File}'`);
await conn.end();
await dropOutput(clients, config.bucket, prefix);
console.log(`${at()}: done`);
