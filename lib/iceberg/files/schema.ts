import { AssertionError, ErrorCode, SluiceError } from '../../errors.ts';
import type { Column } from '../../format/types.ts';
import { canPromote, type TypeMapping, typeMapping } from './types.ts';

/** An Iceberg schema field (top level only: sluice columns are primitives). */
export interface IcebergField {
  readonly id: number;
  readonly name: string;
  readonly required: boolean;
  readonly type: string;
}

/** An Iceberg schema as table metadata serializes it. */
export interface IcebergSchema {
  readonly type: 'struct';
  readonly 'schema-id': number;
  readonly fields: readonly IcebergField[];
  readonly 'identifier-field-ids'?: readonly number[];
}

/** A field with the mapping from the source column it is written from. */
export interface MappedField extends IcebergField {
  /** The source column name (the JSON key in change rows). */
  readonly source: string;
  readonly mapping: TypeMapping;
}

/** The schema a table moves to, and what changed. */
export interface SchemaEvolution {
  readonly schema: IcebergSchema;
  readonly lastColumnId: number;
  /** True when `schema` differs from the previous current schema (it then has a new schema id). */
  readonly changed: boolean;
  readonly added: readonly string[];
  readonly dropped: readonly string[];
  /** Columns whose type changed in a way Iceberg cannot promote; they got a new field id (only with `allowIncompatible`). */
  readonly replaced: readonly string[];
}

/** A column type change Iceberg cannot express on existing data files. */
export class IncompatibleTypeChangeError extends SluiceError {
  override readonly name = 'IncompatibleTypeChangeError';
  constructor(column: string, from: string, to: string) {
    super(
      ErrorCode.ICEBERG_INCOMPATIBLE_TYPE,
      `column ${column} changed from Iceberg ${from} to ${to}, which Iceberg cannot promote (only int→long, float→double, decimal precision widening); ` +
        'rewrite the table (replace all rows) so every data file is written with the new type',
    );
  }
}

const sameFields = (a: IcebergSchema, b: IcebergSchema) =>
  JSON.stringify([a.fields, a['identifier-field-ids'] ?? null]) === JSON.stringify([b.fields, b['identifier-field-ids'] ?? null]);

/**
 * The table's next schema for the source's current columns. Field ids are the identity of a column:
 * a column keeps its id across renames (`renamed`: new name → old name) and type promotions, a new
 * column gets `lastColumnId + 1`, a dropped column's id is never given out again. Key columns are
 * required (MySQL keys are NOT NULL) and become the schema's identifier fields.
 */
export function evolveSchema(
  previous: { schema: IcebergSchema; lastColumnId: number } | undefined,
  columns: readonly Column[],
  key: readonly string[],
  options: {
    /** New name → old name, for columns renamed since the previous schema. */
    renamed?: ReadonlyMap<string, string>;
    /** Columns dropped and added again under the same name (their old values must not come back). */
    recreated?: ReadonlySet<string>;
    /** Give a column whose type cannot be promoted a new field id instead of failing (for full rewrites). */
    allowIncompatible?: boolean;
  } = {},
): SchemaEvolution {
  const byName = new Map((previous?.schema.fields ?? []).map((field) => [field.name, field]));
  const keySet = new Set(key);
  for (const name of key) if (!columns.some((c) => c.name === name)) throw new AssertionError(`key column ${name} is not among the table's columns`);
  let lastColumnId = previous?.lastColumnId ?? 0;
  const used = new Set<number>();
  const added: string[] = [];
  const replaced: string[] = [];
  const fields = columns.map((column): IcebergField => {
    const type = typeMapping(column).iceberg;
    const old = options.recreated?.has(column.name) ? undefined : byName.get(options.renamed?.get(column.name) ?? column.name);
    if (old && !used.has(old.id)) {
      if (canPromote(old.type, type)) {
        used.add(old.id);
        // Required → optional is allowed; optional → required is not (old files may hold nulls).
        return { id: old.id, name: column.name, required: old.required && keySet.has(column.name), type };
      }
      if (!options.allowIncompatible) throw new IncompatibleTypeChangeError(column.name, old.type, type);
      replaced.push(column.name);
    } else added.push(column.name);
    lastColumnId += 1;
    return { id: lastColumnId, name: column.name, required: keySet.has(column.name), type };
  });
  const dropped = (previous?.schema.fields ?? []).filter((field) => !used.has(field.id)).map((field) => field.name);
  const keyFields = key.map((name) => fields.find((f) => f.name === name) as IcebergField);
  // Identifier fields must be required; a key that took over a nullable column is not listed.
  const identifiers = keyFields.length > 0 && keyFields.every((f) => f.required) ? { 'identifier-field-ids': keyFields.map((f) => f.id) } : {};
  const candidate: IcebergSchema = { type: 'struct', 'schema-id': previous?.schema['schema-id'] ?? 0, fields, ...identifiers };
  const changed = previous !== undefined && !sameFields(previous.schema, candidate);
  const schema = changed ? { ...candidate, 'schema-id': (previous?.schema['schema-id'] ?? 0) + 1 } : candidate;
  return { schema, lastColumnId, changed, added: previous ? added : [], dropped, replaced };
}

/** The schema's fields with the mapping each column is written with. */
export function mappedFields(schema: IcebergSchema, columns: readonly Column[]): MappedField[] {
  return schema.fields.map((field) => {
    const column = columns.find((c) => c.name === field.name);
    if (!column) throw new AssertionError(`column ${field.name} of the Iceberg schema is not among the source columns`);
    return { ...field, source: column.name, mapping: typeMapping(column) };
  });
}

/**
 * The Parquet column name Iceberg's Java writer uses (AvroSchemaUtil.makeCompatibleName): readers
 * that fall back to names (icebird) look columns up this way. Field ids stay the real identity.
 */
export function parquetName(name: string): string {
  let out = '';
  for (let i = 0; i < name.length; i++) {
    const ch = name.charAt(i);
    const letter = /[A-Za-z]/.test(ch);
    const digit = /[0-9]/.test(ch);
    if (letter || ch === '_' || (digit && i > 0)) out += ch;
    else if (digit) out += `_${ch}`;
    else out += `_x${ch.charCodeAt(0).toString(16).toUpperCase()}`;
  }
  return out;
}
