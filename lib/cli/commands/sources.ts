import { type Command, Option } from 'commander';
import type { Config } from '../../config/config.ts';
import { ConfigError } from '../../errors.ts';
import type { SourceRecord } from '../../fleet/registry.ts';
import type { Cli } from '../cli.ts';

/** `--set KEY=VALUE` given more than once. */
const collect = (value: string, previous: string[]) => [...previous, value];
const every = () => new Option('--every <minutes>', 'capture it every N minutes of the schedule (1: every tick)').argParser(Number);

/** `sluice sources list | add | set | pause | resume | remove`: the sources the stack captures, registered at run time. */
export function sourcesCommands(program: Command, cli: Cli): void {
  const sources = program
    .command('sources')
    .description("the stack's fleet: sources registered at run time in the state table (list, add, set, pause, resume, remove)");
  /** The stack's environment and registry; the stack's own source id is the environment's, never `--source`. */
  const fleet = async () => {
    const { source: _source, ...flags } = program.opts();
    const env = await cli.environment(flags);
    return { env, registry: await cli.registry(env), masked: await masker() };
  };

  sources
    .command('list')
    .description('the registered sources: schedule, paused, Iceberg, connection (passwords masked), filters')
    .option('--json', 'machine-readable output (passwords masked)')
    .action(async (options: { json?: boolean }) => {
      const { registry, masked } = await fleet();
      const records = (await registry.list()).map(masked);
      if (options.json) return cli.out(JSON.stringify(records, null, 2));
      if (!records.length) return cli.out('no sources registered: `sluice sources add <id> --url mysql://…` adds one');
      for (const record of records) cli.out(describe(record));
    });

  sources
    .command('add <id>')
    .description('register a source (validated before it is written); the schedule captures it from its next tick')
    .option('--url <mysql-url>', 'mysql://user:password@host:port/ (SLUICE_MYSQL_URL)')
    .option('--secret <secret-id>', 'a Secrets Manager secret holding the connection (SLUICE_MYSQL_SECRET_ID)')
    .addOption(every().default(1))
    .option('--no-iceberg', "leave it out of the stack's Iceberg merge")
    .option('--set <KEY=VALUE>', 'any other SLUICE_* setting of the source (repeatable)', collect, [])
    .addHelpText(
      'after',
      "\nThe global --include, --exclude and --startup set its filters and startup mode; nothing else of the stack's own source is inherited.",
    )
    .action(async (id: string, options: { url?: string; secret?: string; every: number; iceberg: boolean; set: string[] }) => {
      const { checkSourceSettings, sourceConfig } = await import('../../fleet/source-config.ts');
      const { env, registry, masked } = await fleet();
      if (id === env.SLUICE_SOURCE_ID)
        throw new ConfigError(
          `source ${id} is this stack's own source (SLUICE_SOURCE_ID), whose settings are the stack's environment: register the database under another id`,
        );
      const global = program.opts() as { include?: string; exclude?: string; startup?: string };
      const settings = applySettings(
        {
          ...(options.url ? { SLUICE_MYSQL_URL: options.url } : {}),
          ...(options.secret ? { SLUICE_MYSQL_SECRET_ID: options.secret } : {}),
          ...(global.include ? { SLUICE_INCLUDE: global.include } : {}),
          ...(global.exclude ? { SLUICE_EXCLUDE: global.exclude } : {}),
          ...(global.startup ? { SLUICE_STARTUP: global.startup } : {}),
        },
        options.set,
      );
      checkSourceSettings(settings);
      const config = sourceConfig(env, { id, settings });
      const record = await registry.add({ id, settings, paused: false, everyMinutes: options.every, iceberg: options.iceberg }, Date.now());
      cli.out(`registered ${describe(masked(record))}`);
      for (const line of await sourceAlarms(env, id, 'create', record.everyMinutes)) cli.out(line);
      cli.out(
        `its output goes to s3://${config.bucket}/${config.prefix}; the schedule captures it from its next due tick, or now: sluice capture --once --source ${id}`,
      );
    });

  sources
    .command('set <id> [settings...]')
    .description('change a source: KEY=VALUE sets a setting, KEY= unsets it; validated before it is written')
    .addOption(every())
    .option('--iceberg', "include it in the stack's Iceberg merge")
    .option('--no-iceberg', "leave it out of the stack's Iceberg merge")
    .action(async (id: string, changes: string[], options: { every?: number; iceberg?: boolean }) => {
      const { sourceConfig } = await import('../../fleet/source-config.ts');
      const { env, registry, masked } = await fleet();
      const current = await registry.get(id);
      // update() names a missing id the same way; asking first gives the settings to change.
      const settings = applySettings({ ...(current?.settings ?? {}) }, changes);
      if (current) sourceConfig(env, { id, settings });
      const record = await registry.update(
        id,
        {
          settings,
          ...(options.every !== undefined ? { everyMinutes: options.every } : {}),
          ...(options.iceberg !== undefined ? { iceberg: options.iceberg } : {}),
        },
        Date.now(),
      );
      cli.out(`changed ${describe(masked(record))}`);
      // Its alarms' thresholds follow its schedule; a paused source's stay silent.
      if (options.every !== undefined && options.every !== current?.everyMinutes)
        for (const line of await sourceAlarms(env, id, 'update', record.everyMinutes)) cli.out(line);
      if (options.every !== undefined && record.paused) await sourceAlarms(env, id, 'pause');
    });

  for (const [name, paused] of [
    ['pause', true],
    ['resume', false],
  ] as const)
    sources
      .command(`${name} <id>`)
      .description(paused ? 'stop scheduling it (a run under way finishes; its position and output stay)' : 'schedule it again, from its stored position')
      .action(async (id: string) => {
        const { env, registry, masked } = await fleet();
        cli.out(`${paused ? 'paused' : 'resumed'} ${describe(masked(await registry.update(id, { paused }, Date.now())))}`);
        for (const line of await sourceAlarms(env, id, paused ? 'pause' : 'resume')) cli.out(line);
      });

  sources
    .command('remove <id>')
    .description('unregister a source; its output, Iceberg tables and state stay (the command prints how to delete them)')
    .action(async (id: string) => {
      const { env, registry } = await fleet();
      const { sourcePrefix } = await import('../../fleet/source-config.ts');
      const record = await registry.remove(id);
      for (const line of removalNotes(env, record, sourcePrefix(env, record), await configOf(env, record))) cli.out(line);
      for (const line of await sourceAlarms(env, id, 'delete')) cli.out(line);
    });
}

