import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { evolve, type SchemaVersion } from '../../lib/schema/version.ts';
import { classifyDdl } from '../../lib/source/mysql/ddl/classify.ts';
import { mariadbComments, mysqlComments } from '../support/comment-rules.ts';
import { splitStatements } from '../support/sql-script.ts';

/*
 * Debezium's MySQL and MariaDB connector test scripts (/work/shared/peer-data/debezium, README
 * there) as the binlog would carry their DDL: every statement is classified and every table's
 * versions evolved through the script, as the writing server (MySQL 9.6 for the MySQL scripts,
 * MariaDB for the `maria*` ones and the adapted `sql/` copies) reads it. None may be unknown: a
 * statement sluice cannot read costs a copy of its tables (or, with SLUICE_DDL_UNKNOWN=stop, stops
 * capture with DDL_UNKNOWN).
 */

const ROOT = resolve(process.env.SLUICE_DEBEZIUM_SCRIPTS ?? join(import.meta.dirname, '../../../shared/peer-data/debezium'));
const DML = /^\s*(INSERT|UPDATE|DELETE|REPLACE|SELECT|SET|USE|CALL|COMMIT|BEGIN|START|FLUSH|LOCK|UNLOCK)\b/i;

interface Server {
  readonly serverKind: 'mysql' | 'mariadb';
  readonly serverVersion: number;
}

/** What stops capture in one script: `file: statement → reason`. */
async function refusals(file: string, server: Server): Promise<{ ddl: number; refused: string[] }> {
  // Debezium's loader drops lines that start with `--` (`---` included, which no server would read as a comment).
  const text = readFileSync(file, 'utf8')
    .replaceAll('$DB$', 'dbz')
    .split('\n')
    .filter((line) => !line.trim().startsWith('--'))
    .join('\n');
  const versions = new Map<string, SchemaVersion | undefined>();
  const refused: string[] = [];
  let db = 'dbz';
  let ddl = 0;
  for (const statement of splitStatements(text)) {
    const use = /^USE\s+`?([^`\s;]+)`?\s*$/i.exec(statement);
    if (use) db = use[1] as string;
    if (DML.test(statement)) continue;
    ddl++;
    const short = statement.replace(/\s+/g, ' ').slice(0, 100);
    const result = await classifyDdl(statement, {
      defaultDb: db,
      comments: (server.serverKind === 'mysql' ? mysqlComments : mariadbComments)(server.serverVersion),
    });
    if (result.kind === 'unknown') refused.push(`${short} → ${result.reason}`);
    if (result.kind !== 'tables') continue;
    for (const { table, change } of result.effects) {
      const key = JSON.stringify([table.db, table.table]);
      const source = change.kind === 'create-like' ? versions.get(JSON.stringify([change.source.db, change.source.table])) : undefined;
      const evolved = evolve(versions.get(key), change, {
        db: table.db,
        table: table.table,
        source,
        databaseCollation: server.serverKind === 'mysql' ? 'utf8mb4_0900_ai_ci' : 'utf8mb4_unicode_ci',
        explicitDefaultsForTimestamp: true,
        strictSqlMode: true,
      });
      if (evolved.path === 'unknown') refused.push(`${short} → ${evolved.reason}`);
      versions.set(key, evolved.next);
    }
  }
  return { ddl, refused };
}

/** The scripts of one folder; fails (never skips) naming the folder when it is missing. */
function scripts(folder: string): string[] {
  const dir = join(ROOT, folder);
  if (!existsSync(dir)) throw new Error(`Debezium's test scripts not found at ${dir}: set SLUICE_DEBEZIUM_SCRIPTS to the folder holding sql/ and orig/`);
  return readdirSync(dir)
    .filter((f) => f.endsWith('.sql'))
    .sort();
}

describe("Debezium's test scripts", () => {
  it('are where SLUICE_DEBEZIUM_SCRIPTS (default ../shared/peer-data/debezium) says', () => {
    expect(existsSync(join(ROOT, 'orig')), `${ROOT}/orig: set SLUICE_DEBEZIUM_SCRIPTS to the folder of Debezium's scripts`).toBe(true);
  });

  it.each([
    ['orig', 'verbatim, as their MySQL 9.6 or MariaDB 11.8 server reads them'],
    ['sql', 'adapted to MariaDB 10.11'],
  ])('%s (%s): every DDL statement is classified and every table evolved', async (folder) => {
    let ddl = 0;
    const refused: string[] = [];
    for (const name of scripts(folder)) {
      const maria = folder === 'sql' || name.startsWith('maria');
      const server: Server = maria
        ? { serverKind: 'mariadb', serverVersion: folder === 'sql' ? 101119 : 110800 }
        : { serverKind: 'mysql', serverVersion: 90600 };
      const found = await refusals(join(ROOT, folder, name), server);
      ddl += found.ddl;
      refused.push(...found.refused.map((r) => `${name}: ${r}`));
    }
    expect(refused).toEqual([]);
    expect(ddl).toBeGreaterThan(100);
  });

  it('SERIAL DEFAULT VALUE is NOT NULL AUTO_INCREMENT UNIQUE of the integer column it follows', async () => {
    const result = await classifyDdl('CREATE TABLE t (id SMALLINT UNSIGNED SERIAL DEFAULT VALUE, v INT)', {
      defaultDb: 'd',
      comments: mysqlComments(80046),
    });
    if (result.kind !== 'tables') throw new Error(JSON.stringify(result));
    const next = evolve(undefined, (result.effects[0] as (typeof result.effects)[0]).change, { db: 'd', table: 't' }).next;
    expect(next?.columns[0]).toMatchObject({ name: 'id', type: 'smallint unsigned', nullable: false, autoIncrement: true });
    expect(next?.key).toEqual(['id']);
  });
});
