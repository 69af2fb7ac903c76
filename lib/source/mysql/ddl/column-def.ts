import { lobForBytes, type TypeDescriptor, UnsupportedTypeError } from '../../../schema/column-type.ts';
import type { ColumnDefinition, DefaultValue, Literal } from '../../../schema/definition.ts';
import { describeToken as describe, type Token } from './lexer.ts';

/**
 * One column definition (`name type [modifiers] [attributes]`) read from the pre-lexer's tokens by
 * the column grammar MariaDB and MySQL share (MariaDB's `sql_yacc.yy` `field_spec`/`field_def`/
 * `attribute`, MySQL 8.0's "CREATE TABLE" column_definition), not by a general SQL parser: both
 * servers' type synonyms (MySQL 8.0 manual, "Using Data Types from Other Database Engines";
 * MariaDB's string type pages: `NATIONAL CHAR VARYING`, `LONG VARCHAR`, `CHAR BYTE`…), the
 * charset modifiers right after the type (`CHARACTER SET x BINARY`, `ASCII`, `UNICODE`, `BYTE`,
 * `COMPRESSED`), and every column attribute either server takes. What is read here must mean
 * exactly what the server made of it (test/integration/ddl-schema.test.ts checks that against
 * MariaDB's information_schema); anything else throws UnsupportedTypeError, and the statement is
 * classified as unknown. Expressions (defaults in parentheses, generated columns, CHECK) are
 * skipped as balanced token runs: their values are never derived.
 */

export interface ColumnOptions {
  /** The statement holds a backslash escape: string defaults depend on sql_mode. */
  readonly escaped: boolean;
  /** sql_mode REAL_AS_FLOAT of the statement: REAL is FLOAT, else DOUBLE. */
  readonly realAsFloat?: boolean;
}

interface ParsedType {
  type: TypeDescriptor;
  /** SERIAL = BIGINT UNSIGNED NOT NULL AUTO_INCREMENT UNIQUE. */
  serial?: boolean;
  /** A character type (CHAR, VARCHAR, TEXT, ENUM, SET): takes the charset modifiers. */
  textual?: boolean;
}

const INTEGERS: Record<string, string> = {
  TINYINT: 'tinyint',
  INT1: 'tinyint',
  SMALLINT: 'smallint',
  INT2: 'smallint',
  MEDIUMINT: 'mediumint',
  INT3: 'mediumint',
  MIDDLEINT: 'mediumint',
  INT: 'int',
  INTEGER: 'int',
  INT4: 'int',
  BIGINT: 'bigint',
  INT8: 'bigint',
};
const DECIMALS = new Set(['DECIMAL', 'DEC', 'NUMERIC', 'FIXED']);
const GEOMETRIES = new Set(['geometry', 'point', 'linestring', 'polygon', 'multipoint', 'multilinestring', 'multipolygon', 'geometrycollection']);
const PLAIN: Record<string, string> = {
  DATE: 'date',
  TINYBLOB: 'tinyblob',
  MEDIUMBLOB: 'mediumblob',
  LONGBLOB: 'longblob',
  TINYTEXT: 'tinytext',
  MEDIUMTEXT: 'mediumtext',
  LONGTEXT: 'longtext',
  JSON: 'json',
  UUID: 'uuid',
  INET4: 'inet4',
  INET6: 'inet6',
  GEOMETRY: 'geometry',
  POINT: 'point',
  LINESTRING: 'linestring',
  POLYGON: 'polygon',
  MULTIPOINT: 'multipoint',
  MULTILINESTRING: 'multilinestring',
  MULTIPOLYGON: 'multipolygon',
  GEOMETRYCOLLECTION: 'geometrycollection',
  GEOMCOLLECTION: 'geometrycollection',
};
/** `ON DELETE|UPDATE` actions of a REFERENCES clause. */
const REFERENCE_ACTIONS = ['RESTRICT', 'CASCADE', 'NO ACTION', 'SET NULL', 'SET DEFAULT'];
/** Attributes of MySQL 8 that take one word: `COLUMN_FORMAT FIXED`, `STORAGE DISK`, `SRID 4326`. */
const ONE_WORD_ATTRIBUTES = new Set(['COLUMN_FORMAT', 'STORAGE', 'SRID']);