/**
 * A source's alarms (lib/fleet/alarms.ts) on the stack's topic, kept in step with its record; the
 * lines saying what was done. Without SLUICE_ALARM_TOPIC_ARN (a local stack) there are none.
 */
async function sourceAlarms(
  env: Record<string, string>,
  id: string,
  change: 'create' | 'update' | 'pause' | 'resume' | 'delete',
  everyMinutes = 1,
): Promise<string[]> {
  const { alarmSettings, sourceAlarms: alarms } = await import('../../fleet/alarms.ts');
  const settings = alarmSettings(env);
  if (!settings) return change === 'create' ? ['no alarms: SLUICE_ALARM_TOPIC_ARN (the stack sets it on its functions) is not set'] : [];
  const { CloudWatchClient, DeleteAlarmsCommand, DisableAlarmActionsCommand, EnableAlarmActionsCommand, PutMetricAlarmCommand } = await import(
    '@aws-sdk/client-cloudwatch'
  );
  const { sdkSettings } = await import('../../aws.ts');
  const cloudwatch = new CloudWatchClient({ ...sdkSettings(env, 'CLOUDWATCH'), maxAttempts: 5 });
  try {
    const inputs = alarms(settings, id, everyMinutes);
    const AlarmNames = inputs.map((a) => a.AlarmName as string);
    if (change === 'create' || change === 'update') for (const input of inputs) await cloudwatch.send(new PutMetricAlarmCommand(input));
    else if (change === 'pause') await cloudwatch.send(new DisableAlarmActionsCommand({ AlarmNames }));
    else if (change === 'resume') await cloudwatch.send(new EnableAlarmActionsCommand({ AlarmNames }));
    else await cloudwatch.send(new DeleteAlarmsCommand({ AlarmNames }));
    const did = {
      create: 'created, sent to',
      update: 'updated for its schedule, on',
      pause: 'silenced while paused, on',
      resume: 'sending again to',
      delete: 'deleted from',
    }[change];
    return [`alarms ${AlarmNames.join(', ')} ${did} ${settings.topicArn}`];
  } finally {
    cloudwatch.destroy();
  }
}

