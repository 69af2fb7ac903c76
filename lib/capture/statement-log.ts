import { formatPosition } from '../core/position.ts';
import type { Log } from '../log.ts';
import { lex, type Token } from '../source/mysql/ddl/lexer.ts';

/*
 * What the capture log says about a statement the binlog carries (DDL, users, grants, statement-based
 * DML): its kind from a fixed vocabulary and the captured tables it names, never its text. Binlog
 * statements hold passwords (`CREATE USER … IDENTIFIED BY`, `GRANT … IDENTIFIED BY`) and row values
 * (statement-based DML), and statements about databases or tables that are not captured are not
 * logged at all: the filter decides what sluice may even mention.
 */

const OBJECTS = new Set(['TABLE', 'DATABASE', 'SCHEMA', 'INDEX', 'VIEW', 'TRIGGER', 'PROCEDURE', 'FUNCTION', 'EVENT', 'USER', 'ROLE', 'SEQUENCE', 'SERVER']);
const STATEMENTS = new Set(['CREATE', 'ALTER', 'DROP', 'RENAME', 'TRUNCATE', 'GRANT', 'REVOKE', 'FLUSH', 'OPTIMIZE', 'ANALYZE', 'REPAIR', 'SET']);

export interface StatementSummary {
  /** e.g. `alter table`, `create user`, `grant`, `insert`; `other` outside the vocabulary. */
  readonly kind: string;
  /** The tables a table statement names (db defaulting to the session's), in order. */
  readonly tables: readonly { db: string; table: string }[];
  /** The database a database statement names. */
  readonly database?: string;
}

const name = (t: Token | undefined) => (t && (t.kind === 'word' || t.kind === 'ident') ? t.value : undefined);

/** Kind and names of a statement; nothing of its text beyond them. */
export function summarizeStatement(text: string, defaultDb: string): StatementSummary {
  let tokens: Token[];
  try {
    tokens = lex(text, { serverVersion: 999_999 });
  } catch {
    return { kind: 'other', tables: [] };
  }
  const first = tokens[0]?.kind === 'word' ? tokens[0].upper : '';
  if (!STATEMENTS.has(first)) return { kind: ['INSERT', 'UPDATE', 'DELETE', 'REPLACE'].includes(first) ? first.toLowerCase() : 'other', tables: [] };
  let i = 1;
  let object = first === 'TRUNCATE' ? 'TABLE' : '';
  // Skip modifiers (OR REPLACE, TEMPORARY, ONLINE, IGNORE, UNIQUE, DEFINER=…) up to the object keyword.
  for (; i < tokens.length && !object && i < 40; i++) {
    const t = tokens[i] as Token;
    if (t.kind === 'word' && OBJECTS.has(t.upper)) object = t.upper === 'SCHEMA' ? 'DATABASE' : t.upper;
  }
  if (first === 'TRUNCATE' && tokens[1]?.upper === 'TABLE') i = 2;
  if (first === 'GRANT' || first === 'REVOKE' || first === 'SET' || first === 'FLUSH') return { kind: first.toLowerCase(), tables: [] };
  const kind = object ? `${first} ${object}`.toLowerCase() : first.toLowerCase();
  // IF [NOT] EXISTS
  if (tokens[i]?.upper === 'IF') i += tokens[i + 1]?.upper === 'NOT' ? 3 : 2;
  if (object === 'DATABASE') return { kind, tables: [], database: name(tokens[i]) };
  if (object === 'INDEX') {
    while (i < tokens.length && tokens[i]?.upper !== 'ON') i++;
    i++;
  } else if (object !== 'TABLE') return { kind, tables: [] };
  const tables: { db: string; table: string }[] = [];
  while (i < tokens.length) {
    const a = name(tokens[i]);
    if (a === undefined) break;
    const dotted = tokens[i + 1]?.value === '.' && name(tokens[i + 2]) !== undefined;
    tables.push(dotted ? { db: a, table: name(tokens[i + 2]) as string } : { db: defaultDb, table: a });
    i += dotted ? 3 : 1;
    // Only DROP and RENAME name several tables (`a, b`; `a TO b, c TO d`).
    const separator = tokens[i];
    if (!(first === 'DROP' || first === 'RENAME') || !(separator?.value === ',' || separator?.upper === 'TO')) break;
    i++;
  }
  return { kind, tables };
}

/** Logs a statement the binlog carried, as (db, table, kind, position), for captured tables and databases only. */
export function logStatement(
  log: Log,
  captured: (db: string, table: string) => boolean,
  statement: { db: string; query: string },
  position: { file: string; pos: number },
): void {
  const summary = summarizeStatement(statement.query, statement.db);
  const at = formatPosition(position);
  for (const { db, table } of summary.tables) if (captured(db, table)) log.info('schema change', { db, table, kind: summary.kind, position: at });
  // A database counts as captured when the filter lets its tables through (`db\..*`-style patterns).
  if (summary.database !== undefined && captured(summary.database, '')) log.info('schema change', { db: summary.database, kind: summary.kind, position: at });
}
