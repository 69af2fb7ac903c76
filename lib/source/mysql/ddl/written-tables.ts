import type { TableRef } from '../../../core/table-ref.ts';
import type { SqlModeFlags } from '../binlog-reader.ts';
import { type CommentRules, lex } from './lexer.ts';

/**
 * The tables a DML statement logged as text writes: INSERT/REPLACE's target, every table an
 * UPDATE or DELETE names before SET / WHERE (multi-table forms write any of them), LOAD DATA's.
 * Tables it only reads do not matter: their rows did not change. `db.t`, or bare `t` in the
 * statement's default database. Null when it cannot tell (unreadable text, CALL, a subquery
 * where the tables are listed): the caller then treats every captured table as written.
 */
export function writtenTables(text: string, defaultDb: string, comments: CommentRules, sqlMode: SqlModeFlags = {}): TableRef[] | null {
  let tokens: ReturnType<typeof lex>;
  try {
    tokens = lex(text, { comments, ansiQuotes: sqlMode.ansiQuotes, noBackslashEscapes: sqlMode.noBackslashEscapes });
  } catch {
    return null;
  }
  let i = 0;
  const word = () => (tokens[i]?.kind === 'word' ? tokens[i]?.upper : undefined);
  const skip = (...words: string[]) => {
    while (word() !== undefined && words.includes(word() as string)) i++;
  };
  /** A table name at `i` (`t` or `db.t`), moving past it; undefined if there is none. */
  const name = (): TableRef | undefined => {
    const first = tokens[i];
    if (first?.kind !== 'ident' && first?.kind !== 'word') return undefined;
    i++;
    if (tokens[i]?.raw === '.' && (tokens[i + 1]?.kind === 'ident' || tokens[i + 1]?.kind === 'word')) {
      const table = tokens[i + 1]?.value as string;
      i += 2;
      return { db: first.value, table };
    }
    return { db: defaultDb, table: first.value };
  };
  /** Table references up to one of `until`: names after the start, a comma, JOIN, FROM or USING; aliases skipped. */
  const references = (until: string[]): TableRef[] | null => {
    const out: TableRef[] = [];
    let expectName = true;
    for (; i < tokens.length; ) {
      const t = tokens[i] as (typeof tokens)[number];
      if (t.kind === 'word' && until.includes(t.upper)) return out;
      if (t.raw === '(') return null;
      if (t.raw === ',' || (t.kind === 'word' && ['JOIN', 'FROM', 'USING', 'STRAIGHT_JOIN'].includes(t.upper))) {
        expectName = true;
        i++;
        continue;
      }
      if (expectName && t.kind === 'word' && ['LOW_PRIORITY', 'QUICK', 'IGNORE', 'INNER', 'CROSS', 'LEFT', 'RIGHT', 'OUTER', 'NATURAL'].includes(t.upper)) {
        i++;
        continue;
      }
      if (expectName) {
        const ref = name();
        if (!ref) return null;
        out.push(ref);
        expectName = false;
        continue;
      }
      i++; // an alias, ON … conditions: not tables
    }
    return out;
  };
  const verb = word();
  i++;
  switch (verb) {
    case 'INSERT':
    case 'REPLACE': {
      skip('LOW_PRIORITY', 'DELAYED', 'HIGH_PRIORITY', 'IGNORE', 'INTO');
      const ref = name();
      return ref ? [ref] : null;
    }
    case 'UPDATE':
      return references(['SET']);
    case 'DELETE':
      return references(['WHERE', 'ORDER', 'LIMIT', 'RETURNING']);
    case 'LOAD': {
      while (i < tokens.length && !(word() === 'INTO' && tokens[i + 1]?.kind === 'word' && tokens[i + 1]?.upper === 'TABLE')) i++;
      i += 2;
      const ref = name();
      return ref ? [ref] : null;
    }
    case 'XA':
    case 'SET':
    case 'DO':
      return [];
    default:
      return null;
  }
}
