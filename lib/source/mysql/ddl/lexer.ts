/**
 * A MySQL/MariaDB pre-lexer for statement text read from the binlog. It does what the server's own
 * lexer does before parsing, and what no general SQL parser gets right:
 * - comments (`-- `, `#`, `/* … *\/`) disappear;
 * - executable comments `/*!NNNNN … *\/` and `/*M!NNNNNN … *\/` become code when the server that
 *   wrote the statement ran them, and disappear otherwise (`/*!` without a version always runs).
 *   MySQL (8.4 manual, "Comments") runs `/*!NNNNN` when its version is at least NNNNN, reading six
 *   digits from 8.1 on (five before: `/*!800001` was version 80000 and the code `1`), and never runs
 *   `/*M!`, a plain comment to it. MariaDB ("Comment Syntax") runs `/*!` and `/*M!` by its own
 *   version, five or six digits, but skips `/*!` with the MySQL-only versions 50700–99999;
 * - strings (`'…'`, `"…"` unless ANSI_QUOTES) are unescaped like the server does, quoted identifiers
 *   (`` `…` ``, `"…"` under ANSI_QUOTES) are unescaped (doubled quotes);
 * - hex and bit literals are single tokens.
 * The result is a token list; `render` turns a slice back into text a parser can read.
 */

export type TokenKind =
  | 'word' // unquoted identifier or keyword; `upper` is its upper-case form
  | 'ident' // quoted identifier; `value` is the name
  | 'string' // string literal; `value` is the unescaped text
  | 'number' // integer or decimal literal, `value` as written
  | 'hex' // X'…' or 0x…; `value` = the hex digits
  | 'bits' // B'…' or 0b…; `value` = the binary digits
  | 'variable' // @x or @@x
  | 'punct';

export interface Token {
  readonly kind: TokenKind;
  readonly value: string;
  /** Upper-case value of words (keyword comparisons); the value itself otherwise. */
  readonly upper: string;
  /** The token as written. */
  readonly raw: string;
  /** Whitespace or a comment separated this token from the previous one. */
  readonly spaced: boolean;
  /** Strings: the quote character; a backslash escape occurred (its meaning depends on sql_mode). */
  readonly quote?: "'" | '"' | '`';
  readonly escaped?: boolean;
}

/**
 * How the server that wrote a statement read its executable comments (`/*!NNNNN … *\/`, MariaDB's
 * `/*M!NNNNNN … *\/`): the writing server's dialect says (`Dialect.comments`).
 */
export interface CommentRules {
  /** The server's version, as `/*!` comments number it: 10.11.19 → 101119, 8.0.46 → 80046. */
  readonly version: number;
  /** `/*M!` comments run (MariaDB); to MySQL they are plain comments. */
  readonly mariadbComments: boolean;
  /** `/*!` versions may have six digits (MariaDB; MySQL from 8.1.0); else five are read. */
  readonly sixDigitVersions: boolean;
  /** `/*!` comments of the MySQL-only versions 50700–99999 run (MySQL); MariaDB skips them. */
  readonly mysqlOnlyVersions: boolean;
}

export interface LexOptions {
  /** How the server that wrote the statement read its executable comments. */
  readonly comments: CommentRules;
  /** sql_mode ANSI_QUOTES of the session that ran the statement: `"x"` is an identifier. */
  readonly ansiQuotes?: boolean;
  /** sql_mode NO_BACKSLASH_ESCAPES: a backslash in a string is an ordinary character. */
  readonly noBackslashEscapes?: boolean;
}

/** The text cannot be tokenized (an unterminated string, identifier or comment). */
export class LexError extends Error {
  override readonly name = 'LexError';
}

const ESCAPES: Record<string, string> = { '0': '\0', b: '\b', n: '\n', r: '\r', t: '\t', Z: '\x1a' };
const WORD = /[A-Za-z0-9_$\u0080-\uffff]/;
const SPACE = /[\s]/;
const MULTI_PUNCT = ['<=>', '<=', '>=', '<>', '!=', ':=', '||', '&&', '<<', '>>'];
/** MySQL-only versions that MariaDB skips inside `/*!` (but runs inside `/*M!`). */
const MYSQL_ONLY_FROM = 50700;
const MYSQL_ONLY_TO = 99999;

/**
 * Whether the executable comment starting at `text[at]` (right after `/*!` or `/*M!`) ran on the
 * server that wrote it, and how many version digits it has.
 */
function executableRuns(text: string, at: number, maria: boolean, options: LexOptions): { runs: boolean; digits: number } {
  const rules = options.comments;
  // `/*M!` is no executable comment to MySQL: the caller skips it as a comment.
  if (maria && !rules.mariadbComments) return { runs: false, digits: 0 };
  const digits = (rules.sixDigitVersions ? /^\d{5,6}/ : /^\d{5}/).exec(text.slice(at, at + 6))?.[0];
  if (digits === undefined) return { runs: true, digits: 0 };
  const version = Number(digits);
  if (version > rules.version) return { runs: false, digits: digits.length };
  return { runs: rules.mysqlOnlyVersions || maria || version < MYSQL_ONLY_FROM || version > MYSQL_ONLY_TO, digits: digits.length };
}

