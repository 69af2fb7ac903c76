import { lobForBytes, type TypeDescriptor, UnsupportedTypeError } from '../../../schema/column-type.ts';
import type { ColumnDefinition, DefaultValue, Literal } from '../../../schema/definition.ts';

/**
 * sqlparser-rs column definitions (mysql dialect) → `ColumnDefinition`. Only shapes listed here
 * are accepted; anything else throws, and the statement is classified as unknown. sqlparser-rs
 * reads some MariaDB syntax wrongly without an error (ADD SYSTEM VERSIONING becomes a column
 * `SYSTEM` of a custom type `VERSIONING`): custom types are accepted only from an allow-list.
 */

// biome-ignore lint/suspicious/noExplicitAny: the AST is sqlparser-rs JSON, checked shape by shape
type Ast = any;

/** `{ Int: undefined }` → `['Int', undefined]`; `'Date'` → `['Date', undefined]`. */
function variant(node: Ast): [string, Ast] {
  if (typeof node === 'string') return [node, undefined];
  if (node && typeof node === 'object') {
    const keys = Object.keys(node);
    if (keys.length === 1) return [keys[0] as string, node[keys[0] as string]];
  }
  throw new UnsupportedTypeError(`unexpected AST node ${JSON.stringify(node)}`);
}

function optionalNumber(x: Ast): number | undefined {
  if (x === undefined || x === null || x === 'None') return undefined;
  if (typeof x === 'number') return x;
  throw new UnsupportedTypeError(`unexpected length ${JSON.stringify(x)}`);
}

/** ExactNumberInfo: `"None"` | `{Precision: p}` | `{PrecisionAndScale: [p, s]}`. */
function precisionScale(info: Ast): { precision?: number; scale?: number } {
  if (info === undefined || info === null || info === 'None') return {};
  const [kind, value] = variant(info);
  if (kind === 'Precision') return { precision: value };
  if (kind === 'PrecisionAndScale') return { precision: value[0], scale: value[1] };
  throw new UnsupportedTypeError(`number info ${kind}`);
}

/** CharacterLength: `{IntegerLength: {length, unit}}`; `Max` is not MySQL. */
function charLength(info: Ast): number | undefined {
  if (info === undefined || info === null) return undefined;
  const [kind, value] = variant(info);
  if (kind === 'IntegerLength' && value.unit === undefined) return value.length;
  throw new UnsupportedTypeError(`character length ${kind}`);
}