class Reader {
  i = 1;
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
  eat(...words: string[]): boolean {
    if (!words.every((w, k) => this.isWord(w, k))) return false;
    this.i += words.length;
    return true;
  }
  eatPunct(p: string): boolean {
    if (!this.isPunct(p)) return false;
    this.i++;
    return true;
  }
  next(): Token {
    const t = this.peek();
    if (!t) throw new UnsupportedTypeError('a column definition that ends too early');
    this.i++;
    return t;
  }
  /** A word, quoted name or string naming something (a charset, a collation, an engine attribute's value). */
  name(what: string): string {
    const t = this.next();
    if (t.kind === 'word' || t.kind === 'ident' || t.kind === 'string') return t.value;
    throw new UnsupportedTypeError(`${what}: ${describe(t)}`);
  }
  /** The tokens inside the parentheses at the cursor; the cursor moves past them. */
  parenthesized(): Token[] {
    if (!this.eatPunct('(')) throw new UnsupportedTypeError(`expected ( at ${describe(this.peek())}`);
    const start = this.i;
    for (let depth = 1; !this.atEnd(); ) {
      const t = this.next();
      if (t.kind === 'punct' && t.value === '(') depth++;
      else if (t.kind === 'punct' && t.value === ')' && --depth === 0) return this.tokens.slice(start, this.i - 1);
    }
    throw new UnsupportedTypeError('unbalanced parentheses in a column definition');
  }
  /** `(n)` or `(n, m)` of plain integers, when present. */
  numbers(): number[] | undefined {
    if (!this.isPunct('(')) return undefined;
    const inside = this.parenthesized();
    const nums: number[] = [];
    for (const [k, t] of inside.entries()) {
      if (k % 2 === 1) {
        if (t.kind !== 'punct' || t.value !== ',') throw new UnsupportedTypeError('a type argument that is not a number list');
        continue;
      }
      if (t.kind !== 'number' || !/^\d+$/.test(t.value)) throw new UnsupportedTypeError('a type argument that is not a plain integer');
      nums.push(Number(t.value));
    }
    if (inside.length % 2 === 0) throw new UnsupportedTypeError('a type argument list that ends with a comma');
    return nums;
  }
  /** A qualified name `a` or `a.b`. */
  qualifiedName(): void {
    this.name('a name');
    while (this.eatPunct('.')) this.name('a name');
  }
}

/** One column definition: `tokens[0]` is the column's name. */
export function columnDefinition(tokens: readonly Token[], options: ColumnOptions): ColumnDefinition {
  const head = tokens[0];
  if (!head || (head.kind !== 'word' && head.kind !== 'ident')) throw new UnsupportedTypeError('a column definition without a name');
  const r = new Reader(tokens);
  const parsed = dataType(r, options);
  const column = new ColumnAttributes(parsed);
  column.charsetModifiers(r, parsed);
  while (!r.atEnd()) {
    const t = r.next();
    if (t.kind !== 'word') throw new UnsupportedTypeError(`column attribute ${describe(t)}`);
    if (!column.attribute(r, t.upper, options)) storageAttribute(r, t.upper);
  }
  return column.definition(head.value);
}

/** What a column definition's type modifiers and attributes say, filled in as they are read. */
class ColumnAttributes {
  private type: TypeDescriptor;
  private charset: string | undefined;
  private collation: string | undefined;
  private collationRule: ColumnDefinition['collationRule'];
  private nullable: boolean | undefined;
  private def: DefaultValue = { kind: 'none' };
  private autoIncrement: boolean;
  private generated = false;
  private invisible = false;
  private primaryKey = false;
  private unique: boolean;
  private rowPeriod: ColumnDefinition['rowPeriod'];
  private systemVersioning: boolean | undefined;