export function lex(text: string, options: LexOptions): Token[] {
  return new Lexer(text, options).tokens();
}

/** One pass over a statement's text: each step reads the token (or the space, or the comment) at `i`, if it is its kind. */
class Lexer {
  private readonly out: Token[] = [];
  private i = 0;
  private spaced = false;
  /** Inside an executable comment that runs: its `*\/` closes it. */
  private inExecutable = false;
  private readonly n: number;

  constructor(
    private readonly text: string,
    private readonly options: LexOptions,
  ) {
    this.n = text.length;
  }

  tokens(): Token[] {
    while (this.i < this.n) {
      if (this.space() || this.comment() || this.quotedToken() || this.prefixedLiteral() || this.variable() || this.wordOrNumber()) continue;
      this.punct();
    }
    if (this.inExecutable) throw new LexError('unterminated executable comment');
    return this.out;
  }

  private push(token: Omit<Token, 'spaced' | 'upper'> & { upper?: string }): void {
    this.out.push({ ...token, upper: token.upper ?? token.value, spaced: this.spaced });
    this.spaced = false;
  }

  /** Skips what separates tokens without being one: `i` moves to `end`. */
  private skipTo(end: number): true {
    this.i = end;
    this.spaced = true;
    return true;
  }

  private space(): boolean {
    return SPACE.test(this.text[this.i] as string) && this.skipTo(this.i + 1);
  }

  /** `#` and `-- ` line comments, `/* *\/` comments, and executable comments: the ones that ran are read through. */
  private comment(): boolean {
    const { text, i, n } = this;
    const c = text[i] as string;
    const next = text[i + 1];
    if (c === '#' || (c === '-' && next === '-' && (i + 2 >= n || text.charCodeAt(i + 2) <= 32))) {
      const end = text.indexOf('\n', i);
      return this.skipTo(end < 0 ? n : end + 1);
    }
    if (c === '*' && next === '/' && this.inExecutable) {
      this.inExecutable = false;
      return this.skipTo(i + 2);
    }
    if (c !== '/' || next !== '*') return false;
    const maria = text[i + 2] === 'M' && text[i + 3] === '!';
    const executable = maria || text[i + 2] === '!';
    if (executable && !this.inExecutable) {
      const j = i + (maria ? 4 : 3);
      const { runs, digits } = executableRuns(text, j, maria, this.options);
      if (runs) {
        this.inExecutable = true;
        return this.skipTo(j + digits);
      }
    } else if (executable) {
      throw new LexError(`nested executable comment at offset ${i}`);
    }
    const end = text.indexOf('*/', i + 2);
    if (end < 0) throw new LexError(`unterminated comment starting at offset ${i}`);
    return this.skipTo(end + 2);
  }

  /** Strings, and identifiers quoted with backticks (or double quotes under ANSI_QUOTES). */
  private quotedToken(): boolean {
    const { text, i, options } = this;
    const c = text[i] as string;
    if (c === "'" || c === '"') {
      const { value, end, escaped } = this.quoted(c, !options.noBackslashEscapes && !(c === '"' && options.ansiQuotes));
      if (c === '"' && options.ansiQuotes) this.push({ kind: 'ident', value, raw: text.slice(i, end), quote: '"' });
      else this.push({ kind: 'string', value, raw: text.slice(i, end), quote: c, escaped });
      this.i = end;
      return true;
    }
    if (c !== '`') return false;
    const { value, end } = this.quoted('`', false);
    this.push({ kind: 'ident', value, raw: text.slice(i, end), quote: '`' });
    this.i = end;
    return true;
  }

  /** X'0A' and B'101' literals (the prefix letter directly followed by a quote). */
  private prefixedLiteral(): boolean {
    const { text, i } = this;
    const c = text[i] as string;
    if (!((c === 'x' || c === 'X' || c === 'b' || c === 'B') && text[i + 1] === "'")) return false;
    const end = text.indexOf("'", i + 2);
    if (end < 0) throw new LexError(`unterminated literal starting at offset ${i}`);
    const digits = text.slice(i + 2, end);
    const hex = c === 'x' || c === 'X';
    if (!(hex ? /^[0-9a-fA-F]*$/ : /^[01]*$/).test(digits)) throw new LexError(`malformed ${hex ? 'hex' : 'bit'} literal at offset ${i}`);
    this.push({ kind: hex ? 'hex' : 'bits', value: digits, raw: text.slice(i, end + 1) });
    this.i = end + 1;
    return true;
  }

