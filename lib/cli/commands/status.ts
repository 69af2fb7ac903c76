import type { Command } from 'commander';
import { formatPosition } from '../../core/position.ts';
import type { FleetSourceStatus, SourceStatus } from '../../ops/status.ts';
import type { Cli } from '../cli.ts';

/** `sluice status`: the source, its snapshots and the Iceberg merge, for people or as JSON. */
export function statusCommand(program: Command, cli: Cli): void {
  program
    .command('status')
    .description('stored vs server position, lag, last commit, lease, pending renames, errors, snapshots, the Iceberg merge per table')
    .option('--json', 'machine-readable output')
    .action(async (options: { json?: boolean }) => {
      const { snapshotSummaries } = await import('../../snapshot/progress.ts');
      const { fleetStatus, sourceStatus } = await import('../../ops/status.ts');
      const { icebergStatus } = await import('../../iceberg/merge/status.ts');
      const { config, clients, env } = await cli.configure(program.opts());
      const status = await sourceStatus(config, clients.store, Date.now(), clients.s3);
      const iceberg = await icebergStatus({ config, s3: clients.s3, merges: clients.merges, snapshots: clients.snapshots }, status.commitSeq);
      const snapshots = await snapshotSummaries(clients.snapshots, config.sourceId);
      // Without --source: the stack's own source as before, then one line per registered source
      // with its latest snapshot and its Iceberg merge.
      const records = program.opts().source === undefined ? await clients.registry.list() : [];
      const fleet =
        program.opts().source === undefined
          ? await Promise.all(
              (await fleetStatus(env, records, clients.store)).map(async (source, i) => {
                if (!source.status) return source;
                const { sourceConfig } = await import('../../fleet/source-config.ts');
                const sourceDeps = {
                  config: sourceConfig(env, records[i] as (typeof records)[number]),
                  s3: clients.s3,
                  merges: clients.merges,
                  snapshots: clients.snapshots,
                };
                return {
                  ...source,
                  snapshot: (await snapshotSummaries(clients.snapshots, source.id))[0],
                  icebergTables: source.iceberg ? await icebergStatus(sourceDeps, source.status.commitSeq) : [],
                };
              }),
            )
          : undefined;
      if (options.json) return cli.out(JSON.stringify({ ...status, snapshot: snapshots[0], snapshots, iceberg, ...(fleet ? { fleet } : {}) }, null, 2));
      const rows: [string, string][] = [
        ['source', status.source],
        ['stored position', status.stored ? formatPosition(status.stored) : 'none (never ran)'],
        [
          'binlog history',
          `history epoch ${status.epoch}${status.epoch ? '' : ' (never changed)'}${status.resync ? `; the next run resets and copies every table again (${status.resync.reason}, ${status.resync.at})` : ''}`,
        ],
        ...(status.lastReposition ? [['followed', repositionText(status.lastReposition)] as [string, string]] : []),
        ['server position', status.master ? formatPosition(status.master) : `unknown (${status.mysqlError})`],
        ['lag', status.lagBytes === undefined ? '-' : `${status.lagBytes} bytes of binlog`],
        ['commits', `${status.commitSeq}${status.lastCommitAt ? `, last at ${status.lastCommitAt}` : ''}`],
        ['lease', status.lease ? `${status.lease.owner} until ${status.lease.expiresAt}${status.lease.live ? '' : ' (expired)'}` : 'free'],
        ['pending renames', status.pending ? `commit ${status.pending.commitSeq} (${status.pending.objects} objects)` : 'none'],
      ];
      rows.push([
        'purge risk',
        status.timeToPurgeSeconds === undefined
          ? '-'
          : status.timeToPurgeSeconds === null
            ? 'none: the server does not purge binlogs automatically'
            : `the stored binlog may be purged in ${Math.round(status.timeToPurgeSeconds / 60)} min (retention ${Math.round((status.retentionSeconds ?? 0) / 3600)} h)`,
      ]);
      if (typeof status.timeToPurgeSeconds === 'number' && status.timeToPurgeSeconds < 6 * 3600 && status.positionOnServer !== false) {
        rows.push(['WARNING', 'the binlog sluice still needs is close to being purged: check that the poller runs and keeps up (docs/RUNBOOK.md)']);
      }
      if (status.positionOnServer === false) rows.push(['WARNING', 'the stored binlog file is no longer on the server: re-snapshot or reset the position']);
      for (const warning of status.warnings ?? []) rows.push(['WARNING', warning]);
      if (status.error) rows.push(['error', `${status.error.code}: ${status.error.message}`]);
      // Automatic decisions stay visible while the table's version is the one they made (docs/RUNBOOK.md, "DDL sluice cannot classify").
      for (const d of status.unclassifiedDdl ?? [])
        rows.push([
          'unclassified DDL',
          `${d.table} at ${d.position}: ${d.kind === 'noop' ? 'recorded as changing nothing' : d.kind === 'resnapshot' ? 're-copied' : d.kind} (decided by ${d.decidedBy === 'sluice' ? 'sluice, SLUICE_DDL_UNKNOWN=resnapshot' : 'an operator, SLUICE_DDL_OVERRIDES'}; ${d.reason})`,
        ]);
      for (const snapshot of snapshots) {
        rows.push(['snapshot', `${snapshot.id} (${snapshot.status})${snapshot.reason ? `: ${snapshot.reason}` : ''}`]);
        if (snapshot.error) rows.push(['  error', `${snapshot.error.code}: ${snapshot.error.message}`]);
        for (const t of snapshot.tables) {
          rows.push([
            `  ${t.table}`,
            `${t.rows.toLocaleString('en-US')}/${t.estimatedRows.toLocaleString('en-US')} rows, ${t.chunksDone}/${t.chunks} chunks, ${t.rowsPerSecond.toLocaleString('en-US')} rows/s${t.etaSeconds ? `, ETA ${t.etaSeconds}s` : ''}`,
          ]);
        }
      }
      if (iceberg.length) rows.push(['iceberg', `${iceberg.length} table${iceberg.length === 1 ? '' : 's'} merged (sluice iceberg)`]);
      for (const t of iceberg) {
        const files =
          t.dataFiles === undefined
            ? 'no files yet'
            : `${t.records?.toLocaleString('en-US')} row${t.records === 1 ? '' : 's'} in ${t.dataFiles} data + ${t.deleteFiles} delete files`;
        const state = t.held ? `held: ${t.held}` : t.gone ? 'gone from the source (kept, empty)' : `${t.behind} commit${t.behind === 1 ? '' : 's'} behind`;
        rows.push([`  ${t.table}`, `commit ${t.commitSeq}, ${state}; ${files}; ${t.lastCompactedAt ? `compacted ${t.lastCompactedAt}` : 'not compacted'}`]);
        if (t.lease?.live) rows.push(['    lease', `${t.lease.owner} until ${t.lease.expiresAt}`]);
        if (t.error) rows.push(['    error', `${t.error.code}: ${t.error.message} (at ${new Date(t.error.at).toISOString()})`]);
      }
      if (fleet?.length) {
        rows.push(['fleet', `${fleet.length} registered source${fleet.length === 1 ? '' : 's'} (\`sluice status --source <id>\` for one in detail)`]);
        for (const source of fleet) rows.push([`  ${source.id}`, fleetLine(source)]);
      }
      for (const [k, v] of rows) cli.out(`${k.padEnd(16)} ${v}`);
    });
}