  constructor(parsed: ParsedType) {
    this.type = parsed.type;
    this.charset = parsed.type.charset;
    this.nullable = parsed.serial ? false : undefined;
    this.autoIncrement = parsed.serial === true;
    this.unique = parsed.serial === true;
  }

  /**
   * The `binary` rule of both grammars, right after the type: BYTE | BINARY [charset] | charset [BINARY],
   * charset = CHARACTER SET x | CHAR SET x | CHARSET x | ASCII | UNICODE; MariaDB's COMPRESSED around it.
   */
  charsetModifiers(r: Reader, parsed: ParsedType): void {
    for (;;) {
      if (r.eat('COMPRESSED')) {
        if (r.eatPunct('=')) r.name('a compression method');
        continue;
      }
      if (!parsed.textual) return;
      if (r.eat('BINARY')) this.setCollationRule('binary');
      else if (r.eat('BYTE')) this.charset = 'binary';
      else if (r.eat('ASCII')) this.charset = 'latin1';
      else if (r.eat('UNICODE')) this.charset = 'ucs2';
      else if (r.eat('CHARACTER', 'SET') || r.eat('CHAR', 'SET') || r.eat('CHARSET')) {
        this.charset = r.eat('BINARY') ? 'binary' : r.name('a charset');
        if (this.charset.toUpperCase() === 'DEFAULT') throw new UnsupportedTypeError('CHARACTER SET DEFAULT on a column');
      } else return;
    }
  }

  /** Reads one attribute that shapes the column (its first word, `word`, read); false for any other. */
  attribute(r: Reader, word: string, options: ColumnOptions): boolean {
    switch (word) {
      case 'NOT':
        if (r.eat('NULL')) this.nullable = false;
        else if (!r.eat('ENFORCED')) throw new UnsupportedTypeError(`NOT ${describe(r.peek())} in a column definition`);
        return true;
      case 'NULL':
        this.nullable = true;
        return true;
      case 'DEFAULT':
        this.def = defaultValue(r, options.escaped);
        return true;
      case 'ON':
        // ON UPDATE CURRENT_TIMESTAMP[(n)]: the value of later updates, which the binlog carries.
        if (!r.eat('UPDATE')) throw new UnsupportedTypeError(`ON ${describe(r.peek())} in a column definition`);
        r.name('ON UPDATE');
        if (r.isPunct('(')) r.parenthesized();
        return true;
      case 'AUTO_INCREMENT':
        this.autoIncrement = true;
        return true;
      case 'SERIAL':
        if (!r.eat('DEFAULT', 'VALUE')) throw new UnsupportedTypeError('SERIAL in a column definition');
        this.nullable = false;
        this.autoIncrement = true;
        this.unique = true;
        return true;
      case 'UNIQUE':
        r.eat('KEY');
        this.unique = true;
        return true;
      case 'PRIMARY':
        if (!r.eat('KEY')) throw new UnsupportedTypeError('PRIMARY without KEY');
        this.primaryKey = true;
        return true;
      case 'KEY':
        // A column's `KEY` is its PRIMARY KEY in both grammars (`opt_primary KEY_sym`).
        this.primaryKey = true;
        return true;
      case 'COLLATE':
        r.eatPunct('=');
        if (r.isWord('DEFAULT')) {
          r.next();
          this.setCollationRule('default');
        } else {
          if (this.collationRule !== undefined) throw new UnsupportedTypeError('conflicting collations');
          this.collation = r.name('a collation');
        }
        return true;
      case 'INVISIBLE':
      case 'VISIBLE':
        this.invisible = word === 'INVISIBLE';
        return true;
      case 'WITH':
      case 'WITHOUT':
        if (!r.eat('SYSTEM', 'VERSIONING')) throw new UnsupportedTypeError(`${word} ${describe(r.peek())} in a column definition`);
        this.systemVersioning = word === 'WITH';
        return true;
      case 'GENERATED':
        if (!r.eat('ALWAYS') || !r.isWord('AS')) throw new UnsupportedTypeError('GENERATED without ALWAYS AS');
        return true;
      case 'AS':
        this.generatedAs(r);
        return true;
      default:
        return false;
    }
  }