const INT_NAMES: Record<string, string> = {
  TinyInt: 'tinyint',
  SmallInt: 'smallint',
  Int2: 'smallint',
  MediumInt: 'mediumint',
  Int: 'int',
  Integer: 'int',
  Int4: 'int',
  BigInt: 'bigint',
  Int8: 'bigint',
};
const CUSTOM_INTS: Record<string, string> = { INT1: 'tinyint', INT2: 'smallint', INT3: 'mediumint', MIDDLEINT: 'mediumint', INT4: 'int', INT8: 'bigint' };
const CUSTOM_PLAIN: Record<string, string> = {
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

interface ParsedType {
  type: TypeDescriptor;
  /** SERIAL = BIGINT UNSIGNED NOT NULL AUTO_INCREMENT UNIQUE. */
  serial?: boolean;
}

function dataType(node: Ast): ParsedType {
  const [name, arg] = variant(node);
  const unsigned = name.endsWith('Unsigned');
  const base = unsigned ? name.slice(0, -'Unsigned'.length) : name;
  const intName = INT_NAMES[base];
  if (intName) return { type: { base: intName, unsigned } };
  switch (base) {
    case 'Bool':
    case 'Boolean':
      return { type: { base: 'tinyint' } };
    case 'Decimal':
    case 'Dec':
    case 'Numeric':
      return { type: { base: 'decimal', unsigned, ...precisionScale(arg) } };
    case 'Float': {
      const { precision, scale } = precisionScale(arg);
      // FLOAT(p): p ≤ 24 is single precision, 25..53 double; FLOAT(M,D) stays single.
      if (scale !== undefined) return { type: { base: 'float', unsigned, precision, scale } };
      return { type: { base: precision !== undefined && precision > 24 ? 'double' : 'float', unsigned } };
    }
    case 'Float4':
      return { type: { base: 'float', unsigned } };
    case 'Double':
    case 'DoublePrecision':
      // DOUBLE(M,D) rounds stored values to D decimals: kept so a default is not taken as exact.
      return { type: { base: 'double', unsigned, ...precisionScale(arg) } };
    case 'Float8':
    case 'Real':
      return { type: { base: 'double', unsigned } };
    case 'Bit':
      return { type: { base: 'bit', length: optionalNumber(arg) ?? 1 } };
    case 'Date':
      return { type: { base: 'date' } };
    case 'Datetime':
      return { type: { base: 'datetime', fsp: optionalNumber(arg) ?? 0 } };
    case 'Timestamp':
    case 'Time': {
      if (!Array.isArray(arg) || arg[1] !== 'None') throw new UnsupportedTypeError(`${base} with a time zone`);
      return { type: { base: base.toLowerCase(), fsp: optionalNumber(arg[0]) ?? 0 } };
    }
    case 'Char':
    case 'Character':
      return { type: { base: 'char', length: charLength(arg) ?? 1 } };
    case 'Varchar':
    case 'CharVarying':
    case 'CharacterVarying':
      return { type: { base: 'varchar', length: charLength(arg) } };
    case 'Nvarchar':
      return { type: { base: 'varchar', length: charLength(arg), charset: 'utf8mb3' } };
    case 'Text':
    case 'TinyText':
    case 'MediumText':
    case 'LongText':
      return { type: { base: base.toLowerCase() } };
    case 'Blob': {
      const bytes = optionalNumber(arg);
      return bytes === undefined ? { type: { base: 'blob' } } : { type: { base: lobForBytes(bytes, false) } };
    }
    case 'TinyBlob':
    case 'MediumBlob':
    case 'LongBlob':
      return { type: { base: base.toLowerCase() } };
    case 'Binary':
      return { type: { base: 'binary', length: optionalNumber(arg) ?? 1 } };
    case 'Varbinary': {
      const length = charLength(arg);
      if (length === undefined) throw new UnsupportedTypeError('VARBINARY without a length');
      return { type: { base: 'varbinary', length } };
    }
    case 'Enum': {
      const [values, bits] = arg;
      if (bits !== undefined && bits !== null) throw new UnsupportedTypeError('ENUM with a bit width');
      return { type: { base: 'enum', values: values.map((v: Ast) => enumMember(v)) } };
    }
    case 'Set':
      return { type: { base: 'set', values: (arg as Ast[]).map((v) => (typeof v === 'string' ? v : enumMember(v))) } };
    case 'JSON':
      return { type: { base: 'json' } };
    case 'Uuid':
      return { type: { base: 'uuid' } };
    case 'Custom':
      return customType(arg);
    default:
      throw new UnsupportedTypeError(`data type ${name}`);
  }
}

function enumMember(v: Ast): string {
  const [kind, value] = variant(v);
  if (kind === 'Name' && typeof value === 'string') return value;
  throw new UnsupportedTypeError(`ENUM member ${kind}`);
}

function customType(arg: Ast): ParsedType {
  const [nameParts, args] = arg as [Ast[], string[]];
  if (nameParts.length !== 1) throw new UnsupportedTypeError('qualified type name');
  const ident = nameParts[0]?.Identifier;
  if (!ident || ident.quote_style !== undefined) throw new UnsupportedTypeError('quoted type name');
  const name = String(ident.value).toUpperCase();
  const nums = args.map(Number);
  if (CUSTOM_INTS[name] && nums.length <= 1) return { type: { base: CUSTOM_INTS[name] as string } };
  if (CUSTOM_PLAIN[name] && nums.length === 0) return { type: { base: CUSTOM_PLAIN[name] as string } };
  if (name === 'YEAR' && (nums.length === 0 || nums[0] === 4)) return { type: { base: 'year' } };
  if (name === 'FIXED' && nums.length <= 2) return { type: { base: 'decimal', precision: nums[0], scale: nums[1] } };
  if (name === 'SERIAL' && nums.length === 0) return { type: { base: 'bigint', unsigned: true }, serial: true };
  // MySQL 9.0+ VECTOR(n) (n float32 values, 2048 when not given) and MariaDB 11.7+ VECTOR(n).
  if (name === 'VECTOR' && nums.length <= 1) return { type: { base: 'vector', length: nums[0] ?? 2048 } };
  if (name === 'NCHAR' && nums.length <= 1) return { type: { base: 'char', length: nums[0] ?? 1, charset: 'utf8mb3' } };
  throw new UnsupportedTypeError(`data type ${name}${args.length ? `(${args.join(',')})` : ''}`);
}

function identValue(node: Ast): string {
  const parts = Array.isArray(node) ? node : [node];
  if (parts.length !== 1) throw new UnsupportedTypeError('qualified charset or collation name');
  const ident = parts[0]?.Identifier ?? parts[0];
  if (typeof ident?.value !== 'string') throw new UnsupportedTypeError('charset or collation name');
  return ident.value;
}

function literalValue(expr: Ast, escaped: boolean): Literal | 'null' | undefined {
  const [kind, value] = variant(expr);
  if (kind === 'Nested') return literalValue(value, escaped);
  if (kind === 'UnaryOp' && (value.op === 'Minus' || value.op === 'Plus')) {
    const inner = literalValue(value.expr, escaped);
    if (inner === undefined || inner === 'null' || inner.kind !== 'number' || /^[+-]/.test(inner.text)) return undefined;
    return { kind: 'number', text: value.op === 'Minus' ? `-${inner.text}` : inner.text };
  }
  if (kind !== 'Value') return undefined;
  const [vkind, v] = variant(value.value);
  switch (vkind) {
    case 'Null':
      return 'null';
    case 'Number':
      return { kind: 'number', text: String(v[0]) };
    case 'SingleQuotedString':
    case 'DoubleQuotedString':
      return { kind: 'string', value: v, escaped };
    case 'HexStringLiteral':
      return { kind: 'hex', digits: v };
    case 'SingleQuotedByteStringLiteral':
      return /^[01]*$/.test(v) ? { kind: 'bits', digits: v } : undefined;
    case 'Boolean':
      return { kind: 'boolean', value: v };
    default:
      return undefined;
  }
}

function defaultValue(expr: Ast, escaped: boolean): DefaultValue {
  const literal = literalValue(expr, escaped);
  if (literal === 'null') return { kind: 'null' };
  return literal ? { kind: 'literal', literal } : { kind: 'expression' };
}

/** Column options that change nothing sluice records (SRID only restricts which geometries a column takes). */
const HARMLESS = new Set(['Comment', 'OnUpdate', 'Check', 'ForeignKey', 'Srid']);

/**
 * One column definition from `CREATE TABLE t (<definition>)` as parsed. `escaped` says the
 * statement holds a backslash escape (string defaults then depend on sql_mode).
 */
export function columnFromAst(column: Ast, escaped: boolean): ColumnDefinition {
  const name = column?.name?.value;
  if (typeof name !== 'string') throw new UnsupportedTypeError('column without a name');
  if (name.toUpperCase() === 'SYSTEM' && column.name.quote_style === undefined)
    throw new UnsupportedTypeError('a column named SYSTEM (sqlparser reads ADD SYSTEM VERSIONING so)');
  const parsed = dataType(column.data_type);
  let type: TypeDescriptor = parsed.type;
  let nullable: boolean | undefined = parsed.serial ? false : undefined;
  let def: DefaultValue = { kind: 'none' };
  let autoIncrement = parsed.serial === true;
  let generated = false;
  let invisible = false;
  let primaryKey = false;
  let unique = parsed.serial === true;
  let charset = type.charset;
  let collation: string | undefined;
  for (const { option } of column.options as { option: Ast }[]) {
    const [kind, value] = variant(option);
    switch (kind) {
      case 'Null':
        nullable = true;
        break;
      case 'NotNull':
        nullable = false;
        break;
      case 'Default':
        def = defaultValue(value, escaped);
        break;
      case 'PrimaryKey':
        primaryKey = true;
        break;
      case 'Unique':
        unique = true;
        break;
      case 'CharacterSet':
        charset = identValue(value);
        break;
      case 'Collation':
        collation = identValue(value);
        break;
      case 'Generated':
        generated = true;
        break;
      case 'Invisible':
        invisible = true;
        break;
      case 'DialectSpecific': {
        const words = (value as Ast[]).map((t) => String(t?.Word?.value ?? '').toUpperCase());
        if (words.length === 1 && words[0] === 'AUTO_INCREMENT') autoIncrement = true;
        else throw new UnsupportedTypeError(`column option ${words.join(' ')}`);
        break;
      }
      default:
        if (!HARMLESS.has(kind)) throw new UnsupportedTypeError(`column option ${kind}`);
    }
  }
  if (charset !== undefined || collation !== undefined) type = { ...type, ...(charset ? { charset } : {}), ...(collation ? { collation } : {}) };
  return { name, type, nullable, default: def, autoIncrement, generated, invisible, primaryKey, unique };
}
