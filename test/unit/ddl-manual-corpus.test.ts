import { describe, expect, it } from 'vitest';
import { evolve, type SchemaVersion } from '../../lib/schema/version.ts';
import { classifyDdl } from '../../lib/source/mysql/ddl/classify.ts';
import { mysqlComments } from '../support/comment-rules.ts';
import { MYSQL_MANUAL } from '../support/manual-ddl.ts';

/*
 * The MySQL 8.0 manual's CREATE/ALTER TABLE examples (test/support/manual-ddl.ts), classified and
 * evolved as a MySQL 8.0 server would have logged them. No MySQL server runs here, so a derived
 * schema cannot be checked against one (the MariaDB corpus is: test/integration/ddl-manual-corpus);
 * what is asserted is that none is left unknown. docs/RUNBOOK.md reports the counts.
 */

describe("the MySQL 8.0 manual's CREATE/ALTER TABLE examples", () => {
  it('are all classified and evolve without an unknown', async () => {
    const counts = { classified: 0, unknown: 0 };
    const unknown: string[] = [];
    for (const { page, statements } of MYSQL_MANUAL) {
      const versions = new Map<string, SchemaVersion | undefined>();
      for (const statement of statements) {
        const classified = await classifyDdl(statement, { defaultDb: 'd', comments: mysqlComments(80046) });
        let known = classified.kind !== 'unknown';
        if (classified.kind === 'tables')
          for (const { table, change } of classified.effects) {
            const source = change.kind === 'rename-in' ? versions.get(`moved:${table.table}`) : undefined;
            if (change.kind === 'rename-out') versions.set(`moved:${change.to.table}`, versions.get(table.table));
            const evolved = evolve(versions.get(table.table), change, {
              db: 'd',
              table: table.table,
              source,
              databaseCollation: 'utf8mb4_0900_ai_ci',
              explicitDefaultsForTimestamp: true,
              strictSqlMode: true,
            });
            if (evolved.path === 'unknown') known = false;
            versions.set(table.table, evolved.next);
          }
        counts[known ? 'classified' : 'unknown']++;
        if (!known) unknown.push(`${page}: ${statement}`);
      }
    }
    expect(unknown).toEqual([]);
    expect(counts).toEqual({ classified: 18, unknown: 0 });
  });
});
