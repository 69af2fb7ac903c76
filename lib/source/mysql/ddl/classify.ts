import { UnsupportedTypeError } from '../../../schema/column-type.ts';
import type {
  AlterOp,
  ColumnDefinition,
  ColumnPosition,
  IndexDefinition,
  KeyPart,
  Period,
  TableChange,
  TableDefinition,
  TableEffect,
  TableRef,
} from '../../../schema/definition.ts';
import { columnDefinition } from './column-def.ts';
import { type CommentRules, describeToken, LexError, lex, type Token } from './lexer.ts';

export type { TableChange, TableEffect, TableRef };

/**
 * Classifies one binlog Query event's text (a DDL statement) into what it does to which tables.
 *
 * Everything is read from the pre-lexer's tokens, which are exact (quoting, comments, executable
 * comments): the statement structure (which statement, which tables, which ALTER specifications)
 * here, column definitions by the servers' column grammar in column-def.ts. Whatever is not
 * understood with certainty becomes `unknown`, carrying the tables the tokens name: the capture
 * path re-copies those tables (or stops, as configured). Statement text is never kept in a result:
 * users, grants and routines can hold passwords.
 */

export type DdlClassification =
  /** Touches no table rows: views, triggers, routines, events, users, grants, FLUSH, temporary tables. */
  | { readonly kind: 'ignore'; readonly reason: string }
  /** Per-table effects in statement order (a RENAME swap is several). */
  | { readonly kind: 'tables'; readonly effects: readonly TableEffect[] }
  /** CREATE/ALTER DATABASE: the default charset/collation of later CREATE TABLEs there. DROP: all its tables are gone. */
  | {
      readonly kind: 'database';
      readonly op: 'create' | 'alter' | 'drop';
      readonly db: string;
      readonly charset?: string;
      readonly collation?: string;
      /** `CHARACTER SET DEFAULT`: the server's charset, with that charset's default collation. */
      readonly charsetDefault?: boolean;
      /** `COLLATE DEFAULT`: the charset's default collation. */
      readonly collationDefault?: boolean;
      /** CREATE … IF NOT EXISTS: an existing database keeps its defaults. */
      readonly ifNotExists?: boolean;
    }
  /**
   * Sequences are tables in the binlog (NEXTVAL refills write one row to them): CREATE marks the
   * name as a sequence, never to be captured; DROP removes it; ALTER changes nothing captured.
   */
  | { readonly kind: 'sequence'; readonly op: 'create' | 'alter' | 'drop'; readonly tables: readonly TableRef[] }
  /**
   * Not understood. `tables`: the tables the statement names as far as the tokens tell; null when
   * not even that is known (treat it as touching every table).
   */
  | { readonly kind: 'unknown'; readonly tables: readonly TableRef[] | null; readonly reason: string };

export interface ClassifyContext {
  /** The Query event's default database (`QueryEvent.schema`); '' when none. */
  readonly defaultDb: string;
  /** How the writing server read executable comments: its dialect's (`Dialect.comments`). */
  readonly comments: CommentRules;
  /** The statement's sql_mode flags (Query event status vars); both default to off, the server default. */
  readonly ansiQuotes?: boolean;
  readonly noBackslashEscapes?: boolean;
  /** lower_case_table_names=1: the server stores names in lower case. */
  readonly lowerCaseTableNames?: boolean;
  /** sql_mode REAL_AS_FLOAT: REAL is FLOAT (else DOUBLE). */
  readonly realAsFloat?: boolean;
  /** sql_mode ORACLE or MAXDB is (or may be) on: type names mean other types (DATE is DATETIME…); sluice does not read them. */
  readonly foreignTypes?: boolean;
}

/** A statement part that cannot be classified with certainty. */
class Unclassified extends Error {
  override readonly name = 'Unclassified';
}

const IGNORED_OBJECTS = new Set(['VIEW', 'TRIGGER', 'PROCEDURE', 'FUNCTION', 'EVENT', 'USER', 'ROLE', 'SERVER', 'PACKAGE', 'TABLESPACE', 'LOGFILE']);
const IGNORED_STATEMENTS = new Set([
  'GRANT',
  'REVOKE',
  'FLUSH',
  'SET',
  'INSTALL',
  'UNINSTALL',
  'BEGIN',
  'COMMIT',
  'ROLLBACK',
  'SAVEPOINT',
  'RELEASE',
  'XA',
  'RESET',
  'PURGE',
  'KILL',
  'SHUTDOWN',
]);
const DML = new Set(['INSERT', 'UPDATE', 'DELETE', 'REPLACE', 'LOAD', 'CALL', 'DO', 'SELECT', 'WITH', 'HANDLER', 'EXECUTE']);
/** Engines that keep the rows written to them (BLACKHOLE, FEDERATED, CONNECT… do not, or keep them elsewhere). */
const ROW_KEEPING_ENGINES = new Set(['INNODB', 'MYISAM', 'ARIA', 'MEMORY', 'HEAP', 'ARCHIVE', 'CSV', 'ROCKSDB', 'MRG_MYISAM']);
const TABLE_OPTIONS = new Set([
  'AUTO_INCREMENT',
  'AVG_ROW_LENGTH',
  'CHECKSUM',
  'TABLE_CHECKSUM',
  'COMMENT',
  'COMPRESSION',
  'CONNECTION',
  'DATA',
  'INDEX',
  'DELAY_KEY_WRITE',
  'ENCRYPTED',
  'ENCRYPTION',
  'ENCRYPTION_KEY_ID',
  'IETF_QUOTES',
  'INSERT_METHOD',
  'KEY_BLOCK_SIZE',
  'MAX_ROWS',
  'MIN_ROWS',
  'PACK_KEYS',
  'PAGE_CHECKSUM',
  'PAGE_COMPRESSED',
  'PAGE_COMPRESSION_LEVEL',
  'PASSWORD',
  'ROW_FORMAT',
  'STATS_AUTO_RECALC',
  'STATS_PERSISTENT',
  'STATS_SAMPLE_PAGES',
  'STORAGE',
  'TABLESPACE',
  'TRANSACTIONAL',
  'UNION',
]);
const NOOP_PARTITION_OPS = new Set(['REORGANIZE', 'COALESCE', 'ANALYZE', 'CHECK', 'OPTIMIZE', 'REBUILD', 'REPAIR']);
const CONSTRAINT_STARTS = new Set(['PRIMARY', 'UNIQUE', 'KEY', 'INDEX', 'FULLTEXT', 'SPATIAL', 'CONSTRAINT', 'FOREIGN', 'CHECK', 'PERIOD']);

