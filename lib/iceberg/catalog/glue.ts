import { createHash } from 'node:crypto';
import {
  AlreadyExistsException,
  ConcurrentModificationException,
  CreateTableCommand,
  CreateTableOptimizerCommand,
  EntityNotFoundException,
  GetTableCommand,
  type Table,
  type TableOptimizerConfiguration,
  type TableOptimizerType,
  UpdateTableCommand,
} from '@aws-sdk/client-glue';
import type { TableRef } from '../../core/table-ref.ts';
import { ErrorCode, SluiceError } from '../../errors.ts';
import type { ObjectStore } from '../../sink/s3/object-store.ts';
import { parseJson } from '../files/json.ts';
import type { TableMetadata } from '../files/metadata.ts';
import { CatalogMaintainedError, descent, mainOf, maintainedSince } from './ancestry.ts';
import type { IcebergCatalog } from './port.ts';

/* The Glue Data Catalog: a table per source table, its metadata location swapped with optimistic locking, optimizers on request. */

/** What sluice calls on Glue (the SDK's GlueClient, or a fake in tests). */
export interface GlueLike {
  send(command: GetTableCommand): Promise<{ Table?: Table }>;
  send(command: CreateTableCommand | UpdateTableCommand | CreateTableOptimizerCommand): Promise<unknown>;
}

/** Glue's table optimizers for the tables sluice registers (SLUICE_GLUE_OPTIMIZER_ROLE_ARN): the role they run as, and the retention sluice's own expiry would keep. */
export interface GlueOptimizers {
  readonly roleArn: string;
  readonly retentionHours: number;
  readonly keepSnapshots: number;
}

/** What each optimizer is created with: compaction as Glue does it, retention by sluice's settings, orphans after Glue's default 3 days. */
function optimizerConfigurations(o: GlueOptimizers): [TableOptimizerType, TableOptimizerConfiguration][] {
  return [
    ['compaction', { roleArn: o.roleArn, enabled: true }],
    [
      'retention',
      {
        roleArn: o.roleArn,
        enabled: true,
        retentionConfiguration: {
          icebergConfiguration: {
            // Glue counts whole days, at least one.
            snapshotRetentionPeriodInDays: Math.max(1, Math.ceil(o.retentionHours / 24)),
            numberOfSnapshotsToRetain: Math.max(1, o.keepSnapshots),
            cleanExpiredFiles: true,
          },
        },
      },
    ],
    [
      'orphan_file_deletion',
      { roleArn: o.roleArn, enabled: true, orphanFileDeletionConfiguration: { icebergConfiguration: { orphanFileRetentionPeriodInDays: 3 } } },
    ],
  ];
}

/**
 * The Glue table name of a source table: `<db>__<table>`, lower case (Glue and Athena fold names),
 * every character other than `[a-z0-9_]` as `_`; a name that needed any change, or whose separator
 * would be ambiguous (`__` inside a name, `_` next to the separator: `a__b`.`c` and `a`.`b__c`,
 * `x_`.`y` and `x`.`_y`), gets a short hash of the exact names appended, so `Shop.A` and `shop.a`
 * (or `a-b` and `a_b`) stay apart.
 */
export function glueTableName(table: TableRef): string {
  const plain = `${table.db}__${table.table}`;
  const name = plain.toLowerCase().replace(/[^a-z0-9_]/g, '_');
  const separable = !/__|_$/.test(table.db) && !/__|^_/.test(table.table);
  if (name === plain && separable) return name;
  return `${name}_${createHash('sha256')
    .update(JSON.stringify([table.db, table.table]))
    .digest('hex')
    .slice(0, 8)}`;
}

/** The Hive type Glue lists for an Iceberg type (Athena reads the schema from the metadata file; this is for browsing). */
function hiveType(iceberg: string): string {
  if (iceberg.startsWith('decimal')) return iceberg;
  const types: Record<string, string> = { int: 'int', long: 'bigint', timestamptz: 'timestamp', time: 'string' };
  return types[iceberg] ?? iceberg;
}

/**
 * The Glue Data Catalog: one table per source table in `database`, `table_type=ICEBERG`,
 * `metadata_location` the current metadata file and `previous_metadata_location` the one before.
 * Updates are optimistic on the Glue table's version (`VersionId`): the update applies only if the
 * table still points at the version this commit replaced (or already at ours: a redo).
 */