  /** `AS (expr) [VIRTUAL|STORED|PERSISTENT]`, or MariaDB's `AS ROW START|END` of system versioning. */
  private generatedAs(r: Reader): void {
    this.generated = true;
    if (r.eat('ROW')) {
      if (r.eat('START')) this.rowPeriod = 'start';
      else if (r.eat('END')) this.rowPeriod = 'end';
      else throw new UnsupportedTypeError(`AS ROW ${describe(r.peek())}`);
      return;
    }
    r.parenthesized();
    if (!r.eat('VIRTUAL') && !r.eat('STORED')) r.eat('PERSISTENT');
  }

  private setCollationRule(rule: 'binary' | 'default'): void {
    if (this.collation !== undefined || (this.collationRule !== undefined && this.collationRule !== rule))
      throw new UnsupportedTypeError('conflicting collations');
    this.collationRule = rule;
  }

  definition(name: string): ColumnDefinition {
    const { charset, collation, collationRule, rowPeriod, systemVersioning } = this;
    const type =
      charset !== undefined || collation !== undefined
        ? { ...this.type, ...(charset !== undefined ? { charset } : {}), ...(collation ? { collation } : {}) }
        : this.type;
    return {
      name,
      type,
      nullable: this.nullable,
      default: this.def,
      autoIncrement: this.autoIncrement,
      generated: this.generated,
      invisible: this.invisible,
      primaryKey: this.primaryKey,
      unique: this.unique,
      ...(collationRule ? { collationRule } : {}),
      ...(rowPeriod ? { rowPeriod } : {}),
      ...(systemVersioning !== undefined ? { systemVersioning } : {}),
    };
  }
}

/** Reads one attribute that only matters to storage or to other tables (its first word, `word`, read); throws on an unknown one. */
function storageAttribute(r: Reader, word: string): void {
  switch (word) {
    case 'COMMENT':
      r.eatPunct('=');
      if (r.next().kind !== 'string') throw new UnsupportedTypeError('COMMENT without a string');
      return;
    case 'COMPRESSED':
      // MariaDB's deprecated place for it, after the attributes: storage only.
      if (r.eatPunct('=')) r.name('a compression method');
      return;
    case 'CONSTRAINT':
      if (!r.isWord('CHECK') && !r.isWord('REFERENCES')) r.name('a constraint name');
      if (!r.isWord('CHECK') && !r.isWord('REFERENCES')) throw new UnsupportedTypeError('CONSTRAINT without CHECK or REFERENCES');
      return;
    case 'CHECK':
      r.parenthesized();
      return;
    case 'ENFORCED':
      return;
    case 'REFERENCES':
      references(r);
      return;
    case 'ENGINE_ATTRIBUTE':
    case 'SECONDARY_ENGINE_ATTRIBUTE':
      r.eatPunct('=');
      if (r.next().kind !== 'string') throw new UnsupportedTypeError(`${word} without a string`);
      return;
  }
  if (ONE_WORD_ATTRIBUTES.has(word)) {
    const value = r.next();
    if (value.kind !== 'word' && value.kind !== 'number') throw new UnsupportedTypeError(`${word} ${describe(value)}`);
    return;
  }
  // MariaDB's engine-defined attributes (`REF_SYSTEM_ID=4326`, `IDENT = value`): storage only.
  if (r.eatPunct('=')) {
    const value = r.next();
    if (value.kind === 'punct') throw new UnsupportedTypeError(`${word} = ${describe(value)}`);
    return;
  }
  throw new UnsupportedTypeError(`column attribute ${word}`);
}

/** SIGNED / UNSIGNED / ZEROFILL after a numeric type (ZEROFILL implies UNSIGNED; its padding is display only). */
function numericOptions(r: Reader): boolean {
  let unsigned = false;
  for (;;) {
    if (r.eat('UNSIGNED') || r.eat('ZEROFILL')) unsigned = true;
    else if (!r.eat('SIGNED')) return unsigned;
  }
}