/** A cursor over tokens with the few reads the DDL grammar needs. */
class Cursor {
  i = 0;
  constructor(readonly tokens: readonly Token[]) {}
  peek(k = 0): Token | undefined {
    return this.tokens[this.i + k];
  }
  atEnd(): boolean {
    return this.i >= this.tokens.length;
  }
  isWord(word: string, k = 0): boolean {
    const t = this.peek(k);
    return t?.kind === 'word' && t.upper === word;
  }
  isPunct(p: string, k = 0): boolean {
    const t = this.peek(k);
    return t?.kind === 'punct' && t.value === p;
  }
  eatWord(...words: string[]): boolean {
    if (!words.every((w, k) => this.isWord(w, k))) return false;
    this.i += words.length;
    return true;
  }
  eatPunct(p: string): boolean {
    if (!this.isPunct(p)) return false;
    this.i++;
    return true;
  }
  expectWord(word: string): void {
    if (!this.eatWord(word)) throw new Unclassified(`expected ${word}`);
  }
  next(): Token {
    const t = this.peek();
    if (!t) throw new Unclassified('unexpected end of statement');
    this.i++;
    return t;
  }
  /** A name part: quoted identifier or word. */
  namePart(): string {
    const t = this.next();
    if (t.kind === 'ident' || t.kind === 'word') return t.value;
    throw new Unclassified(`expected a name, found ${t.kind}`);
  }
  /** `name` or `qualifier.name`. */
  name(): string[] {
    const parts = [this.namePart()];
    while (this.isPunct('.')) {
      this.i++;
      parts.push(this.namePart());
    }
    return parts;
  }
  /** Skips `WAIT n` / `NOWAIT`. */
  skipWait(): void {
    if (this.isWord('WAIT') && this.peek(1)?.kind === 'number') this.i += 2;
    else this.eatWord('NOWAIT');
  }
  /** The tokens up to the parenthesis matching the one at the cursor; the cursor moves past it. */
  parenthesized(): Token[] {
    if (!this.eatPunct('(')) throw new Unclassified('expected (');
    const start = this.i;
    let depth = 1;
    while (!this.atEnd()) {
      const t = this.next();
      if (t.kind === 'punct' && t.value === '(') depth++;
      else if (t.kind === 'punct' && t.value === ')' && --depth === 0) return this.tokens.slice(start, this.i - 1) as Token[];
    }
    throw new Unclassified('unbalanced parentheses');
  }
  rest(): Token[] {
    const rest = this.tokens.slice(this.i) as Token[];
    this.i = this.tokens.length;
    return rest;
  }
}

/** Splits at commas outside parentheses. */
function splitTop(tokens: readonly Token[]): Token[][] {
  const parts: Token[][] = [[]];
  let depth = 0;
  for (const t of tokens) {
    if (t.kind === 'punct' && t.value === '(') depth++;
    if (t.kind === 'punct' && t.value === ')') depth--;
    if (depth === 0 && t.kind === 'punct' && t.value === ',') parts.push([]);
    else parts.at(-1)?.push(t);
  }
  return parts;
}

interface Statement {
  readonly ctx: ClassifyContext;
  /** The statement has a backslash escape somewhere: string literal values depend on sql_mode. */
  readonly escaped: boolean;
  /** Tables seen so far, reported if the statement turns out unknown. */
  readonly seen: TableRef[];
}

function tableRef(s: Statement, parts: string[]): TableRef {
  if (parts.length > 2) throw new Unclassified('a name with more than two parts');
  let db = parts.length === 2 ? (parts[0] as string) : s.ctx.defaultDb;
  let table = parts.at(-1) as string;
  if (!db) throw new Unclassified(`table ${table} without a database and no default database`);
  if (s.ctx.lowerCaseTableNames) {
    db = db.toLowerCase();
    table = table.toLowerCase();
  }
  const ref = { db, table };
  s.seen.push(ref);
  return ref;
}

function dbName(s: Statement, name: string): string {
  return s.ctx.lowerCaseTableNames ? name.toLowerCase() : name;
}

/** Classifies one statement. Never throws: what it cannot classify comes back as `unknown`. */
export async function classifyDdl(text: string, ctx: ClassifyContext): Promise<DdlClassification> {
  let tokens: Token[];
  try {
    tokens = lex(text, ctx);
  } catch (error) {
    if (error instanceof LexError) return { kind: 'unknown', tables: null, reason: `cannot tokenize: ${error.message}` };
    throw error;
  }
  while (tokens.at(-1)?.kind === 'punct' && tokens.at(-1)?.value === ';') tokens.pop();
  const s: Statement = { ctx, escaped: tokens.some((t) => t.escaped === true), seen: [] };
  let result: DdlClassification;
  try {
    result = await statement(s, new Cursor(tokens));
  } catch (error) {
    if (error instanceof Unclassified || error instanceof UnsupportedTypeError) result = { kind: 'unknown', tables: dedupe(s.seen), reason: error.message };
    else throw error;
  }
  // Routine bodies hold semicolons; anything else with one is several statements.
  if (result.kind !== 'ignore' && tokens.some((t) => t.kind === 'punct' && t.value === ';'))
    return { kind: 'unknown', tables: null, reason: 'several statements in one event' };
  return result;
}

