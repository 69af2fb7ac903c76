import { gunzipSync } from 'node:zlib';
import type { S3Client } from '@aws-sdk/client-s3';
import { tablePath, unsegment } from '../core/table-path.ts';
import type { TableRef } from '../core/table-ref.ts';
import { ErrorCode, SluiceError } from '../errors.ts';
import { type Manifest, readManifest } from '../format/manifest.ts';
import { manifestKey, pad } from '../sink/s3/keys.ts';
import { type ObjectStore, s3ObjectStore } from '../sink/s3/object-store.ts';

/*
 * The one reader of the change log: the committed manifests (binlog commits by number, snapshot
 * pages by job and table) and the tables the schema history knows. The Iceberg merge, `sluice
 * status`, `sluice materialize` and verify read the output through it; it only reads, and what a
 * manifest lists is committed (manifests are written by the commit protocol's rename).
 */

/** Where a source's change log is: the output's prefix and the source's id. */
export interface ChangeLogPlace {
  readonly prefix: string;
  readonly sourceId: string;
}

const sameTable = (a: TableRef, b: TableRef) => a.db === b.db && a.table === b.table;

/** A source's change log, read through an object store; binlog manifests are cached (they never change once committed). */
export class ChangeLog {
  private readonly commits = new Map<number, Manifest>();

  constructor(
    private readonly store: ObjectStore,
    private readonly place: ChangeLogPlace,
  ) {}

  /** The change log in `bucket` over S3. */
  static over(s3: S3Client, at: ChangeLogPlace & { readonly bucket: string }): ChangeLog {
    return new ChangeLog(s3ObjectStore(s3, at.bucket), at);
  }

  private async text(key: string): Promise<string | undefined> {
    const body = await this.store.get(key);
    return body === undefined ? undefined : new TextDecoder().decode(body);
  }

  /** Binlog commit `n`'s manifest (every commit up to the committed one has one); undefined when there is none. */
  async commit(n: number): Promise<Manifest | undefined> {
    const cached = this.commits.get(n);
    if (cached) return cached;
    const text = await this.text(manifestKey(this.place.prefix, this.place.sourceId, n));
    if (text === undefined) return undefined;
    const manifest = readManifest(text);
    this.commits.set(n, manifest);
    return manifest;
  }

  /** The committed manifests, binlog commits and snapshot pages, in key order (the order of the change feed). */
  async *manifests(): AsyncGenerator<Manifest> {
    const keys: string[] = [];
    for await (const key of this.store.list(`${this.place.prefix}manifests/${this.place.sourceId}/`)) keys.push(key);
    for (const key of keys.sort()) {
      const text = await this.text(key);
      if (text === undefined) throw new SluiceError(ErrorCode.ASSERTION, `manifest ${key} vanished`);
      yield readManifest(text);
    }
  }

  /** Every committed change event as its JSON line, in feed order. */
  async *eventLines(): AsyncGenerator<{ manifest: Manifest; line: string }> {
    for await (const manifest of this.manifests()) {
      for (const object of manifest.objects) {
        const body = await this.store.get(object.key);
        if (body === undefined) throw new SluiceError(ErrorCode.ASSERTION, `object ${object.key} of a committed manifest is missing`);
        for (const line of gunzipSync(body).toString('utf8').split('\n')) if (line) yield { manifest, line };
      }
    }
  }

  /** Every table the schema history knows (`schema/<source>/<db-seg>/<table-seg>/`). */
  async tables(): Promise<TableRef[]> {
    const root = `${this.place.prefix}schema/${this.place.sourceId}/`;
    const tables: TableRef[] = [];
    for (const db of await this.store.listFolders(root)) {
      if (db.startsWith('@')) continue;
      for (const table of await this.store.listFolders(`${root}${db}/`)) tables.push({ db: unsegment(db), table: unsegment(table) });
    }
    return tables;
  }

  /** The table's objects in binlog commits (from, to], their events, and its newest shape there. */
  async binlogObjects(table: TableRef, from: number, to: number) {
    const keys: string[] = [];
    let events = 0;
    let shape: Manifest['tables'][number] | undefined;
    for (let n = from + 1; n <= to; n++) {
      const manifest = await this.commit(n);
      if (!manifest) throw new SluiceError(ErrorCode.ASSERTION, `manifest ${pad(n)} of a committed commit is missing`);
      for (const o of manifest.objects)
        if (sameTable(o, table)) {
          keys.push(o.key);
          events += o.events;
        }
      shape = manifest.tables.find((t) => sameTable(t, table)) ?? shape;
    }
    return { keys, shape, events };
  }

  private get snapshotRoot() {
    return `${this.place.prefix}manifests/${this.place.sourceId}/snapshots/`;
  }

  /** The snapshot jobs that have page manifests. */
  snapshotJobs(): Promise<string[]> {
    return this.store.listFolders(this.snapshotRoot);
  }

  /** A job's page manifests of `table`, in page order: all are listed first, each is read as it is asked for. */
  async *pages(job: string, table: TableRef): AsyncGenerator<Manifest> {
    const keys: string[] = [];
    for await (const key of this.store.list(`${this.snapshotRoot}${job}/${tablePath(table)}/`)) keys.push(key);
    for (const key of keys.sort()) {
      const text = await this.text(key);
      if (text === undefined) throw new SluiceError(ErrorCode.ASSERTION, `snapshot page manifest ${key} vanished`);
      yield readManifest(text);
    }
  }
}

/** The committed manifests of a source, in commit order (the order of the change feed). */
export function manifests(s3: S3Client, bucket: string, prefix: string, sourceId: string): AsyncGenerator<Manifest> {
  return ChangeLog.over(s3, { bucket, prefix, sourceId }).manifests();
}

/** Every committed change event as its JSON line, in feed order. */
export function eventLines(s3: S3Client, bucket: string, prefix: string, sourceId: string): AsyncGenerator<{ manifest: Manifest; line: string }> {
  return ChangeLog.over(s3, { bucket, prefix, sourceId }).eventLines();
}
