import { ErrorCode, SluiceError } from '../../errors.ts';
import type { Snapshot, TableMetadata } from '../files/metadata.ts';
import type { IcebergSchema } from '../files/schema.ts';
import { CatalogMaintainedError, descent, mainOf } from './ancestry.ts';

/* Publishing to a REST catalog as a diff: what sluice's committed metadata has that the catalog's table lacks, guarded by what it must still be. */

/** The property a created (not registered) table carries sluice's table uuid in. */
export const SLUICE_UUID = 'sluice.table-uuid';

/** A table a catalog created that no sluice commit reached yet: no sluice uuid, no snapshot. */
const unclaimed = (metadata: TableMetadata) => !metadata.properties?.[SLUICE_UUID] && !metadata.snapshots?.length && mainOf(metadata) === undefined;

/** Throws ICEBERG_CATALOG_CONFLICT unless a table the catalog holds may become a new sluice table (`locate`). */
export function adoptable(metadata: TableMetadata, label: string): void {
  const other = metadata.properties?.[SLUICE_UUID];
  if (other)
    throw new SluiceError(
      ErrorCode.ICEBERG_CATALOG_CONFLICT,
      `the Iceberg REST catalog's table ${label} is another sluice table (sluice.table-uuid ${other}) than the one this merge starts: drop it from the catalog, or point sluice at another namespace`,
    );
  if (!unclaimed(metadata))
    throw new SluiceError(
      ErrorCode.ICEBERG_CATALOG_CONFLICT,
      `the Iceberg REST catalog's table ${label} has snapshots sluice did not write (${metadata.snapshots.length}): another writer committed to it. Let only sluice write the table, or drop it from the catalog (the next run creates it)`,
    );
}

/**
 * A schema without its id, keys sorted and type names without blanks: two schemas with the same
 * fields are the same schema to a catalog, however it orders its JSON or spells a type (Java writes
 * `decimal(20, 0)` where sluice writes `decimal(20,0)`).
 */
function shape(schema: IcebergSchema): string {
  const sorted = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(sorted)
      : value && typeof value === 'object'
        ? Object.fromEntries(
            Object.entries(value)
              .filter(([, v]) => v !== undefined && v !== null)
              .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
              .map(([k, v]) => [k, k === 'type' && typeof v === 'string' ? v.replace(/\s+/g, '') : sorted(v)]),
          )
        : value;
  const fields = schema.fields.map((f) => sorted({ ...f, required: Boolean(f.required) }));
  return JSON.stringify({ fields, ids: [...(schema['identifier-field-ids'] ?? [])].sort((a, b) => a - b) });
}

/** A table commit (CommitTableRequest without the identifier). */
export interface CatalogCommit {
  readonly requirements: readonly Record<string, unknown>[];
  readonly updates: readonly Record<string, unknown>[];
}

/**
 * The commit that brings the catalog's table `current` to sluice's committed `target`, or undefined
 * when it is there already. Throws ICEBERG_CATALOG_CONFLICT when the catalog's table is not the
 * one sluice writes, or its `main` is not an ancestor of sluice's (another writer committed).
 */