function dedupe(tables: readonly TableRef[]): TableRef[] {
  const seen = new Set<string>();
  return tables.filter((t) => {
    const key = JSON.stringify([t.db, t.table]);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

async function statement(s: Statement, c: Cursor): Promise<DdlClassification> {
  const first = c.peek();
  if (!first) return { kind: 'ignore', reason: 'empty statement' };
  if (first.kind !== 'word') return { kind: 'unknown', tables: null, reason: 'not a statement keyword' };
  c.i++;
  switch (first.upper) {
    case 'CREATE':
      return create(s, c);
    case 'ALTER':
      return alter(s, c);
    case 'DROP':
      return drop(s, c);
    case 'RENAME':
      return rename(s, c);
    case 'TRUNCATE': {
      c.eatWord('TABLE');
      const table = tableRef(s, c.name());
      c.skipWait();
      if (!c.atEnd()) throw new Unclassified('unexpected text after TRUNCATE');
      return { kind: 'tables', effects: [{ table, change: { kind: 'truncate' } }] };
    }
    case 'OPTIMIZE':
    case 'ANALYZE':
    case 'REPAIR': {
      if (!c.eatWord('NO_WRITE_TO_BINLOG')) c.eatWord('LOCAL');
      if (!c.eatWord('TABLE')) c.expectWord('TABLES');
      const tables = [tableRef(s, c.name())];
      while (c.eatPunct(',')) tables.push(tableRef(s, c.name()));
      return { kind: 'tables', effects: tables.map((table) => ({ table, change: { kind: 'noop', reason: first.upper.toLowerCase() } })) };
    }
    default:
      if (IGNORED_STATEMENTS.has(first.upper)) return { kind: 'ignore', reason: first.upper.toLowerCase() };
      if (DML.has(first.upper)) return { kind: 'unknown', tables: null, reason: 'a DML statement (statement-based binlog)' };
      return { kind: 'unknown', tables: null, reason: `unknown statement ${first.upper}` };
  }
}

/** Skips CREATE/ALTER modifiers up to the object keyword and returns it. */
function objectKeyword(c: Cursor, modifiers: { temporary?: boolean; orReplace?: boolean; ignore?: boolean; unique?: boolean }): string {
  for (let guard = 0; guard < 40 && !c.atEnd(); guard++) {
    const t = c.next();
    if (t.kind !== 'word') continue;
    switch (t.upper) {
      case 'OR':
        if (c.eatWord('REPLACE')) modifiers.orReplace = true;
        continue;
      case 'TEMPORARY':
        modifiers.temporary = true;
        continue;
      case 'IGNORE':
        modifiers.ignore = true;
        continue;
      case 'UNIQUE':
        modifiers.unique = true;
        continue;
      case 'ONLINE':
      case 'OFFLINE':
      case 'FULLTEXT':
      case 'SPATIAL':
      case 'AGGREGATE':
        continue;
      case 'TABLE':
      case 'TABLES':
      case 'INDEX':
      case 'DATABASE':
      case 'SCHEMA':
      case 'SEQUENCE':
        return t.upper;
      default:
        if (IGNORED_OBJECTS.has(t.upper)) return t.upper;
    }
  }
  throw new Unclassified('no object keyword');
}

async function create(s: Statement, c: Cursor): Promise<DdlClassification> {
  const m: { temporary?: boolean; orReplace?: boolean; unique?: boolean } = {};
  const object = objectKeyword(c, m);
  if (IGNORED_OBJECTS.has(object)) return { kind: 'ignore', reason: `CREATE ${object}` };
  if (object === 'DATABASE' || object === 'SCHEMA') {
    const ifNotExists = c.eatWord('IF', 'NOT', 'EXISTS');
    const db = dbName(s, c.namePart());
    return { kind: 'database', op: 'create', db, ...charsetOptions(c.rest()), ...(ifNotExists ? { ifNotExists } : {}) };
  }
  if (object === 'SEQUENCE') {
    c.eatWord('IF', 'NOT', 'EXISTS');
    const table = tableRef(s, c.name());
    return m.temporary ? { kind: 'ignore', reason: 'temporary sequence' } : { kind: 'sequence', op: 'create', tables: [table] };
  }
  if (object === 'INDEX') {
    c.eatWord('IF', 'NOT', 'EXISTS');
    const name = c.namePart();
    if (c.eatWord('USING')) c.next();
    c.expectWord('ON');
    const table = tableRef(s, c.name());
    const index = keyedIndex(name, m.unique ? 'unique' : 'index', c.parenthesized(), c.rest());
    return { kind: 'tables', effects: [{ table, change: { kind: 'alter', ops: [{ op: 'add-index', index, ifNotExists: false }] } }] };
  }
  return createTable(s, c, m);
}

async function createTable(s: Statement, c: Cursor, m: { temporary?: boolean; orReplace?: boolean }): Promise<DdlClassification> {
  const ifNotExists = c.eatWord('IF', 'NOT', 'EXISTS');
  const table = tableRef(s, c.name());
  if (m.temporary) return { kind: 'ignore', reason: 'temporary table' };
  const orReplace = m.orReplace === true;
  const effect = (change: TableChange): DdlClassification => ({ kind: 'tables', effects: [{ table, change }] });
  if (c.eatWord('LIKE')) {
    const source = tableRef(s, c.name());
    return effect({ kind: 'create-like', source, orReplace, ifNotExists });
  }
  if (c.isPunct('(') && c.isWord('LIKE', 1)) {
    const inner = new Cursor(c.parenthesized());
    inner.expectWord('LIKE');
    const source = tableRef(s, inner.name());
    if (!inner.atEnd() || !c.atEnd()) throw new Unclassified('unexpected text after LIKE');
    return effect({ kind: 'create-like', source, orReplace, ifNotExists });
  }
  let body: Token[] | undefined;
  if (c.isPunct('(') && !(c.isWord('SELECT', 1) || c.isWord('WITH', 1) || c.isWord('VALUES', 1) || c.isPunct('(', 1))) body = c.parenthesized();
  const rest = c.rest();
  // Table options, partitioning, then an optional query.
  let select = false;
  let systemVersioning = false;
  let depth = 0;
  for (let i = 0; i < rest.length && !select; i++) {
    const t = rest[i] as Token;
    if (t.kind === 'punct' && t.value === '(') {
      if (depth === 0 && rest[i + 1]?.upper === 'SELECT') select = true;
      depth++;
    } else if (t.kind === 'punct' && t.value === ')') depth--;
    else if (t.kind === 'word' && depth === 0) {
      if (t.upper === 'WITH' && rest[i + 1]?.upper === 'SYSTEM' && rest[i + 2]?.upper === 'VERSIONING') {
        systemVersioning = true;
        i += 2;
        continue;
      }
      if (t.upper === 'SELECT' || t.upper === 'VALUES' || t.upper === 'WITH' || t.upper === 'TABLE') select = true;
    }
  }
  const optionTokens = select ? rest.slice(0, firstQueryIndex(rest)) : rest;
  checkTableOptions(optionTokens);
  if (select) return effect({ kind: 'create-select', orReplace });
  if (!body) throw new Unclassified('CREATE TABLE without columns');
  const { items, periods } = tableItems(s, body);
  const definition: TableDefinition = {
    items,
    ...charsetOptions(optionTokens),
    ...(periods.length ? { periods } : {}),
    ...(systemVersioning ? { systemVersioning } : {}),
  };
  return effect({ kind: 'create', definition, orReplace, ifNotExists });
}

function firstQueryIndex(rest: Token[]): number {
  const i = rest.findIndex(
    (t, k) =>
      t.kind === 'word' &&
      ['IGNORE', 'REPLACE', 'AS', 'SELECT', 'WITH', 'VALUES', 'TABLE'].includes(t.upper) &&
      !(t.upper === 'WITH' && rest[k + 1]?.upper === 'SYSTEM'),
  );
  const paren = rest.findIndex((t, k) => t.kind === 'punct' && t.value === '(' && rest[k + 1]?.upper === 'SELECT');
  return Math.min(i < 0 ? rest.length : i, paren < 0 ? rest.length : paren);
}

/** Table options of CREATE TABLE: refuses those that make rows vanish or the table a sequence. */
function checkTableOptions(tokens: Token[]): void {
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i] as Token;
    if (t.kind !== 'word') continue;
    const value = tokens[i + 1]?.value === '=' ? tokens[i + 2] : tokens[i + 1];
    if (t.upper === 'ENGINE' && !ROW_KEEPING_ENGINES.has(String(value?.value).toUpperCase())) throw new Unclassified(`ENGINE=${describeToken(value)}`);
    if (t.upper === 'SEQUENCE') throw new Unclassified('a table created as a sequence');
  }
}

/** What a run of table or database options says of the default charset and collation. */
interface CharsetOptions {
  charset?: string;
  collation?: string;
  charsetDefault?: boolean;
  collationDefault?: boolean;
}

/**
 * `[DEFAULT] {CHARACTER SET|CHAR SET|CHARSET} [=] x`, `[DEFAULT] COLLATE [=] y` anywhere in option
 * tokens (`CHAR SET` is the grammar's `charset: CHAR_sym SET | CHARSET`). `DEFAULT` as the value is
 * kept as a flag: the server reads it as "the enclosing default charset, with its own default
 * collation", not as the enclosing collation.
 */
function charsetOptions(tokens: readonly Token[]): CharsetOptions {
  const out: CharsetOptions = {};
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i] as Token;
    if (t.kind !== 'word') continue;
    let valueAt: number | undefined;
    let which: 'charset' | 'collation' | undefined;
    if (t.upper === 'CHARSET' || ((t.upper === 'CHARACTER' || t.upper === 'CHAR') && tokens[i + 1]?.upper === 'SET')) {
      which = 'charset';
      valueAt = t.upper === 'CHARSET' ? i + 1 : i + 2;
    } else if (t.upper === 'COLLATE') {
      which = 'collation';
      valueAt = i + 1;
    }
    if (which === undefined || valueAt === undefined) continue;
    if (tokens[valueAt]?.value === '=') valueAt++;
    const value = tokens[valueAt];
    if (!value || (value.kind !== 'word' && value.kind !== 'ident' && value.kind !== 'string')) throw new Unclassified(`${which} without a name`);
    if (value.kind === 'word' && value.upper === 'DEFAULT') {
      if (which === 'charset') {
        out.charsetDefault = true;
        delete out.charset;
      } else {
        out.collationDefault = true;
        delete out.collation;
      }
    } else {
      out[which] = value.value.toLowerCase();
      if (which === 'charset') delete out.charsetDefault;
      else delete out.collationDefault;
    }
    i = valueAt;
  }
  return out;
}

