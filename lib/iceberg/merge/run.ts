import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { noFaults } from '../../commit/faults.ts';
import type { Lease } from '../../commit/lease.ts';
import type { CommitContext } from '../../commit/protocol.ts';
import { formatTableRef, type TableRef } from '../../core/table-ref.ts';
import { ChangeLog } from '../../materialize/change-log.ts';
import { pad } from '../../sink/s3/keys.ts';
import { type ObjectStore, s3ObjectStore } from '../../sink/s3/object-store.ts';
import type { MergeState } from '../../state/iceberg-store.ts';
import { fileCatalog, type IcebergCatalog } from '../catalog/port.ts';
import type { TableVersion } from '../table/table.ts';
import { deletesInBucketOnly, fenced } from './fenced-store.ts';
import { icebergLocation, type TableLocation } from './spec.ts';
import type { MergeDeps, MergeOptions } from './types.ts';

/** One merge run: its clients, lease owner and fenced store, the change log as it reads it (manifests cached), and the table it holds. */
export class MergeRun {
  readonly clock: () => number;
  readonly owner: string;
  readonly changeLog: ChangeLog;
  readonly started: number;
  readonly store: ObjectStore;
  readonly catalog: IcebergCatalog;
  readonly ctx: CommitContext;
  /** This run's part of the names of the files it stages: a run that lost its lease never writes a key another run's commit names. */
  readonly attempt = randomBytes(4).toString('hex');
  /** The table being merged and its lease: once the lease may have run out, nothing is written. */
  lease: { table: TableRef; lease: Lease<MergeState> } | undefined;

  constructor(
    readonly deps: MergeDeps,
    readonly options: MergeOptions,
  ) {
    this.clock = deps.clock ?? Date.now;
    this.owner = options.owner ?? `merge-${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`; // unique: a lease held under it is this run's
    this.started = this.clock();
    this.changeLog = ChangeLog.over(deps.s3, deps.config);
    // Under a location a catalog assigned, deleting is the catalog's job (S3 Tables allows no client
    // deletes there; its unreferenced-file removal collects what no snapshot names).
    const own = deletesInBucketOnly(s3ObjectStore(deps.s3, deps.config.bucket), (keys) =>
      deps.log.debug("left to the catalog's unreferenced-file removal: objects under its table location sluice does not delete", {
        objects: keys.length,
        keys: keys.slice(0, 20),
      }),
    );
    this.store = fenced(own, () => this.checkLease());
    const catalog = deps.catalog ?? fileCatalog(this.store);
    const locate = catalog.locate?.bind(catalog);
    const maintained = catalog.maintained?.bind(catalog);
    this.catalog = {
      publish: async (table, version) => {
        this.checkLease();
        await catalog.publish(table, version);
      },
      ...(locate
        ? {
            locate: async (table: TableRef) => {
              this.checkLease();
              return await locate(table);
            },
          }
        : {}),
      ...(maintained ? { maintained: (table, version) => maintained(table, version) } : {}),
    };
    this.ctx = { s3: deps.s3, bucket: deps.config.bucket, faults: deps.faults ?? noFaults, log: deps.log, clock: this.clock };
  }

  get config() {
    return this.deps.config;
  }

  /** The names this run's files of the table's next merge take: `m<merge seq>_<attempt>`. */
  tagFor(state: MergeState): string {
    return `m${pad(state.mergeSeq + 1)}_${this.attempt}`;
  }

  /**
   * Where the table's objects go (see TableLocation): a table with a committed version keeps the
   * location its metadata names (no catalog call); a new one goes where the catalog that assigns
   * locations placed it (creating it there), else under sluice's own.
   */
  async locationOf(table: TableRef, current: TableVersion | undefined): Promise<TableLocation> {
    const home = icebergLocation(this.config.prefix, table);
    if (current) return { home, files: this.store.keyOf(current.metadata.location) };
    if (!this.catalog.locate) return { home, files: home };
    const files = this.store.keyOf(await this.catalog.locate(table));
    this.deps.log.info('Iceberg table placed by the catalog', { table: formatTableRef(table), location: this.store.uri(files) });
    return { home, files };
  }

  /**
   * Refuses a write once the table's lease may have run out (its renewals failing): another run may
   * hold it by then, and this one's files or version-hint.text would land over that run's. The
   * last quarter of the lease is kept clear for writes in flight.
   */
  checkLease(): void {
    if (!this.lease) return;
    this.lease.lease.check(
      `the Iceberg merge of ${formatTableRef(this.lease.table)} could not renew its lease in time; it stops before writing more (the next run redoes it)`,
    );
  }
}