function dataType(r: Reader, options: ColumnOptions): ParsedType {
  const t = r.next();
  if (t.kind !== 'word') throw new UnsupportedTypeError(`a column type that is ${describe(t)}`);
  const word = t.upper;
  const integer = INTEGERS[word];
  if (integer) {
    r.numbers(); // display width
    return { type: { base: integer, unsigned: numericOptions(r) } };
  }
  if (DECIMALS.has(word)) {
    const [precision, scale] = r.numbers() ?? [];
    return { type: { base: 'decimal', precision, scale, unsigned: numericOptions(r) } };
  }
  const plain = PLAIN[word];
  if (plain) {
    // MariaDB's grammar takes `(M[,D])` after a plugin type (`GEOMETRY(9,4)`); it changes nothing stored.
    if (GEOMETRIES.has(plain)) r.numbers();
    return { type: { base: plain }, ...(plain.endsWith('text') ? { textual: true } : {}) };
  }
  const numeric = numberOrTimeType(r, word, options);
  if (numeric) return numeric;
  switch (word) {
    case 'CHAR':
    case 'CHARACTER':
      if (r.eat('VARYING')) return varchar(r);
      return { type: { base: 'char', length: r.numbers()?.[0] ?? 1 }, textual: true };
    case 'VARCHAR':
    case 'VARCHARACTER':
      return varchar(r);
    case 'NATIONAL':
      if (r.eat('VARCHAR') || r.eat('VARCHARACTER')) return national(varchar(r));
      if (!r.eat('CHAR') && !r.eat('CHARACTER')) throw new UnsupportedTypeError(`NATIONAL ${describe(r.peek())}`);
      if (r.eat('VARYING')) return national(varchar(r));
      return national({ type: { base: 'char', length: r.numbers()?.[0] ?? 1 } });
    case 'NCHAR':
      if (r.eat('VARCHAR') || r.eat('VARCHARACTER') || r.eat('VARYING')) return national(varchar(r));
      return national({ type: { base: 'char', length: r.numbers()?.[0] ?? 1 } });
    case 'NVARCHAR':
      return national(varchar(r));
    case 'BINARY':
      return { type: { base: 'binary', length: r.numbers()?.[0] ?? 1 } };
    case 'VARBINARY': {
      const length = r.numbers()?.[0];
      if (length === undefined) throw new UnsupportedTypeError('VARBINARY without a length');
      return { type: { base: 'varbinary', length } };
    }
    case 'BLOB': {
      const bytes = r.numbers()?.[0];
      return { type: { base: bytes === undefined ? 'blob' : lobForBytes(bytes, false) } };
    }
    case 'TEXT': {
      // TEXT(n) holds n characters: its type depends on the charset's size, decided with the charset (lib/schema/version.ts).
      const chars = r.numbers()?.[0];
      return { type: { base: 'text', ...(chars !== undefined ? { length: chars } : {}) }, textual: true };
    }
    case 'LONG':
      // MariaDB and MySQL: LONG VARBINARY is MEDIUMBLOB; LONG, LONG VARCHAR, LONG CHAR VARYING are MEDIUMTEXT.
      if (r.eat('VARBINARY')) return { type: { base: 'mediumblob' } };
      if (!r.eat('VARCHAR') && !r.eat('VARCHARACTER') && !r.eat('CHAR', 'VARYING')) r.eat('CHARACTER', 'VARYING');
      return { type: { base: 'mediumtext' }, textual: true };
    case 'ENUM':
    case 'SET':
      return { type: { base: word.toLowerCase(), values: stringList(r.parenthesized()) }, textual: true };
    case 'SERIAL':
      return { type: { base: 'bigint', unsigned: true }, serial: true };
    case 'VECTOR': {
      // MySQL 9.0+ VECTOR(n) (n float32 values, 2048 when not given) and MariaDB 11.7+ VECTOR(n).
      const [n] = r.numbers() ?? [];
      return { type: { base: 'vector', length: n ?? 2048 } };
    }
    default:
      throw new UnsupportedTypeError(`data type ${word}`);
  }
}