/** The items of a CREATE TABLE body (or an ALTER's `ADD (…)`) in order: columns and keys; and its periods. */
function tableItems(s: Statement, body: Token[]): { items: TableDefinition['items']; periods: Period[] } {
  const items: ({ column: ColumnDefinition } | { index: IndexDefinition })[] = [];
  const periods: Period[] = [];
  for (const part of splitTop(body)) {
    if (!part.length) throw new Unclassified('empty item in the column list');
    const head = part[0] as Token;
    if (head.kind === 'word' && head.upper === 'PERIOD' && part[1]?.upper === 'FOR') periods.push(period(new Cursor(part)));
    else if (head.kind === 'word' && CONSTRAINT_STARTS.has(head.upper) && !(part[1]?.kind === 'word' && isTypeAfterName(part))) {
      const index = constraintItem(new Cursor(part));
      if (index) items.push({ index });
    } else items.push({ column: parseColumns(s, [part])[0] as ColumnDefinition });
  }
  return { items, periods };
}

/** `PERIOD FOR SYSTEM_TIME (s, e)` or `PERIOD FOR name (a, b)`. */
function period(c: Cursor): Period {
  c.expectWord('PERIOD');
  c.expectWord('FOR');
  const found = periodBody(c);
  if (!c.atEnd()) throw new Unclassified('unexpected text after PERIOD FOR');
  return found;
}

/** `name (start, end)` after `PERIOD FOR`. */
function periodBody(c: Cursor): Period {
  const name = c.namePart();
  const inside = new Cursor(c.parenthesized());
  const start = inside.namePart();
  if (!inside.eatPunct(',')) throw new Unclassified('a PERIOD without two columns');
  const end = inside.namePart();
  if (!inside.atEnd()) throw new Unclassified('unexpected text in PERIOD FOR');
  return { name: name.toUpperCase() === 'SYSTEM_TIME' ? 'SYSTEM_TIME' : name, start, end };
}

