/**
 * `npm run mysql:replay -- --port <p> [--version X.Y.Z] [--schema-from <mysql uri>] [--verbose] <binlog file>...`:
 * runs the replay server in the foreground until Ctrl-C (see README.md next to this file).
 */
import { Command } from 'commander';
import { startReplayServer } from './server.ts';

const program = new Command('mysql:replay')
  .description('serve recorded MySQL binlog files, in order, as the MySQL server that wrote them (127.0.0.1 only, any user and password)')
  .argument('<files...>', 'binlog files, oldest first')
  .option('--port <port>', 'TCP port on 127.0.0.1 (0 picks a free one)', '3306')
  .option('--version <x.y.z>', "the MySQL version to present (default: the first file's FORMAT_DESCRIPTION's)")
  .option('--schema-from <uri>', 'a mysql:// URI that information_schema and table reads are forwarded to')
  .option('--verbose', 'print every statement and what it got')
  .action(async (files: string[], opts: { port: string; version?: string; schemaFrom?: string; verbose?: boolean }) => {
    const port = Number(opts.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be a TCP port number, got '${opts.port}'`);
    if (opts.version !== undefined && !/^\d+\.\d+\.\d+/.test(opts.version)) throw new Error(`--version must look like 8.4.3, got '${opts.version}'`);
    const server = await startReplayServer({
      files,
      port,
      version: opts.version,
      schemaFrom: opts.schemaFrom,
      onStatement: opts.verbose ? (sql, outcome) => console.log(`${sql.replace(/\s+/g, ' ').slice(0, 200)} → ${outcome}`) : undefined,
    });
    const { facts } = server;
    console.log(
      `mysql-replay: MySQL ${facts.version} (server_id ${facts.serverId}, server_uuid ${facts.serverUuid}, gtid_mode ${facts.gtidMode}) on ${server.uri}`,
    );
    for (const f of facts.files) console.log(`  ${f.name}  ${f.file.size} bytes  ← ${f.file.path}`);
    const stop = () => void server.close().then(() => process.exit(0));
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });

program.parseAsync().catch((error: Error) => {
  console.error(`mysql:replay: ${error.message}`);
  process.exit(2);
});
