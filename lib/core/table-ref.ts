import { ErrorCode, SluiceError } from '../errors.ts';

/*
 * A table is named by its two raw names, never by "db.table": a MySQL name may hold a dot, a slash,
 * a backtick or any other character, so a joined string cannot be split back reliably
 * (`x`.`dot.ted` and `x.dot`.`ted` would both be "x.dot.ted"). Text forms (flags, settings,
 * messages) use SQL quoting instead, which round-trips: `shop.orders`, `` `a.b`.`c/d` ``.
 */

/** A table, by its raw (unquoted) database and table names. */
export interface TableRef {
  readonly db: string;
  readonly table: string;
}

/** Names that need no quoting in the text forms (the parser accepts more, see parseTableRef). */
const PLAIN = /^[A-Za-z0-9_$]+$/;

const quote = (name: string) => `\`${name.replaceAll('`', '``')}\``;

/** One name as the text forms write it: plain when `[A-Za-z0-9_$]+`, else backtick-quoted with backticks doubled. */
export function formatName(name: string): string {
  return PLAIN.test(name) ? name : quote(name);
}

/** `db.table` when both names are plain, else both backtick-quoted: `` `a.b`.`c/d` ``. */
export function formatTableRef(ref: TableRef): string {
  return PLAIN.test(ref.db) && PLAIN.test(ref.table) ? `${ref.db}.${ref.table}` : `${quote(ref.db)}.${quote(ref.table)}`;
}

/** A key for maps and sets of tables: injective, unlike any joined form. */
export function tableKey(ref: TableRef): string {
  return JSON.stringify([ref.db, ref.table]);
}

/** The raw names of a `tableKey`. */
export function fromTableKey(key: string): TableRef {
  const [db, table] = JSON.parse(key) as [string, string];
  return { db, table };
}

/** Characters an unquoted name may hold: MySQL's unquoted identifier characters (ASCII letters, digits, `_`, `$`, and anything beyond ASCII). */
const UNQUOTED = /[A-Za-z0-9_$\u0080-\u{10FFFF}]/u;

/**
 * A scanner over a text form: names (plain or backtick-quoted) and the punctuation between them.
 * Errors say what was expected, where, and in which text.
 */
export class NameScanner {
  pos = 0;

  constructor(
    readonly text: string,
    /** What the text is, for messages (e.g. `--tables`). */
    private readonly what: string,
  ) {}

  fail(problem: string): never {
    throw new SluiceError(ErrorCode.TABLE_NAME, `${this.what} "${this.text}": ${problem}`);
  }

  skipSpace(): void {
    while (this.pos < this.text.length && /\s/.test(this.text[this.pos] as string)) this.pos++;
  }

  get done(): boolean {
    return this.pos >= this.text.length;
  }

  peek(): string | undefined {
    return this.text[this.pos];
  }

  /** Consumes `char` if it is next (after blanks). */
  accept(char: string): boolean {
    this.skipSpace();
    if (this.text[this.pos] !== char) return false;
    this.pos++;
    return true;
  }

  /** One name: `` `quoted` `` (a doubled backtick is one backtick) or unquoted. */
  name(): string {
    this.skipSpace();
    const start = this.pos;
    if (this.text[this.pos] === '`') {
      let name = '';
      this.pos++;
      for (;;) {
        const close = this.text.indexOf('`', this.pos);
        if (close < 0) this.fail(`the backtick at position ${start + 1} is never closed`);
        name += this.text.slice(this.pos, close);
        this.pos = close + 1;
        if (this.text[this.pos] !== '`') break;
        name += '`';
        this.pos++;
      }
      if (name === '') this.fail(`empty name \`\` at position ${start + 1}`);
      return name;
    }
    // An unquoted name runs to a blank or a separator; every character in it must be allowed unquoted.
    while (this.pos < this.text.length && !/[\s.,:`]/.test(this.text[this.pos] as string)) this.pos++;
    const word = this.text.slice(start, this.pos);
    if (word === '') {
      const char = this.text[this.pos];
      this.fail(char === undefined ? 'a name is missing at the end' : `expected a name at position ${start + 1}, found "${char}"`);
    }
    const bad = [...word].find((char) => !UNQUOTED.test(char));
    if (bad !== undefined) this.fail(`"${bad}" cannot appear in an unquoted name: quote it with backticks, ${quote(word)}`);
    return word;
  }

  /** `db.table`, each part plain or quoted. */
  tableRef(): TableRef {
    const db = this.name();
    if (!this.accept('.')) this.fail(`expected "." and a table name after the database ${formatName(db)} (write db.table)`);
    const table = this.name();
    this.skipSpace();
    if (this.peek() === '.') this.fail(`a table is named by two names, db.table; quote a name that holds a dot with backticks, e.g. \`a.b\`.c`);
    return { db, table };
  }
}

/** Parses one table in its text form: `db.table` or with backtick-quoted parts, `` `a.b`.`c/d` ``. */
export function parseTableRef(text: string, what = 'table'): TableRef {
  const scanner = new NameScanner(text, what);
  const ref = scanner.tableRef();
  scanner.skipSpace();
  if (!scanner.done) scanner.fail(`unexpected "${scanner.peek()}" at position ${scanner.pos + 1} after ${formatTableRef(ref)}`);
  return ref;
}

/** Parses a comma-separated list of tables; commas and dots inside backticks are part of the names. Empty items are ignored. */
export function parseTableRefs(text: string, what = 'tables'): TableRef[] {
  const scanner = new NameScanner(text, what);
  const refs: TableRef[] = [];
  for (;;) {
    while (scanner.accept(','));
    scanner.skipSpace();
    if (scanner.done) return refs;
    refs.push(scanner.tableRef());
    scanner.skipSpace();
    if (!scanner.done && !scanner.accept(',')) scanner.fail(`expected "," at position ${scanner.pos + 1}, found "${scanner.peek()}"`);
  }
}