/** `KEY INT` or `index VARCHAR(3)`: a column whose name is a constraint keyword (legal for non-reserved ones). */
function isTypeAfterName(part: Token[]): boolean {
  const head = (part[0] as Token).upper;
  // Reserved words cannot name a column unquoted; KEY, INDEX, PRIMARY, UNIQUE, FOREIGN, CHECK, CONSTRAINT, FULLTEXT, SPATIAL are reserved.
  return head === 'PERIOD' && part[1]?.upper !== 'FOR';
}

/**
 * A key or constraint definition (CREATE TABLE item or ALTER … ADD). Returns the index it creates,
 * or undefined for FOREIGN KEY / CHECK (their rows and identity are untouched).
 */
function constraintItem(c: Cursor): IndexDefinition | undefined {
  let symbol: string | undefined;
  if (c.eatWord('CONSTRAINT')) {
    c.eatWord('IF', 'NOT', 'EXISTS');
    if (!(c.isWord('PRIMARY') || c.isWord('UNIQUE') || c.isWord('FOREIGN') || c.isWord('CHECK'))) symbol = c.namePart();
  }
  if (c.eatWord('FOREIGN') || c.eatWord('CHECK')) {
    c.rest();
    return undefined;
  }
  let kind: IndexDefinition['kind'];
  if (c.eatWord('PRIMARY', 'KEY')) kind = 'primary';
  else if (c.eatWord('UNIQUE')) {
    kind = 'unique';
    if (!c.eatWord('KEY')) c.eatWord('INDEX');
  } else if (c.eatWord('FULLTEXT') || c.eatWord('SPATIAL')) {
    kind = 'index';
    if (!c.eatWord('KEY')) c.eatWord('INDEX');
  } else if (c.eatWord('KEY') || c.eatWord('INDEX')) kind = 'index';
  else throw new Unclassified(`unknown constraint ${describeToken(c.peek())}`);
  c.eatWord('IF', 'NOT', 'EXISTS');
  let name = symbol;
  if (kind === 'primary') name = 'PRIMARY';
  else if (!c.isPunct('(') && !c.isWord('USING')) name = c.namePart();
  if (c.eatWord('USING')) c.next();
  return keyedIndex(name, kind, c.parenthesized(), c.rest());
}

/**
 * An index from its key parts and the options after them. A functional key part (`((expr))`,
 * MySQL 8.0.13+) indexes a hidden generated column: such an index is never the row identity
 * (MySQL refuses it in a PRIMARY KEY), so it is kept as a plain index without parts, named as the
 * server names it when unnamed (`functional_index`, `functional_index_2`…).
 */
function keyedIndex(name: string | undefined, kind: IndexDefinition['kind'], parts: Token[], rest: Token[]): IndexDefinition {
  const read = keyParts(parts);
  const hash = hasHash(rest) ? { hash: true } : {};
  if (!read.functional) return { name, kind, parts: read.parts, ...hash };
  if (kind === 'primary') throw new Unclassified('a functional key part in a PRIMARY KEY');
  return { name, kind: 'index', parts: [], ...hash };
}

function hasHash(tokens: Token[]): boolean {
  return tokens.some((t, i) => t.upper === 'USING' && tokens[i + 1]?.upper === 'HASH');
}

/** `a, b(10) DESC` → key parts; `functional`: some part is an expression in parentheses (MySQL 8.0.13+). */
function keyParts(tokens: Token[]): { parts: KeyPart[]; functional: boolean } {
  let functional = false;
  const parts = splitTop(tokens).flatMap((part): KeyPart[] => {
    const c = new Cursor(part);
    if (c.isPunct('(')) {
      c.parenthesized();
      if (!c.eatWord('ASC')) c.eatWord('DESC');
      if (!c.atEnd()) throw new Unclassified('a functional key part with more than an expression');
      functional = true;
      return [];
    }
    const column = c.namePart();
    let prefix: number | undefined;
    if (c.isPunct('(')) {
      const inner = c.parenthesized();
      if (inner.length !== 1 || inner[0]?.kind !== 'number') throw new Unclassified('a key part that is not a column or a prefix');
      prefix = Number(inner[0].value);
    }
    // `p WITHOUT OVERLAPS`: an application-time period, which the index holds as its end and start columns.
    if (prefix === undefined && c.eatWord('WITHOUT', 'OVERLAPS')) {
      if (!c.atEnd()) throw new Unclassified('a key part that is not a column or a prefix');
      return [{ column, period: true }];
    }
    if (!c.eatWord('ASC')) c.eatWord('DESC');
    if (!c.atEnd()) throw new Unclassified('a key part that is not a column or a prefix');
    return prefix === undefined ? [{ column }] : [{ column, prefix }];
  });
  return { parts, functional };
}

/** Column definitions (tokens starting at the column name) → definitions. */
function parseColumns(s: Statement, parts: Token[][]): ColumnDefinition[] {
  // sql_mode ORACLE and MAXDB give type names other types (DATE and TIMESTAMP are DATETIME; NUMBER, VARCHAR2, CLOB…).
  if (s.ctx.foreignTypes && parts.length) throw new Unclassified('column definitions written under sql_mode ORACLE or MAXDB (or a mode sluice cannot read)');
  return parts.map((part) => columnDefinition(part, { escaped: s.escaped, realAsFloat: s.ctx.realAsFloat }));
}

/** `FIRST` / `AFTER x` at the end of a column specification; returns the tokens before it. */
function splitPosition(tokens: Token[]): { tokens: Token[]; position?: ColumnPosition } {
  const last = tokens.at(-1);
  if (last?.kind === 'word' && last.upper === 'FIRST') return { tokens: tokens.slice(0, -1), position: { first: true } };
  const beforeLast = tokens.at(-2);
  if (beforeLast?.kind === 'word' && beforeLast.upper === 'AFTER' && last && (last.kind === 'word' || last.kind === 'ident'))
    return { tokens: tokens.slice(0, -2), position: { after: last.value } };
  return { tokens };
}