/** BOOL, BIT, FLOAT, DOUBLE and REAL, the temporal types and YEAR; undefined for any other word. */
function numberOrTimeType(r: Reader, word: string, options: ColumnOptions): ParsedType | undefined {
  switch (word) {
    case 'BOOL':
    case 'BOOLEAN':
      return { type: { base: 'tinyint' } };
    case 'BIT':
      return { type: { base: 'bit', length: r.numbers()?.[0] ?? 1 } };
    case 'FLOAT':
    case 'FLOAT4': {
      const [precision, scale] = r.numbers() ?? [];
      const unsigned = numericOptions(r);
      // FLOAT(p): p ≤ 24 is single precision, 25..53 double; FLOAT(M,D) stays single.
      if (scale !== undefined) return { type: { base: 'float', unsigned, precision, scale } };
      return { type: { base: precision !== undefined && precision > 24 ? 'double' : 'float', unsigned } };
    }
    case 'DOUBLE':
    case 'FLOAT8':
    case 'REAL': {
      if (word === 'DOUBLE') r.eat('PRECISION');
      const [precision, scale] = r.numbers() ?? [];
      const base = word === 'REAL' && options.realAsFloat ? 'float' : 'double';
      // DOUBLE(M,D) rounds stored values to D decimals: kept so a default is not taken as exact.
      return { type: { base, unsigned: numericOptions(r), ...(scale !== undefined ? { precision, scale } : {}) } };
    }
    case 'DATETIME':
    case 'TIMESTAMP':
    case 'TIME':
      return { type: { base: word.toLowerCase(), fsp: r.numbers()?.[0] ?? 0 } };
    case 'YEAR':
    case 'SQL_TSI_YEAR': {
      // YEAR(2) (MariaDB keeps it, deprecated) is YEAR to the binlog and to information_schema's type; its values are read as four digits.
      const [digits] = r.numbers() ?? [];
      numericOptions(r);
      if (digits !== undefined && digits !== 4 && digits !== 2) throw new UnsupportedTypeError(`YEAR(${digits})`);
      return { type: { base: 'year' } };
    }
    default:
      return undefined;
  }
}

function varchar(r: Reader): ParsedType {
  return { type: { base: 'varchar', length: r.numbers()?.[0] }, textual: true };
}

/** NATIONAL/NCHAR types: the predefined utf8 charset, utf8mb3 on MariaDB 10.6+ and MySQL 8 (they take BINARY, not a charset). */
function national(parsed: ParsedType): ParsedType {
  return { type: { ...parsed.type, charset: 'utf8mb3' }, textual: true };
}

/** ENUM/SET members: string literals, adjacent ones joined as the server joins them. */
function stringList(tokens: Token[]): string[] {
  const values: string[] = [];
  let current: string | undefined;
  for (const t of tokens) {
    if (t.kind === 'string') current = (current ?? '') + t.value;
    else if (t.kind === 'punct' && t.value === ',' && current !== undefined) {
      values.push(current);
      current = undefined;
    } else throw new UnsupportedTypeError(`an ENUM or SET member that is ${describe(t)}`);
  }
  if (current === undefined) throw new UnsupportedTypeError('an empty ENUM or SET member');
  values.push(current);
  return values;
}

/** `REFERENCES t [(cols)] [MATCH …] [ON DELETE|UPDATE action]…`: a foreign key, nothing sluice records. */
function references(r: Reader): void {
  r.qualifiedName();
  if (r.isPunct('(')) r.parenthesized();
  if (r.eat('MATCH')) r.name('MATCH');
  while (r.eat('ON')) {
    if (!r.eat('DELETE') && !r.eat('UPDATE')) throw new UnsupportedTypeError(`ON ${describe(r.peek())} in REFERENCES`);
    const action = REFERENCE_ACTIONS.find((a) => r.eat(...a.split(' ')));
    if (!action) throw new UnsupportedTypeError(`a REFERENCES action ${describe(r.peek())}`);
  }
}