export function glueCatalog(glue: GlueLike, database: string, store: ObjectStore, optimizers?: GlueOptimizers): IcebergCatalog {
  // Tables whose optimizers this process made sure of: one round of creates per table and process.
  const optimized = new Set<string>();
  /** Creates the table's optimizers, each once (one that exists already is left as it is: the user may have tuned it). */
  async function optimize(Name: string): Promise<void> {
    if (!optimizers || optimized.has(Name)) return;
    // The optimizers live in the catalog of the account the role (made by the same stack) belongs to.
    const CatalogId = optimizers.roleArn.split(':')[4];
    for (const [Type, TableOptimizerConfiguration] of optimizerConfigurations(optimizers)) {
      try {
        await glue.send(new CreateTableOptimizerCommand({ CatalogId, DatabaseName: database, TableName: Name, Type, TableOptimizerConfiguration }));
      } catch (error) {
        if (!(error instanceof AlreadyExistsException) && (error as { name?: string }).name !== 'AlreadyExistsException') throw error;
      }
    }
    optimized.add(Name);
  }
  return {
    async publish(table, version) {
      const Name = glueTableName(table);
      const location = store.uri(version.metadataKey);
      const previous = version.previousMetadataKey && store.uri(version.previousMetadataKey);
      const body = await store.get(version.metadataKey);
      if (!body) throw new SluiceError(ErrorCode.ICEBERG_FILE_MISSING, `Iceberg metadata ${version.metadataKey} does not exist`);
      const metadata = parseJson<TableMetadata>(new TextDecoder().decode(body));
      const schema = metadata.schemas.find((s) => s['schema-id'] === metadata['current-schema-id']);
      const label = `Glue table ${database}.${Name}`;
      const input = (parameters: Record<string, string>) => ({
        Name,
        TableType: 'EXTERNAL_TABLE',
        Description: `sluice: ${table.db}.${table.table}`,
        Parameters: { ...parameters, table_type: 'ICEBERG', metadata_location: location },
        StorageDescriptor: {
          Location: metadata.location,
          Columns: (schema?.fields ?? []).map((f) => ({ Name: f.name, Type: hiveType(f.type) })),
        },
      });
      for (let attempt = 0; attempt < 5; attempt++) {
        let current: Table | undefined;
        try {
          current = (await glue.send(new GetTableCommand({ DatabaseName: database, Name }))).Table;
        } catch (error) {
          if (!(error instanceof EntityNotFoundException) && (error as { name?: string }).name !== 'EntityNotFoundException') throw error;
        }
        try {
          if (!current) {
            await glue.send(new CreateTableCommand({ DatabaseName: database, TableInput: input({}) }));
            return await optimize(Name);
          }
          const at = current.Parameters?.metadata_location;
          if (at === location) return await optimize(Name);
          if (at !== undefined && at !== previous) {
            // Someone else's metadata: published over only when its main is sluice's (possibly with
            // snapshots expired); others' compactions on sluice's newest mean it is published.
            const theirs = await readMetadata(store, at);
            if (!theirs)
              throw new SluiceError(
                ErrorCode.ICEBERG_CATALOG_CONFLICT,
                `${label} points at ${at}, not at ${previous ?? 'nothing'} which this commit replaced: another writer changed it`,
              );
            const moved = descent(theirs, metadata, label);
            if (moved.replaced.length) {
              if (moved.from === mainOf(metadata)) return await optimize(Name);
              throw new CatalogMaintainedError(theirs, at, moved, label);
            }
          }
          const parameters = { ...current.Parameters, ...(at ? { previous_metadata_location: at } : {}) };
          await glue.send(new UpdateTableCommand({ DatabaseName: database, TableInput: input(parameters), VersionId: current.VersionId }));
          return await optimize(Name);
        } catch (error) {
          const name = (error as { name?: string }).name;
          // Someone changed it between our read and write: read again and decide again.
          if (error instanceof ConcurrentModificationException || error instanceof AlreadyExistsException) continue;
          if (name === 'ConcurrentModificationException' || name === 'AlreadyExistsException') continue;
          throw error;
        }
      }
      throw new SluiceError(ErrorCode.ICEBERG_CATALOG_CONFLICT, `Glue table ${database}.${Name} kept changing under the update`, { retriable: true });
    },

    async maintained(table, version) {
      const Name = glueTableName(table);
      const label = `Glue table ${database}.${Name}`;
      let at: string | undefined;
      try {
        at = (await glue.send(new GetTableCommand({ DatabaseName: database, Name }))).Table?.Parameters?.metadata_location;
      } catch (error) {
        if ((error as { name?: string }).name === 'EntityNotFoundException') return undefined;
        throw error;
      }
      if (at === undefined || at === store.uri(version.metadataKey)) return undefined;
      const [theirs, ours] = await Promise.all([readMetadata(store, at), readMetadata(store, store.uri(version.metadataKey))]);
      if (!ours) throw new SluiceError(ErrorCode.ICEBERG_FILE_MISSING, `Iceberg metadata ${version.metadataKey} does not exist`);
      if (!theirs) throw new SluiceError(ErrorCode.ICEBERG_CATALOG_CONFLICT, `${label} points at ${at}, which sluice cannot read: another writer changed it`);
      return maintainedSince(theirs, at, ours, label);
    },
  };
}

/** The metadata file at `uri`, or undefined when it is missing or outside the store's bucket. */
async function readMetadata(store: ObjectStore, uri: string): Promise<TableMetadata | undefined> {
  let key: string;
  try {
    key = store.keyOf(uri);
  } catch {
    return undefined;
  }
  const body = await store.get(key);
  return body ? parseJson<TableMetadata>(new TextDecoder().decode(body)) : undefined;
}