async function alter(s: Statement, c: Cursor): Promise<DdlClassification> {
  const m: { ignore?: boolean } = {};
  const object = objectKeyword(c, m);
  if (IGNORED_OBJECTS.has(object)) return { kind: 'ignore', reason: `ALTER ${object}` };
  if (object === 'DATABASE' || object === 'SCHEMA') {
    const options = c.rest();
    const named =
      options[0] &&
      (options[0].kind === 'ident' ||
        (options[0].kind === 'word' && !['DEFAULT', 'CHARACTER', 'CHAR', 'CHARSET', 'COLLATE', 'COMMENT', 'UPGRADE', 'READ'].includes(options[0].upper)));
    const db = named ? dbName(s, (options.shift() as Token).value) : s.ctx.defaultDb;
    if (!db) throw new Unclassified('ALTER DATABASE without a database');
    return { kind: 'database', op: 'alter', db, ...charsetOptions(options) };
  }
  if (object === 'SEQUENCE') {
    c.eatWord('IF', 'EXISTS');
    return { kind: 'sequence', op: 'alter', tables: [tableRef(s, c.name())] };
  }
  if (object !== 'TABLE') throw new Unclassified(`ALTER ${object}`);
  c.eatWord('IF', 'EXISTS');
  const table = tableRef(s, c.name());
  c.skipWait();
  const effects: TableEffect[] = [];
  const ops: AlterOp[] = [];
  let renameTo: TableRef | undefined;
  const specs = c.atEnd() ? [] : splitTop(c.rest());
  for (const spec of specs) {
    if (!spec.length) throw new Unclassified('empty ALTER specification');
    for (const item of await alterSpec(s, spec)) {
      if ('renameTo' in item) renameTo = item.renameTo;
      else if ('other' in item) effects.push(item.other);
      else ops.push(item);
    }
  }
  if (m.ignore && ops.some((op) => op.op === 'add-index' && op.index.kind !== 'index'))
    ops.push({ op: 'rows-changed', reason: 'ALTER IGNORE with a unique key deletes duplicate rows', structureKept: true });
  const all: TableEffect[] = [];
  if (ops.length || !renameTo) all.push({ table, change: { kind: 'alter', ops, ...(m.ignore ? { ignore: true } : {}) } });
  all.push(...effects);
  if (renameTo) all.push({ table, change: { kind: 'rename-out', to: renameTo } }, { table: renameTo, change: { kind: 'rename-in', from: table } });
  return { kind: 'tables', effects: all };
}

type SpecItem = AlterOp | { renameTo: TableRef } | { other: TableEffect };

async function alterSpec(s: Statement, spec: Token[]): Promise<SpecItem[]> {
  const c = new Cursor(spec);
  const head = c.peek() as Token;
  const done = (items: SpecItem[]): SpecItem[] => {
    if (!c.atEnd()) throw new Unclassified(`unexpected ${describeToken(c.peek())} in ALTER ${head.upper}`);
    return items;
  };
  if (head.kind !== 'word') throw new Unclassified('an ALTER specification that does not start with a keyword');
  c.i++;
  switch (head.upper) {
    case 'ADD':
      return alterAdd(s, c, done);
    case 'DROP':
      return alterDrop(c, done);
    case 'MODIFY':
    case 'CHANGE': {
      c.eatWord('COLUMN');
      const ifExists = c.eatWord('IF', 'EXISTS');
      const from = head.upper === 'CHANGE' ? c.namePart() : (c.peek()?.value as string);
      const { tokens, position } = splitPosition(c.rest());
      const [column] = parseColumns(s, [tokens]);
      return [{ op: 'modify-column', from, column: column as ColumnDefinition, ifExists, ...(position ? { position } : {}) }];
    }
    case 'ALTER': {
      if (c.eatWord('INDEX') || c.eatWord('KEY') || c.eatWord('CHECK') || c.eatWord('CONSTRAINT')) {
        c.rest();
        return [{ op: 'noop', what: 'ALTER INDEX/CHECK' }];
      }
      c.eatWord('COLUMN');
      c.eatWord('IF', 'EXISTS');
      const name = c.namePart();
      if (c.eatWord('SET', 'DEFAULT') || c.eatWord('DROP', 'DEFAULT')) {
        c.rest();
        return [{ op: 'column-default', name }];
      }
      if (c.eatWord('SET', 'VISIBLE') || c.eatWord('SET', 'INVISIBLE')) return done([{ op: 'noop', what: 'column visibility' }]);
      throw new Unclassified(`ALTER COLUMN ${describeToken(c.peek())}`);
    }
    case 'RENAME': {
      if (c.eatWord('COLUMN')) {
        const from = c.namePart();
        c.expectWord('TO');
        return done([{ op: 'rename-column', from, to: c.namePart() }]);
      }
      if (c.eatWord('INDEX') || c.eatWord('KEY')) {
        const from = c.namePart();
        c.expectWord('TO');
        return done([{ op: 'rename-index', from, to: c.namePart() }]);
      }
      if (!c.eatWord('TO')) c.eatWord('AS');
      return done([{ renameTo: tableRef(s, c.name()) }]);
    }
    default:
      return alterRowsOrOptions(s, c, head.upper, done);
  }
}

/**
 * The rest of ALTER's specifications (after `word`): what moves or replaces rows (CONVERT,
 * TRUNCATE/EXCHANGE PARTITION, tablespaces), partitioning and other no-ops, and table options.
 */