/**
 * A DEFAULT's value: a literal (what `fill` may derive rows' values from), NULL, or anything else
 * as an expression. Without parentheses both grammars take only a literal or a simple expression
 * (a function call, `NEXT VALUE FOR s`, `CURRENT_TIMESTAMP`, an introduced string); operators
 * need parentheses, so a term ends where the next attribute starts.
 */
function defaultValue(r: Reader, escaped: boolean): DefaultValue {
  const literal = literalValue(r, escaped);
  if (literal === 'null') return { kind: 'null' };
  if (literal) return { kind: 'literal', literal };
  expressionTerm(r);
  return { kind: 'expression' };
}

/** A literal at the cursor (consumed), `'null'`, or undefined (nothing consumed) when the default is not one. */
function literalValue(r: Reader, escaped: boolean): Literal | 'null' | undefined {
  const t = r.peek();
  if (!t) throw new UnsupportedTypeError('DEFAULT without a value');
  if (t.kind === 'punct' && (t.value === '-' || t.value === '+') && r.peek(1)?.kind === 'number') {
    r.i += 2;
    const text = (r.tokens[r.i - 1] as Token).value;
    return { kind: 'number', text: t.value === '-' ? `-${text}` : text };
  }
  switch (t.kind) {
    case 'number':
      r.i++;
      return { kind: 'number', text: t.value };
    case 'hex':
      r.i++;
      return { kind: 'hex', digits: t.value };
    case 'bits':
      r.i++;
      return { kind: 'bits', digits: t.value };
    case 'string': {
      let value = '';
      while (r.peek()?.kind === 'string') value += r.next().value;
      return { kind: 'string', value, escaped };
    }
    case 'word':
      if (t.upper === 'NULL') {
        r.i++;
        return 'null';
      }
      if (t.upper === 'TRUE' || t.upper === 'FALSE') {
        r.i++;
        return { kind: 'boolean', value: t.upper === 'TRUE' };
      }
      return undefined;
    default:
      return undefined;
  }
}

/** Skips one non-parenthesized default expression: `(…)`, `f(…)`, `NEXT VALUE FOR s`, `_cs'x'`, `DATE 'x'`, `CASE … END`, a keyword or a name. */
function expressionTerm(r: Reader): void {
  const t = r.next();
  if (t.kind === 'punct') {
    if (t.value === '(') {
      r.i--;
      r.parenthesized();
      return;
    }
    if (t.value === '-' || t.value === '+' || t.value === '!' || t.value === '~') {
      expressionTerm(r);
      return;
    }
    if (t.value === '{') {
      // An ODBC escape, `{d '2024-01-01'}`.
      while (!r.eatPunct('}')) r.next();
      return;
    }
    throw new UnsupportedTypeError(`a DEFAULT that starts with ${t.value}`);
  }
  if (t.kind !== 'word' && t.kind !== 'ident') throw new UnsupportedTypeError(`a DEFAULT that is ${describe(t)}`);
  if (t.kind === 'word' && (t.upper === 'NEXT' || t.upper === 'PREVIOUS') && r.eat('VALUE', 'FOR')) {
    r.qualifiedName();
    return;
  }
  if (t.kind === 'word' && t.upper === 'CASE') {
    for (let depth = 1; depth > 0; ) {
      const u = r.next();
      if (u.kind === 'word' && u.upper === 'CASE') depth++;
      else if (u.kind === 'word' && u.upper === 'END') depth--;
    }
    return;
  }
  // An introduced literal (`_latin1'x'`, `N'x'`, `DATE '2024-01-01'`, `BINARY 'x'`), or a unary keyword.
  const next = r.peek();
  if (next && (next.kind === 'string' || next.kind === 'hex' || next.kind === 'bits')) {
    while (r.peek()?.kind === 'string' || r.peek()?.kind === 'hex' || r.peek()?.kind === 'bits') r.next();
    return;
  }
  if (t.kind === 'word' && t.upper === 'BINARY') {
    expressionTerm(r);
    return;
  }
  while (r.eatPunct('.')) r.name('a name');
  if (r.isPunct('(')) r.parenthesized();
}
