import { lex, type Token } from './lexer.ts';

/**
 * Whether a statement logged inside BEGIN … COMMIT is MySQL's atomic `CREATE TABLE … SELECT`
 * (8.0.21+, WL#13355, an engine with atomic DDL, binlog_format=ROW): one transaction of BEGIN,
 * `CREATE TABLE t (…) START TRANSACTION` (the table as created, without its query), the rows as
 * row events, then COMMIT. That group is the DDL's, as MariaDB's GTID flag says of its own
 * `CREATE TABLE … SELECT` group: the statement is the schema change, and the rows follow it.
 * `START TRANSACTION` at the end is the grammar's marker for exactly this form (a replica applies
 * the rows before the commit); no other statement ends so.
 */
export function isAtomicCreateSelect(text: string): boolean {
  if (!/^\s*CREATE\b/i.test(text) || !/\bTRANSACTION\s*;?\s*$/i.test(text)) return false;
  let tokens: Token[];
  try {
    // MySQL writes the statement itself, without executable comments: the rules do not matter (8.0.21's).
    tokens = lex(text, { comments: { version: 80021, mariadbComments: false, sixDigitVersions: false, mysqlOnlyVersions: true } }).filter((t) => t.raw !== ';');
  } catch {
    return false;
  }
  const words = (from: number, ...expected: string[]) => expected.every((w, k) => tokens[from + k]?.kind === 'word' && tokens[from + k]?.upper === w);
  return words(0, 'CREATE', 'TABLE') && words(tokens.length - 2, 'START', 'TRANSACTION');
}