function alterRowsOrOptions(s: Statement, c: Cursor, word: string, done: SpecDone): SpecItem[] {
  switch (word) {
    case 'CONVERT': {
      if (c.eatWord('TO')) {
        c.rest();
        return [{ op: 'rows-changed', reason: 'CONVERT TO CHARACTER SET re-encodes text values', structureKept: false }];
      }
      if (c.eatWord('PARTITION')) {
        c.namePart();
        c.expectWord('TO');
        c.expectWord('TABLE');
        const other = tableRef(s, c.name());
        return done([
          { op: 'rows-changed', reason: 'CONVERT PARTITION moves rows out', structureKept: true },
          { other: { table: other, change: { kind: 'create-select', orReplace: false } } },
        ]);
      }
      if (c.eatWord('TABLE')) {
        const other = tableRef(s, c.name());
        c.rest();
        return [
          { op: 'rows-changed', reason: 'CONVERT TABLE … TO PARTITION moves rows in', structureKept: true },
          { other: { table: other, change: { kind: 'drop' } } },
        ];
      }
      throw new Unclassified('CONVERT');
    }
    case 'TRUNCATE':
      c.expectWord('PARTITION');
      c.rest();
      return [{ op: 'rows-changed', reason: 'TRUNCATE PARTITION deletes rows', structureKept: true }];
    case 'EXCHANGE': {
      c.expectWord('PARTITION');
      c.namePart();
      c.expectWord('WITH');
      c.expectWord('TABLE');
      const other = tableRef(s, c.name());
      if (c.eatWord('WITH') || c.eatWord('WITHOUT')) c.expectWord('VALIDATION');
      return done([
        { op: 'rows-changed', reason: 'EXCHANGE PARTITION swaps rows with another table', structureKept: true },
        { other: { table: other, change: { kind: 'rows-changed', reason: 'EXCHANGE PARTITION swaps rows with another table' } } },
      ]);
    }
    case 'DISCARD':
    case 'IMPORT':
      c.rest();
      return [{ op: 'rows-changed', reason: `${word} TABLESPACE replaces the rows`, structureKept: true }];
    case 'REMOVE':
      c.expectWord('PARTITIONING');
      return done([{ op: 'noop', what: 'REMOVE PARTITIONING' }]);
    case 'PARTITION':
      c.rest();
      return [{ op: 'noop', what: 'PARTITION BY' }];
    case 'ORDER':
      c.rest();
      return [{ op: 'noop', what: 'ORDER BY' }];
    case 'FORCE':
      return done([{ op: 'noop', what: 'FORCE' }]);
    case 'ENABLE':
    case 'DISABLE':
      c.expectWord('KEYS');
      return done([{ op: 'noop', what: `${word} KEYS` }]);
    case 'WITH':
    case 'WITHOUT':
      if (word === 'WITH' && c.eatWord('SYSTEM', 'VERSIONING')) return done([{ op: 'system-versioning', add: true }]);
      c.expectWord('VALIDATION');
      return done([{ op: 'noop', what: 'VALIDATION' }]);
    default:
      if (NOOP_PARTITION_OPS.has(word) && c.isWord('PARTITION')) {
        c.rest();
        return [{ op: 'noop', what: `${word} PARTITION` }];
      }
      c.i--;
      return tableOptions(c);
  }
}

/** Checks that a specification's tokens are all read, and returns its items. */
type SpecDone = (items: SpecItem[]) => SpecItem[];

/** `ADD …` after the ADD: a column, columns and keys in parentheses, a key or constraint, a partition, a period, system versioning. */
function alterAdd(s: Statement, c: Cursor, done: SpecDone): SpecItem[] {
  if (c.isWord('PARTITION')) {
    c.rest();
    return [{ op: 'noop', what: 'ADD PARTITION' }];
  }
  if (c.eatWord('SYSTEM', 'VERSIONING')) return done([{ op: 'system-versioning', add: true }]);
  if (c.isWord('PERIOD') && (c.isWord('FOR', 1) || c.isWord('IF', 1))) {
    c.expectWord('PERIOD');
    c.eatWord('IF', 'NOT', 'EXISTS');
    c.expectWord('FOR');
    return done([{ op: 'period', add: true, period: periodBody(c) }]);
  }
  if (c.peek()?.kind === 'word' && CONSTRAINT_STARTS.has((c.peek() as Token).upper) && !c.isWord('COLUMN')) {
    const index = constraintItem(c);
    return done(index ? [{ op: 'add-index', index, ifNotExists: false }] : [{ op: 'noop', what: 'ADD FOREIGN KEY/CHECK' }]);
  }
  c.eatWord('COLUMN');
  const ifNotExists = c.eatWord('IF', 'NOT', 'EXISTS');
  if (c.isPunct('(')) {
    // `ADD (c INT, d INT, PRIMARY KEY (c))`: columns and keys, as in CREATE TABLE.
    const { items, periods } = tableItems(s, c.parenthesized());
    return done([
      ...items.map(
        (item): AlterOp =>
          'column' in item ? { op: 'add-column', column: item.column, ifNotExists } : { op: 'add-index', index: item.index, ifNotExists: false },
      ),
      ...periods.map((p): AlterOp => ({ op: 'period', add: true, period: p })),
    ]);
  }
  const { tokens, position } = splitPosition(c.rest());
  const [column] = parseColumns(s, [tokens]);
  return [{ op: 'add-column', column: column as ColumnDefinition, ifNotExists, ...(position ? { position } : {}) }];
}

/** `DROP …` after the DROP: a column, a key or constraint, a partition, a period, system versioning. */
function alterDrop(c: Cursor, done: SpecDone): SpecItem[] {
  if (c.eatWord('PRIMARY', 'KEY')) return done([{ op: 'drop-primary-key' }]);
  if (c.eatWord('INDEX') || c.eatWord('KEY')) {
    const ifExists = c.eatWord('IF', 'EXISTS');
    return done([{ op: 'drop-index', name: c.namePart(), ifExists }]);
  }
  if (c.eatWord('FOREIGN', 'KEY')) {
    c.eatWord('IF', 'EXISTS');
    c.namePart();
    return done([{ op: 'noop', what: 'DROP FOREIGN KEY' }]);
  }
  if (c.eatWord('CHECK')) {
    c.namePart();
    return done([{ op: 'noop', what: 'DROP CHECK' }]);
  }
  if (c.eatWord('CONSTRAINT')) {
    c.eatWord('IF', 'EXISTS');
    // A unique key of that name goes; a CHECK or FOREIGN KEY changes nothing sluice records.
    return done([{ op: 'drop-index', name: c.namePart(), ifExists: true }]);
  }
  if (c.eatWord('PARTITION')) {
    c.rest();
    return [{ op: 'rows-changed', reason: 'DROP PARTITION deletes rows', structureKept: true }];
  }
  if (c.eatWord('SYSTEM', 'VERSIONING')) return done([{ op: 'system-versioning', add: false }]);
  if (c.isWord('PERIOD') && (c.isWord('FOR', 1) || c.isWord('IF', 1))) {
    c.expectWord('PERIOD');
    c.eatWord('IF', 'EXISTS');
    c.expectWord('FOR');
    return done([{ op: 'period', add: false, period: { name: c.namePart() } }]);
  }
  c.eatWord('COLUMN');
  const ifExists = c.eatWord('IF', 'EXISTS');
  const name = c.namePart();
  if (!c.eatWord('RESTRICT')) c.eatWord('CASCADE');
  return done([{ op: 'drop-column', name, ifExists }]);
}