  /** `@user_var`, `@@system.var`, and their quoted forms. */
  private variable(): boolean {
    const { text, i, n } = this;
    if (text[i] !== '@') return false;
    let j = i + 1;
    if (text[j] === '@') j++;
    if (text[j] === '`' || text[j] === "'" || text[j] === '"') {
      this.i = j;
      const { end } = this.quoted(text[j] as string, false);
      this.push({ kind: 'variable', value: text.slice(i, end), raw: text.slice(i, end) });
      this.i = end;
      return true;
    }
    while (j < n && (WORD.test(text[j] as string) || text[j] === '.')) j++;
    this.push({ kind: 'variable', value: text.slice(i, j), raw: text.slice(i, j) });
    this.i = j;
    return true;
  }

  /** A number, a 0x/0b literal, or a word. */
  private wordOrNumber(): boolean {
    const { text, i, n, out, spaced } = this;
    const c = text[i] as string;
    if (!(WORD.test(c) || (c === '.' && /\d/.test(text[i + 1] ?? '') && !afterName(out, spaced)))) return false;
    const rest = text.slice(i);
    const qualified = lastIsDot(out, spaced);
    // Numbers and 0x/0b literals end where a name could not go on: `1t` and `0x1g` are names.
    const literal = qualified ? undefined : /^(?:0x[0-9a-fA-F]+|0b[01]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)/.exec(rest)?.[0];
    if (literal !== undefined && !WORD.test(rest[literal.length] ?? ' ')) {
      if (/^0x/.test(literal)) this.push({ kind: 'hex', value: literal.slice(2), raw: literal });
      else if (/^0b/.test(literal)) this.push({ kind: 'bits', value: literal.slice(2), raw: literal });
      else this.push({ kind: 'number', value: literal, raw: literal });
      this.i += literal.length;
      return true;
    }
    let j = i;
    while (j < n && WORD.test(text[j] as string)) j++;
    const word = text.slice(i, j);
    this.push({ kind: 'word', value: word, upper: word.toUpperCase(), raw: word });
    this.i = j;
    return true;
  }

  private punct(): void {
    const punct = MULTI_PUNCT.find((p) => this.text.startsWith(p, this.i)) ?? (this.text[this.i] as string);
    this.push({ kind: 'punct', value: punct, raw: punct });
    this.i += punct.length;
  }

  /** Reads a quoted run starting at `i` (the quote); returns the unescaped value and the end. */
  private quoted(quote: string, backslashes: boolean): { value: string; end: number; escaped: boolean } {
    const { text, i, n } = this;
    let value = '';
    let escaped = false;
    let j = i + 1;
    while (j < n) {
      const c = text[j] as string;
      if (backslashes && c === '\\' && j + 1 < n) {
        const next = text[j + 1] as string;
        escaped = true;
        // \% and \_ keep their backslash (they are LIKE escapes), every other escape is a character.
        value += next === '%' || next === '_' ? `\\${next}` : (ESCAPES[next] ?? next);
        j += 2;
        continue;
      }
      if (c === quote) {
        if (text[j + 1] === quote) {
          value += quote;
          j += 2;
          continue;
        }
        return { value, end: j + 1, escaped };
      }
      value += c;
      j++;
    }
    throw new LexError(`unterminated ${quote === '`' ? 'identifier' : 'string'} starting at offset ${i}`);
  }
}

function lastIsDot(tokens: Token[], spaced: boolean): boolean {
  const last = tokens.at(-1);
  return !spaced && last?.kind === 'punct' && last.value === '.';
}

/** `t1.5`: right after a name, `.5` is a qualifier dot and a name part, not a number. */
function afterName(tokens: Token[], spaced: boolean): boolean {
  const last = tokens.at(-1);
  return !spaced && last !== undefined && (last.kind === 'word' || last.kind === 'ident');
}

/**
 * Text for a parser from a token slice: comments gone, executable comments resolved, quoted
 * identifiers always in backticks (so ANSI_QUOTES needs no parser support).
 */
export function render(tokens: readonly Token[]): string {
  let out = '';
  for (const token of tokens) {
    if (out && token.spaced) out += ' ';
    out += token.kind === 'ident' ? quoteName(token.value) : token.raw;
  }
  return out;
}

/** A name in backticks, backticks doubled. */
export function quoteName(name: string): string {
  return `\`${name.replaceAll('`', '``')}\``;
}

/**
 * A token for a message (a reason a statement is not understood, which capture may log): words,
 * names and punctuation as written, a literal by its kind only — a string or a number in a DDL
 * statement may be a secret (a password option, a default value).
 */
export function describeToken(t: Token | undefined): string {
  if (!t) return 'the end of the statement';
  if (t.kind === 'word' || t.kind === 'punct') return t.raw;
  return t.kind === 'ident' ? quoteName(t.value) : `a ${t.kind} literal`;
}