/** A registered source in one line: schedule, position, lag, last commit, lease, snapshot, Iceberg, error. */
function fleetLine(
  source: FleetSourceStatus & {
    snapshot?: { id: string; status: string; tables: readonly { chunksDone: number; chunks: number }[] };
    icebergTables?: readonly { behind: number; held?: string; error?: unknown }[];
  },
): string {
  const schedule = `${source.paused ? 'PAUSED' : 'active'}, every ${source.everyMinutes} min${source.iceberg ? '' : ', no iceberg'}`;
  const s = source.status;
  if (!s) return `${schedule}; its record makes no configuration: ${source.configError?.split('\n').join(' ')}`;
  return [
    schedule,
    s.stored ? `at ${formatPosition(s.stored)}` : 'never ran',
    s.lagBytes !== undefined ? `lag ${s.lagBytes} bytes` : `lag unknown${s.mysqlError ? ` (${s.mysqlError})` : ''}`,
    `${s.commitSeq} commits${s.lastCommitAt ? `, last at ${s.lastCommitAt}` : ''}`,
    s.lease?.live ? `leased by ${s.lease.owner} until ${s.lease.expiresAt}` : 'lease free',
    ...(s.pending ? [`commit ${s.pending.commitSeq} being renamed`] : []),
    ...(source.snapshot ? [`snapshot ${source.snapshot.id} ${source.snapshot.status} (${snapshotChunks(source.snapshot.tables)})`] : []),
    ...(source.icebergTables?.length ? [icebergLine(source.icebergTables)] : []),
    ...(s.error ? [`error ${s.error.code}: ${s.error.message}`] : []),
  ].join('; ');
}

const snapshotChunks = (tables: readonly { chunksDone: number; chunks: number }[]) =>
  `${tables.reduce((a, t) => a + t.chunksDone, 0)}/${tables.reduce((a, t) => a + t.chunks, 0)} chunks`;

/** A source's Iceberg merge in a few words: tables, the furthest behind, held and failing ones. */
function icebergLine(tables: readonly { behind: number; held?: string; error?: unknown }[]): string {
  const held = tables.filter((t) => t.held).length;
  const failing = tables.filter((t) => t.error).length;
  return [
    `iceberg ${tables.length} table${tables.length === 1 ? '' : 's'}, at most ${Math.max(...tables.map((t) => t.behind))} commits behind`,
    ...(held ? [`${held} held`] : []),
    ...(failing ? [`${failing} failing`] : []),
  ].join(', ');
}

/** `sluice status`'s line for the last automatic move to another binlog history. */
function repositionText(r: NonNullable<SourceStatus['lastReposition']>): string {
  const server = (end: { serverId?: number; serverUuid?: string }) =>
    end.serverId === undefined ? '' : ` (server_id ${end.serverId}${end.serverUuid ? `, ${end.serverUuid}` : ''})`;
  return `${r.at}: the binlog history changed (${r.evidence}); followed the transactions by GTID ${r.gtid} from ${formatPosition(r.from.position)}${server(r.from)} to ${formatPosition(r.to.position)}${server(r.to)}, history epoch ${r.epoch}, nothing copied again`;
}