/** A run of table options (`ENGINE=InnoDB COMMENT 'x'`, `DEFAULT CHARSET latin1`, `ALGORITHM=INPLACE`…). */
function tableOptions(c: Cursor): SpecItem[] {
  const items: SpecItem[] = [];
  while (!c.atEnd()) {
    const t = c.next();
    if (t.kind !== 'word') throw new Unclassified(`unexpected ${describeToken(t)} in ALTER TABLE`);
    if (t.upper === 'DEFAULT' && (c.isWord('CHARACTER') || c.isWord('CHAR') || c.isWord('CHARSET') || c.isWord('COLLATE'))) continue;
    if (t.upper === 'CHARACTER' || t.upper === 'CHAR' || t.upper === 'CHARSET' || t.upper === 'COLLATE') {
      if (t.upper === 'CHARACTER' || t.upper === 'CHAR') c.expectWord('SET');
      c.eatPunct('=');
      const value = c.next();
      if (value.kind !== 'word' && value.kind !== 'ident' && value.kind !== 'string') throw new Unclassified(`${t.upper} without a name`);
      const collation = t.upper === 'COLLATE';
      if (value.kind === 'word' && value.upper === 'DEFAULT')
        items.push({ op: 'table-charset', ...(collation ? { collationDefault: true } : { charsetDefault: true }) });
      else items.push({ op: 'table-charset', ...(collation ? { collation: value.value.toLowerCase() } : { charset: value.value.toLowerCase() }) });
      continue;
    }
    if (t.upper === 'WITH' && c.eatWord('SYSTEM', 'VERSIONING')) {
      items.push({ op: 'system-versioning', add: true });
      continue;
    }
    if (t.upper === 'PARTITION' && c.isWord('BY')) {
      c.rest();
      items.push({ op: 'noop', what: 'PARTITION BY' });
      continue;
    }
    if (t.upper === 'REMOVE' && c.eatWord('PARTITIONING')) {
      items.push({ op: 'noop', what: 'REMOVE PARTITIONING' });
      continue;
    }
    if (t.upper === 'ALGORITHM' || t.upper === 'LOCK' || t.upper === 'ENGINE' || TABLE_OPTIONS.has(t.upper)) {
      if ((t.upper === 'DATA' || t.upper === 'INDEX') && !c.eatWord('DIRECTORY')) throw new Unclassified(`${t.upper} in ALTER TABLE`);
      c.eatPunct('=');
      if (c.isPunct('(')) c.parenthesized();
      else {
        const value = c.next();
        if (t.upper === 'ENGINE' && !ROW_KEEPING_ENGINES.has(value.value.toUpperCase())) throw new Unclassified(`ENGINE=${describeToken(value)}`);
      }
      items.push({ op: 'noop', what: t.upper });
      continue;
    }
    if (t.upper === 'SEQUENCE') throw new Unclassified('ALTER TABLE … SEQUENCE');
    throw new Unclassified(`ALTER TABLE ${t.upper}`);
  }
  return items;
}

function drop(s: Statement, c: Cursor): DdlClassification {
  const temporary = c.eatWord('TEMPORARY');
  const object = c.next();
  const upper = object.kind === 'word' ? object.upper : '';
  if (IGNORED_OBJECTS.has(upper)) return { kind: 'ignore', reason: `DROP ${upper}` };
  if (upper === 'DATABASE' || upper === 'SCHEMA') {
    c.eatWord('IF', 'EXISTS');
    const db = dbName(s, c.namePart());
    if (!c.atEnd()) throw new Unclassified('unexpected text after DROP DATABASE');
    return { kind: 'database', op: 'drop', db };
  }
  if (upper === 'INDEX') {
    const ifExists = c.eatWord('IF', 'EXISTS');
    const name = c.namePart();
    c.expectWord('ON');
    const table = tableRef(s, c.name());
    return { kind: 'tables', effects: [{ table, change: { kind: 'alter', ops: [{ op: 'drop-index', name, ifExists }] } }] };
  }
  if (upper !== 'TABLE' && upper !== 'TABLES' && upper !== 'SEQUENCE') throw new Unclassified(`DROP ${describeToken(object)}`);
  c.eatWord('IF', 'EXISTS');
  const tables = [tableRef(s, c.name())];
  while (c.eatPunct(',')) tables.push(tableRef(s, c.name()));
  c.skipWait();
  if (!c.eatWord('RESTRICT')) c.eatWord('CASCADE');
  if (!c.atEnd()) throw new Unclassified('unexpected text after DROP TABLE');
  if (temporary) return { kind: 'ignore', reason: 'temporary table' };
  if (upper === 'SEQUENCE') return { kind: 'sequence', op: 'drop', tables };
  return { kind: 'tables', effects: tables.map((table) => ({ table, change: { kind: 'drop' } })) };
}

function rename(s: Statement, c: Cursor): DdlClassification {
  if (c.eatWord('USER')) return { kind: 'ignore', reason: 'RENAME USER' };
  if (!c.eatWord('TABLE')) c.expectWord('TABLES');
  c.eatWord('IF', 'EXISTS');
  const effects: TableEffect[] = [];
  do {
    const from = tableRef(s, c.name());
    c.skipWait();
    c.expectWord('TO');
    const to = tableRef(s, c.name());
    effects.push({ table: from, change: { kind: 'rename-out', to } }, { table: to, change: { kind: 'rename-in', from } });
  } while (c.eatPunct(','));
  if (!c.atEnd()) throw new Unclassified('unexpected text after RENAME TABLE');
  return { kind: 'tables', effects };
}
