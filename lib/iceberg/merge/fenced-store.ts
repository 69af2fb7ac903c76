import { type ObjectStore, outsideBucket } from '../../sink/s3/object-store.ts';

/* The merge's views of the object store: what it may delete, and no write once its lease may have run out. */

/**
 * `store` deleting only in its own bucket: objects under a location a catalog assigned are the
 * catalog's to remove (S3 Tables lets no client delete there; its unreferenced-file removal does),
 * so their keys are passed to `left` instead.
 */
export function deletesInBucketOnly(store: ObjectStore, left: (keys: readonly string[]) => void): ObjectStore {
  return {
    ...store,
    async delete(keys) {
      const outside = keys.filter(outsideBucket);
      if (outside.length) left(outside);
      const inside = outside.length ? keys.filter((k) => !outsideBucket(k)) : keys;
      if (inside.length) await store.delete(inside);
    },
  };
}

/** `store` with `check` run before every write: it throws to stop them (a merge that lost its lease). */
export function fenced(store: ObjectStore, check: () => void): ObjectStore {
  return {
    ...store,
    async put(key, body, contentType) {
      check();
      await store.put(key, body, contentType);
    },
    async putFile(key, path) {
      check();
      await store.putFile(key, path);
    },
    async delete(keys) {
      check();
      await store.delete(keys);
    },
  };
}