export function catalogCommit(current: TableMetadata, target: TableMetadata, label: string, location = ''): CatalogCommit | undefined {
  // An unclaimed table is the one `locate` created for this table (the location check below holds it to sluice's).
  const ours = current['table-uuid'] === target['table-uuid'] || current.properties?.[SLUICE_UUID] === target['table-uuid'] || unclaimed(current);
  if (!ours)
    throw new SluiceError(
      ErrorCode.ICEBERG_CATALOG_CONFLICT,
      `the Iceberg REST catalog's table ${label} is another table (uuid ${current['table-uuid']}, sluice's is ${target['table-uuid']}): drop it from the catalog (the next run registers sluice's), or point sluice at another namespace`,
    );
  const at = current.location.replace(/\/+$/, '');
  if (at !== target.location.replace(/\/+$/, ''))
    throw new SluiceError(
      ErrorCode.ICEBERG_CATALOG_CONFLICT,
      `the Iceberg REST catalog keeps ${label} at ${at}, not at ${target.location} where sluice writes its files: for a catalog that assigns table locations (S3 Tables) set SLUICE_ICEBERG_REST_LOCATION=catalog before the table's first merge; a table sluice already wrote stays where it is, so drop the catalog's table and let the next merge register sluice's (docs/ICEBERG.md "REST catalogs")`,
    );
  const main = mainOf(current);
  const goal = target['current-snapshot-id'] !== undefined && target['current-snapshot-id'] >= 0 ? target['current-snapshot-id'] : undefined;
  // Others' compactions (`replace` snapshots) on sluice's history: on its newest, the version is
  // published already; on an older one, the merge rebases on them (SLUICE_ICEBERG_MAINTENANCE=catalog).
  const moved = descent(current, target, label);
  if (moved.replaced.length) {
    if (moved.from === goal) return undefined;
    throw new CatalogMaintainedError(current, location, moved, label);
  }
  const byId = new Map(target.snapshots.map((s) => [s['snapshot-id'], s]));
  // The snapshots after the catalog's main, oldest first.
  const chain: Snapshot[] = [];
  for (let id = goal; id !== undefined && id !== main; ) {
    const snapshot = byId.get(id);
    if (!snapshot) break;
    chain.unshift(snapshot);
    id = snapshot['parent-snapshot-id'];
  }
  const reached = main === undefined || main === goal || chain[0]?.['parent-snapshot-id'] === main;
  if (!reached)
    throw new SluiceError(
      ErrorCode.ICEBERG_CATALOG_CONFLICT,
      `the Iceberg REST catalog's table ${label} is at snapshot ${main}, which is not in sluice's history up to ${goal}: another writer committed to it. Let only sluice write the table, or drop it from the catalog (the next run registers sluice's)`,
    );

  const updates: Record<string, unknown>[] = [];
  const requirements: Record<string, unknown>[] = [
    { type: 'assert-table-uuid', uuid: current['table-uuid'] },
    { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': main ?? null },
    { type: 'assert-current-schema-id', 'current-schema-id': current['current-schema-id'] },
  ];
  // Schemas: the catalog numbers an added schema itself (its highest id + 1), so sluice's ids are mapped.
  const schemaIds = new Map<number, number>();
  const known = new Map(current.schemas.map((s) => [shape(s), s['schema-id']]));
  let highest = Math.max(-1, ...current.schemas.map((s) => s['schema-id']));
  let lastAdded: number | undefined;
  for (const schema of target.schemas) {
    const existing = known.get(shape(schema));
    if (existing !== undefined) {
      schemaIds.set(schema['schema-id'], existing);
      continue;
    }
    highest += 1;
    known.set(shape(schema), highest);
    schemaIds.set(schema['schema-id'], highest);
    lastAdded = highest;
    updates.push({ action: 'add-schema', schema, 'last-column-id': target['last-column-id'] });
  }
  if (lastAdded !== undefined) requirements.push({ type: 'assert-last-assigned-field-id', 'last-assigned-field-id': current['last-column-id'] });
  const schemaId = schemaIds.get(target['current-schema-id']) ?? target['current-schema-id'];
  if (schemaId !== current['current-schema-id']) updates.push({ action: 'set-current-schema', 'schema-id': schemaId === lastAdded ? -1 : schemaId });

  const present = new Set(current.snapshots.map((s) => s['snapshot-id']));
  for (const snapshot of chain) {
    if (present.has(snapshot['snapshot-id'])) continue;
    updates.push({ action: 'add-snapshot', snapshot: { ...snapshot, 'schema-id': schemaIds.get(snapshot['schema-id']) ?? snapshot['schema-id'] } });
  }
  if (goal !== undefined && goal !== main) updates.push({ action: 'set-snapshot-ref', 'ref-name': 'main', type: 'branch', 'snapshot-id': goal });
  // What sluice's expiry removed (its files are deleted once this publish is done): sluice's own
  // snapshots only, the catalog's main and its ancestors (main is in sluice's history, checked
  // above, and sluice commits nowhere else) — never a snapshot another writer left on another branch.
  const own = new Set<number>();
  const catalogs = new Map(current.snapshots.map((s) => [s['snapshot-id'], s]));
  for (let id = main; id !== undefined && !own.has(id); id = catalogs.get(id)?.['parent-snapshot-id']) own.add(id);
  const removed = current.snapshots.map((s) => s['snapshot-id']).filter((id) => own.has(id) && !byId.has(id) && id !== goal);
  if (removed.length) updates.push({ action: 'remove-snapshots', 'snapshot-ids': removed });
  // A table sluice did not register carries sluice's uuid as a property (set at create, or here for one the catalog placed).
  const wanted = current['table-uuid'] === target['table-uuid'] ? target.properties : { ...target.properties, [SLUICE_UUID]: target['table-uuid'] };
  const properties = Object.fromEntries(Object.entries(wanted).filter(([k, v]) => current.properties?.[k] !== v));
  if (Object.keys(properties).length) updates.push({ action: 'set-properties', updates: properties });
  return updates.length ? { requirements, updates } : undefined;
}
