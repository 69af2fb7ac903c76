import mysql from 'mysql2/promise';

/*
 * An application writing a table keyed by a case-insensitive composite key while sluice reads it
 * (issue #30): multi-statement transactions of value updates, key changes that MySQL sees as the
 * same row (case only, trailing spaces only under PAD SPACE) and to another key, deletes, REPLACE
 * and INSERT … ON DUPLICATE KEY UPDATE spelling the key in another case. Seeded, so a failing run
 * replays the same statements (their interleaving with sluice's reads still varies).
 */

/** Names `k1…kN`, each with n = 1, 2, 3 at the start. */
export const APP_NAMES = 300;

/** The table: `name` compares case-insensitively and ignores trailing spaces (utf8mb4_general_ci), unless `collation` says otherwise. */
export function appTable(table: string, collation = 'utf8mb4_general_ci'): string {
  return `CREATE TABLE ${table} (name VARCHAR(20) CHARACTER SET utf8mb4 COLLATE ${collation}, n INT, v INT, w VARCHAR(20), PRIMARY KEY (name, n))`;
}

/** Its first rows, spelled three ways: `k1` with n = 1, `K1` with n = 2, `k1 ` with n = 3, for `names` names. */
export function appSeed(table: string, names = APP_NAMES): string {
  const rows: string[] = [];
  for (let i = 1; i <= names; i++) rows.push(`('k${i}', 1, ${i}, 'seed')`, `('K${i}', 2, ${i}, 'seed')`, `('k${i} ', 3, ${i}, 'seed')`);
  return `INSERT INTO ${table} VALUES ${rows.join(', ')}`;
}

/** A tiny seeded generator (mulberry32). */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * One application connection writing `db`.`table` until `stop()`, which returns how many
 * transactions committed. `compress`: MySQL compresses each of its transactions (a session setting).
 */
export function keyedApp(adminUrl: string, db: string, table: string, seed: number, options: { compress?: boolean } = {}) {
  const rnd = random(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)] as T;
  const spell = (i: number) => pick([`k${i}`, `K${i}`, `k${i} `]);
  let running = true;
  let committed = 0;
  const done = (async () => {
    const conn = await mysql.createConnection({ uri: adminUrl, database: db });
    if (options.compress) await conn.query('SET SESSION binlog_transaction_compression = ON');
    try {
      while (running) {
        const statements = 1 + Math.floor(rnd() * 4);
        try {
          await conn.query('BEGIN');
          for (let s = 0; s < statements; s++) {
            const i = 1 + Math.floor(rnd() * APP_NAMES);
            const n = 1 + Math.floor(rnd() * 3);
            const r = rnd();
            if (r < 0.25) await conn.query(`UPDATE ${table} SET v = v + 1, w = ? WHERE name = ? AND n = ?`, [`u${seed}`, spell(i), n]);
            else if (r < 0.4) await conn.query(`UPDATE ${table} SET name = ? WHERE name = ? AND n = ?`, [spell(i), spell(i), n]);
            else if (r < 0.5) await conn.query(`UPDATE IGNORE ${table} SET n = n + 3, v = v + 1 WHERE name = ? AND n = ?`, [spell(i), n]);
            else if (r < 0.6) await conn.query(`DELETE FROM ${table} WHERE name = ? AND n = ?`, [spell(i), n]);
            else if (r < 0.75) await conn.query(`REPLACE INTO ${table} VALUES (?, ?, ?, 'replace')`, [spell(i), n, Math.floor(rnd() * 1000)]);
            else
              await conn.query(`INSERT INTO ${table} VALUES (?, ?, 0, 'new') ON DUPLICATE KEY UPDATE name = VALUES(name), v = v + 1, w = 'dup'`, [spell(i), n]);
          }
          await conn.query('COMMIT');
          committed++;
        } catch (error) {
          // A deadlock or lock wait between the app's connections, or a key taken (a binary collation
          // tells `k1` from `K1`): the transaction is rolled back, as an application would.
          await conn.query('ROLLBACK');
          if (![1213, 1205, 1062].includes((error as { errno?: number }).errno ?? 0)) throw error;
        }
      }
    } finally {
      await conn.end();
    }
  })();
  return {
    async stop(): Promise<number> {
      running = false;
      await done;
      return committed;
    },
  };
}
