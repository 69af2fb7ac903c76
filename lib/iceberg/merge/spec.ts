import { tablePath } from '../../core/table-path.ts';
import type { TableRef } from '../../core/table-ref.ts';
import type { Column } from '../../format/types.ts';
import type { TableHistory } from '../../materialize/history.ts';
import type { TableSpec } from '../table/table.ts';

/*
 * Where a source table's Iceberg table lives and what its schema is, as the merge and the rewrite
 * (lib/iceberg/merge/merge.ts, rewrite.ts) both stage it.
 */

/** The Iceberg table of a source table: `<prefix>iceberg/<db-seg>/<table-seg>`. */
export const icebergLocation = (prefix: string, table: TableRef) => `${prefix}iceberg/${tablePath(table)}`;

/**
 * Where a table's objects go: `home` (sluice's metadata chain, version-hint.text, its bookkeeping
 * objects: always `icebergLocation` in SLUICE_BUCKET, where the ledger, `sluice status` and
 * file-catalog readers find them) and `files` (data and delete files, manifests, manifest lists,
 * and the metadata's `location`: `home`, or the absolute `s3://` location a REST catalog assigned).
 */
export interface TableLocation {
  readonly home: string;
  readonly files: string;
}

/**
 * The Iceberg layer's description of schema version `to`; `from` is the version the Iceberg table is
 * at (sluice column ids say which columns were renamed, or dropped and added again under one name).
 */
export function spec(history: TableHistory, at: string | TableLocation, to: number, from: number | undefined, recreateAll = false): TableSpec {
  const location = typeof at === 'string' ? { home: at, files: at } : at;
  const v = history.version(to);
  const columns: Column[] = v.columns.map((c) => ({ name: c.name, kind: c.kind, sqlType: c.type, ...(c.fsp !== undefined ? { fsp: c.fsp } : {}) }));
  const renamed = new Map<string, string>();
  const recreated = new Set<string>(recreateAll ? v.columns.map((c) => c.name) : []);
  if (from !== undefined && !recreateAll) {
    const old = history.version(from);
    for (const c of v.columns) {
      const before = old.columns.find((o) => o.id === c.id);
      if (before && before.name !== c.name) renamed.set(c.name, before.name);
      else if (!before && old.columns.some((o) => o.name === c.name)) recreated.add(c.name);
    }
  }
  return { location: location.home, ...(location.files !== location.home ? { files: location.files } : {}), columns, key: v.key ?? [], renamed, recreated };
}