/** `KEY=VALUE` sets, `KEY=` unsets; anything else is refused before anything is written. */
function applySettings(settings: Record<string, string>, changes: readonly string[]): Record<string, string> {
  for (const change of changes) {
    const eq = change.indexOf('=');
    if (eq <= 0) throw new ConfigError(`"${change}" is not KEY=VALUE (KEY= unsets the setting)`);
    const [key, value] = [change.slice(0, eq), change.slice(eq + 1)];
    if (value === '') delete settings[key];
    else settings[key] = value;
  }
  return settings;
}

/** The settings that may hold a secret, shown without it (the URL's password, the REST catalog's token and client secret). */
async function masker(): Promise<(record: SourceRecord) => SourceRecord> {
  const { redact } = await import('../../source/mysql/target.ts');
  return (record) => {
    const settings = { ...record.settings };
    if (settings.SLUICE_MYSQL_URL) settings.SLUICE_MYSQL_URL = redact(settings.SLUICE_MYSQL_URL);
    if (settings.SLUICE_ICEBERG_REST_TOKEN) settings.SLUICE_ICEBERG_REST_TOKEN = '***';
    if (settings.SLUICE_ICEBERG_REST_CREDENTIAL) settings.SLUICE_ICEBERG_REST_CREDENTIAL = `${settings.SLUICE_ICEBERG_REST_CREDENTIAL.split(':')[0]}:***`;
    return { ...record, settings };
  };
}

/** One line: id, state, schedule, Iceberg, connection, then the other settings. */
function describe(record: SourceRecord): string {
  const { SLUICE_MYSQL_URL: url, SLUICE_MYSQL_SECRET_ID: secret, ...rest } = record.settings;
  const others = Object.entries(rest)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([k, v]) => `${k}=${v}`);
  return [
    record.id,
    record.paused ? 'paused' : 'active',
    `every ${record.everyMinutes} min`,
    `iceberg ${record.iceberg ? 'on' : 'off'}`,
    url ?? (secret ? `secret ${secret}` : 'no connection'),
    ...others,
  ].join('  ');
}

/** The removed source's configuration, for where its output is; undefined if its record no longer makes one. */
async function configOf(env: Record<string, string>, record: SourceRecord): Promise<Config | undefined> {
  const { sourceConfig } = await import('../../fleet/source-config.ts');
  try {
    return sourceConfig(env, record);
  } catch {
    return undefined;
  }
}

/** What `sources remove` leaves, and how to delete it. */
function removalNotes(env: Record<string, string>, record: SourceRecord, prefix: string, config: Config | undefined): string[] {
  const { id } = record;
  const bucket = env.SLUICE_BUCKET ?? '<bucket>';
  const table = env.SLUICE_STATE_TABLE;
  const catalog = config?.iceberg.catalog;
  return [
    `removed source ${id} from the fleet: no schedule runs it any more (a run under way finishes its commit).`,
    'Kept, until you delete them:',
    `  its output: s3://${bucket}/${prefix} (the change log; its Iceberg tables under ${prefix}iceberg/)`,
    ...(catalog?.kind === 'glue'
      ? [`  its Iceberg tables in the Glue database ${catalog.database}: aws glue delete-table --database-name ${catalog.database} --name <table>`]
      : catalog?.kind === 'rest'
        ? [`  its Iceberg tables in the REST catalog ${catalog.uri}${catalog.namespace ? `, namespace ${catalog.namespace.join('.')}` : ''}: drop them there`]
        : []),
    `  its state items in ${table}: source#${id} (position, commit sequence), snapshots#${id}, snapshot#${id}#… and chunk#${id}#… (snapshot jobs and chunks), iceberg#${id}#… (the merge's tables).`,
    `    \`sluice state export --source ${id}\` still prints its position; \`sluice sources add ${id} …\` again resumes from it.`,
    'To delete them:',
    `  aws s3 rm --recursive s3://${bucket}/${prefix}`,
    `  aws dynamodb scan --table-name ${table} --projection-expression pk --filter-expression 'pk IN (:s, :j) OR begins_with(pk, :p) OR begins_with(pk, :c) OR begins_with(pk, :i)' --expression-attribute-values '{":s":{"S":"source#${id}"},":j":{"S":"snapshots#${id}"},":p":{"S":"snapshot#${id}#"},":c":{"S":"chunk#${id}#"},":i":{"S":"iceberg#${id}#"}}'`,
    `    then, for each pk it lists: aws dynamodb delete-item --table-name ${table} --key '{"pk":{"S":"<pk>"}}'`,
  ];
}
