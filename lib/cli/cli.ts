import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Option } from 'commander';
import type { Env } from '../aws.ts';
import type { Config } from '../config/config.ts';
import type { SourceRecord, SourceRegistry } from '../fleet/registry.ts';
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

  /** The environment (over a running local stack's defaults), overridden by flags. */
  async environment(flags: Record<string, unknown>): Promise<Record<string, string>> {
    const env: Record<string, string> = { ...(await localDefaults(this.io.env)), ...defined(this.io.env) };
    for (const [flag, variable] of Object.entries(FLAGS)) {
      const value = flags[flag];
      if (value !== undefined) env[variable] = String(value);
    }
    return env;
  }

  /**
   * Config and clients from the environment alone; for a source registered in the stack's fleet
   * (`--source` or SLUICE_SOURCE_ID naming one), its record's configuration (lib/fleet/source-config.ts).
   */
  async configure(flags: Record<string, unknown>) {
    // The clients' modules load beside the configuration's (module loading waits on file reads too).
    const [{ loadConfig }, { sourceConfig }, env] = await Promise.all([
      import('../config/config.ts'),
      import('../fleet/source-config.ts'),
      this.environment(flags),
      import('../aws.ts'),
    ]);
    const record = await this.registered(env);
    return this.open(record ? sourceConfig(env, record) : loadConfig(env), env);
  }

  /**
   * The registered source SLUICE_SOURCE_ID names, when the state table is known and holds it. A
   * state table that does not exist yet (before `sluice init`) registers nothing; any other failure
   * to read it stops the command: guessing "not registered" would run a registered source's id on
   * the stack's own settings.
   */
  private async registered(env: Record<string, string>): Promise<SourceRecord | undefined> {
    const [{ SOURCE_ID }, { ErrorCode, SluiceError }] = await Promise.all([import('../fleet/registry.ts'), import('../errors.ts')]);
    const id = env.SLUICE_SOURCE_ID;
    if (!id || !SOURCE_ID.test(id) || !env.SLUICE_STATE_TABLE) return undefined;
    try {
      return await (await this.registry(env)).get(id);
    } catch (error) {
      if (error instanceof SluiceError && error.code === ErrorCode.STATE_TABLE_MISSING) return undefined;
      throw new SluiceError(
        error instanceof SluiceError ? error.code : ErrorCode.CONFIG_INVALID,
        `cannot read the source registry in ${env.SLUICE_STATE_TABLE} (SLUICE_STATE_TABLE) to tell whether source ${id} is registered there: ${(error as Error).message}`,
        { cause: error, retriable: error instanceof SluiceError ? error.retriable : true },
      );
    }
  }

  /** The stack's fleet registry, in SLUICE_STATE_TABLE of `env`. */
  async registry(env: Record<string, string>): Promise<SourceRegistry> {
    const [{ dynamoClient }, { SourceRegistry }, { ConfigError }] = await Promise.all([
      import('../aws.ts'),
      import('../fleet/registry.ts'),
      import('../errors.ts'),
    ]);
    if (!env.SLUICE_STATE_TABLE)
      throw new ConfigError(
        'invalid configuration:\n  SLUICE_STATE_TABLE: is required (the DynamoDB table holding the registered sources)\nSet it (or --state-table) and retry.',
      );
    const dynamo = dynamoClient(env);
    this.opened.push(dynamo);
    return new SourceRegistry(dynamo, env.SLUICE_STATE_TABLE);
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
