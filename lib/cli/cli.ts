import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Option } from 'commander';
import type { Env } from '../aws.ts';
import type { Config } from '../config/config.ts';
import type { LocalServer } from '../local/stack.ts';
import { profilePhase } from '../profile.ts';

// Everything else is imported where a command runs, so `sluice --help` (or a typo) starts at once
// instead of loading the AWS SDK, DuckDB, zongji and mysql2 first.

const FLAGS = {
  source: 'SLUICE_SOURCE_ID',
  mysqlUrl: 'SLUICE_MYSQL_URL',
  stateTable: 'SLUICE_STATE_TABLE',
  bucket: 'SLUICE_BUCKET',
  prefix: 'SLUICE_PREFIX',
  include: 'SLUICE_INCLUDE',
  exclude: 'SLUICE_EXCLUDE',
  startup: 'SLUICE_STARTUP',
  /** `capture --once`: one name with the Lambda's setting. */
  once: 'SLUICE_STOP_WHEN_CAUGHT_UP',
} as const;

/** Where a `sluice` run reads its settings and writes its output; bin/sluice.js passes the process's own. */
export interface CliIo {
  readonly env: Env;
  readonly stdout: { write(text: string): unknown; readonly isTTY?: boolean };
  readonly stderr: { write(text: string): unknown; readonly isTTY?: boolean };
}

/**
 * A running local stack's variables, used as defaults so `sluice local up && sluice capture` just
 * works: the stack of `server` (`--server`), else of SLUICE_LOCAL_SERVER, else MariaDB's.
 */
export async function localDefaults(env: Env, server?: LocalServer): Promise<Record<string, string>> {
  const { complete, env: stackEnv, readStack, stackHome } = await import('../local/stack.ts');
  const home = stackHome(env, server);
  if (!existsSync(join(home, 'stack.json'))) return {};
  const stack = await readStack(home);
  // A stack that only partly started (see `local up`) is no default to use.
  return complete(stack) ? stackEnv(stack) : {};
}

/** `--server`: which server the local stack runs as the source. */
export const serverOption = () =>
  new Option('--server <server>', 'the source server the local stack runs ($SLUICE_LOCAL_SERVER, default mariadb)').choices(['mariadb', 'mysql']);

export const defined = (env: Env) => Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined)) as Record<string, string>;

/** One `sluice` invocation: its output, its exit code, and the clients it opened (closed at the end). */
export class Cli {
  exitCode = 0;
  private readonly opened: { destroy(): void }[] = [];

  constructor(readonly io: CliIo) {}

  out(line: string): void {
    this.io.stdout.write(`${line}\n`);
  }

  err(line: string): void {
    this.io.stderr.write(`${line}\n`);
  }

  fail(): void {
    this.exitCode = 1;
  }

  /** The environment (over a running local stack's defaults), overridden by flags; config and clients from it alone. */
  async configure(flags: Record<string, unknown>) {
    // The clients' modules load beside the configuration's (module loading waits on file reads too).
    const [{ loadConfig }, defaults] = await Promise.all([import('../config/config.ts'), localDefaults(this.io.env), import('../aws.ts')]);
    const env: Record<string, string> = { ...defaults, ...defined(this.io.env) };
    for (const [flag, variable] of Object.entries(FLAGS)) {
      const value = flags[flag];
      if (value !== undefined) env[variable] = String(value);
    }
    return this.open(loadConfig(env), env);
  }

  /** Clients for `config`; with SLUICE_PROFILE=1, the command's start-up ends here (lib/profile.ts). */
  async open(config: Config, env: Env) {
    const { createClients } = await import('../aws.ts');
    const clients = createClients(config, env);
    this.opened.push(clients.s3, clients.dynamo);
    profilePhase('run');
    return { config, clients, env };
  }

  close(): void {
    for (const client of this.opened) client.destroy();
  }
}
