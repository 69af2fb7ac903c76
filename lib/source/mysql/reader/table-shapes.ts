import { MysqlType } from '../../../core/mysql-types.ts';
import { AssertionError } from '../../../errors.ts';
import { binlogColumn, type ColumnDefinition, maybeLogical, pushColumnFacts, withLogicalType } from '../../../format/binlog-columns.ts';
import { type EncodedShape, encodeShape, type Row, rowProperty } from '../../../format/event.ts';
import { isHiddenHashColumn } from '../../../schema/version.ts';
import type { NamedRowsEvent } from '../binlog/events.ts';
import { applyPartialJson, jsonText } from '../binlog/json.ts';
import { applyRaw, asBinlogColumn, type BinlogDecoder, type RawValues, rawBinlogValues, ServerText, type ZongjiColumn } from '../binlog/raw-values.ts';
import { type TableMap, tableMapColumns } from '../binlog/table-map.ts';
import { logicalTypes } from '../schema.ts';
import type { SqlConnection } from '../server.ts';
import type { RowsItem, TableMapStructure } from './items.ts';

/*
 * The reader's tables, by table id: each one's shape and decoding, built at its TABLE_MAP (the
 * only event carrying its key and signedness), and the rows events' items made with them. zongji
 * rebuilds its column descriptors at every TABLE_MAP; the raw values sluice reads instead of its
 * lossy ones are set in them there, before the rows. What only the server can tell (MariaDB's
 * UUID/INET types, text in charsets Node does not know) is looked up before the rows are yielded.
 */

const ROWS_OP = { WriteRows: 'insert', UpdateRows: 'update', DeleteRows: 'delete' } as const;

/** A table as its latest TABLE_MAP describes it. */
interface TableState {
  /** What the TABLE_MAP said that the rest is built from (`pushColumnFacts`), compared value by value at the next one. */
  facts: unknown[];
  shape: EncodedShape;
  map: TableMapStructure;
  /** What to change in zongji's descriptors at each TABLE_MAP, by column index (see rawBinlogValues). */
  raw: [index: number, raw: RawValues][];
  /** Columns whose zongji values need converting. */
  decoders: [name: string, decode: BinlogDecoder][];
  /** Converts one row's values in place (`compileDecoder` of `decoders`); undefined when none need it. */
  decode: ((row: Row) => void) | undefined;
  /** Columns whose values the server converts (ServerText) before the rows are yielded. */
  byServer: string[];
  /** Columns zongji must store under another property than their name (see `rowProperty`), by index. */
  renamed: number[];
  /** MySQL JSON columns (by property): a partial update's after image may hold their diffs (binlog/json.ts). */
  json: string[];
}

function sameFacts(a: unknown[], b: unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * One function converting a row's values in place, reading and writing each column by its literal
 * name (as the shape's encoders do, event.ts): a loop over names would make every access a keyed,
 * megamorphic one, for every row. Names enter the source only as JSON string literals.
 */
function compileDecoder(decoders: TableState['decoders']): TableState['decode'] {
  if (!decoders.length) return undefined;
  const body = decoders.map(([name], i) => `r[${JSON.stringify(name)}] = d${i}(r[${JSON.stringify(name)}]);`).join(' ');
  return new Function(...decoders.map((_, i) => `d${i}`), `return (r) => { ${body} };`)(...decoders.map(([, decode]) => decode));
}

export class TableShapes {
  private readonly tables = new Map<number, TableState>();
  /** Shapes with BINARY(4|16) columns, to be resolved to UUID/INET4/INET6 (see `resolve`), with zongji's descriptors. */
  private readonly unresolved = new WeakMap<EncodedShape, ZongjiColumn[]>();
  private readonly resolved = new WeakMap<EncodedShape, Promise<EncodedShape>>();
  /** Rows (by their array) holding ServerText in the named columns. */
  private readonly serverText = new WeakMap<object, string[]>();
  private reusedMaps = 0;

  /** `sql`: a connection for the lookups (information_schema, the server's charsets). */
  constructor(private readonly sql: () => Promise<SqlConnection>) {}

  /** A TABLE_MAP event: the table's state, built or kept. */
  onTableMap(ev: TableMap): void {
    // Byte for byte its table id's last one (binlog/table-map.ts): zongji kept its columns as
    // `map` left them, and the table's state here was built from the same facts.
    if (ev.unchanged === true && this.tables.has(ev.tableId)) this.reusedMaps++;
    else this.map(ev);
  }

  /** TABLE_MAP events found byte-identical to their table id's previous one, so not mapped again. */
  get reused(): number {
    return this.reusedMaps;
  }

  /** A rows event's item at `pos`: its rows, decoded in place as their table's state says. */
  rows(event: NamedRowsEvent, pos: number): RowsItem {
    const { shape, map, decode, byServer, json } = this.tableOf(event.ev);
    const tsMs = event.ev.timestamp;
    if (event.type === 'UpdateRows') {
      const rows = event.ev.rows;
      // A partial JSON update's diffs become the documents after them, from the before images' documents.
      if (json.length)
        for (const row of rows) {
          applyPartialJson(row.before, row.after, json);
          jsonText(row.before, json);
          jsonText(row.after, json);
        }
      if (decode)
        for (const row of rows) {
          decode(row.before);
          decode(row.after);
        }
      if (byServer.length) this.serverText.set(rows, byServer);
      return { kind: 'rows', op: 'update', shape, map, rows, pos, tsMs };
    }
    const rows = event.ev.rows;
    if (json.length) for (const row of rows) jsonText(row, json);
    if (decode) for (const row of rows) decode(row);
    if (byServer.length) this.serverText.set(rows, byServer);
    return { kind: 'rows', op: ROWS_OP[event.type], shape, map, rows, pos, tsMs };
  }

  /** Whether a rows item can be handed over as it is: nothing to look up for it on the server. */
  ready(item: RowsItem): boolean {
    return !this.unresolved.has(item.shape) && !this.serverText.has(item.rows);
  }

  /** Looks up what a rows item still needs on the server: its shape's types (`resolve`), its ServerText values (`decodeOnServer`). */
  async prepare(item: RowsItem): Promise<void> {
    const columns = this.unresolved.get(item.shape);
    if (columns) item.shape = await this.resolve(item.shape, columns);
    const byServer = this.serverText.get(item.rows);
    if (byServer) await this.decodeOnServer(item, byServer);
  }

  /**
   * Builds (or reuses) the table's shape at its TABLE_MAP event, which alone carries the key and
   * signedness. Also makes zongji hand over raw bytes where its own decoding is lossy; zongji
   * rebuilds its descriptors at every TABLE_MAP, so this runs at each one, before the rows.
   */
  private map(ev: TableMap): void {
    const map = ev.tableMap[ev.tableId];
    if (!map?.columns) throw new AssertionError(`TABLE_MAP of table id ${ev.tableId} without zongji's columns`);
    const columns = map.columns as ZongjiColumn[];
    const key: number[] | null = Array.isArray(ev.primaryKey) && ev.primaryKey.length > 0 ? ev.primaryKey : null;
    const unsigned = ev.signedness ?? [];
    const geometry = ev.geometryTypes ?? [];
    const schemas: ColumnDefinition[] = map.columnSchemas ?? [];
    // The TABLE_MAP's raw ENUM/SET labels, which the parser keeps on the event (FULL metadata only).
    const labels: (Buffer[] | undefined)[] = ev.enumSetValues ?? [];
    const facts: unknown[] = [map.parentSchema, map.tableName, key?.length, ...(key ?? [])];
    for (let i = 0; i < columns.length; i++)
      pushColumnFacts(facts, asBinlogColumn(columns[i] as ZongjiColumn), unsigned[i] === true, geometry[i], schemas[i], labels[i] !== undefined);
    let table = this.tables.get(ev.tableId);
    if (!table || !sameFacts(table.facts, facts)) {
      // MariaDB logs a hidden DB_ROW_HASH_<n> column per long unique key: not part of the table's rows.
      const kept = columns.map((_, i) => i).filter((i) => !isHiddenHashColumn((columns[i] as ZongjiColumn).name));
      const described = kept.map((i) =>
        binlogColumn(asBinlogColumn(columns[i] as ZongjiColumn), { unsigned: unsigned[i] === true, geometryType: geometry[i], schema: schemas[i] }),
      );
      const shape = encodeShape({ db: map.parentSchema, table: map.tableName, columns: described, key: key ? key.map((i) => kept.indexOf(i)) : null });
      if (columns.some((c) => maybeLogical(asBinlogColumn(c))))
        this.unresolved.set(
          shape,
          kept.map((i) => columns[i] as ZongjiColumn),
        );
      // Read before applyRaw below rewrites zongji's descriptors.
      table = { facts, shape, map: { columns: tableMapColumns(ev), key }, raw: [], decoders: [], decode: undefined, byServer: [], renamed: [], json: [] };
      for (const [i, c] of columns.entries()) {
        if (rowProperty(c.name) !== c.name) table.renamed.push(i);
        // zongji hands over MySQL's binary JSON as its bytes (binlog/decoders.ts), printed here as MySQL prints it.
        if (c.type === MysqlType.JSON) table.json.push(rowProperty(c.name));
        const raw = rawBinlogValues(c, schemas[i], labels[i] !== undefined);
        if (!raw) continue;
        table.raw.push([i, raw]);
        if (raw.decode) table.decoders.push([rowProperty(c.name), raw.decode]);
        if (raw.byServer) table.byServer.push(rowProperty(c.name));
      }
      table.decode = compileDecoder(table.decoders);
      this.tables.set(ev.tableId, table);
    }
    for (const [i, raw] of table.raw) applyRaw(columns[i] as ZongjiColumn, raw, schemas[i], labels[i]);
    // zongji stores each value as row[descriptor.name]: `row.__proto__ = value` would be lost.
    for (const i of table.renamed) (columns[i] as ZongjiColumn).name = rowProperty((columns[i] as ZongjiColumn).name);
  }

  /**
   * MariaDB logs UUID, INET4 and INET6 columns as BINARY(16|4|16); only information_schema tells
   * them apart, so a shape with such columns takes their types from it before its rows are
   * yielded (once per shape and run). It describes the table now, not when the event was written:
   * a column converted between BINARY and one of these types since is written with its current
   * type, which the manifest names. Either way the value is exact (the text and the bytes convert
   * one to one).
   */
  private resolve(shape: EncodedShape, columns: ZongjiColumn[]): Promise<EncodedShape> {
    let pending = this.resolved.get(shape);
    if (!pending) {
      pending = (async () => {
        const types = await logicalTypes(await this.sql(), shape.db, shape.table);
        if (!types.size) return shape;
        return encodeShape({
          ...shape,
          columns: shape.columns.map((c, i) => withLogicalType(c, asBinlogColumn(columns[i] as ZongjiColumn), types.get(c.name))),
        });
      })();
      this.resolved.set(shape, pending);
    }
    return pending;
  }

  /**
   * Converts the item's ServerText values with the server's own tables, as it converts the column
   * for a SELECT (bytes it cannot convert become '?'): one query per 500 values.
   */
  private async decodeOnServer(item: RowsItem, names: string[]): Promise<void> {
    const images: Row[] = item.op === 'update' ? item.rows.flatMap((r) => [r.before, r.after]) : item.rows;
    const pending: [Row, string, ServerText][] = [];
    for (const row of images) {
      for (const name of names) {
        const value = row[name];
        if (value instanceof ServerText) pending.push([row, name, value]);
      }
    }
    const conn = await this.sql();
    for (let from = 0; from < pending.length; from += 500) {
      const chunk = pending.slice(from, from + 500);
      const expressions = chunk.map(([, , text], i) => {
        if (!/^\w+$/.test(text.charset)) throw new AssertionError(`unexpected charset name ${text.charset}`);
        return `CONVERT(CAST(? AS CHAR CHARACTER SET ${text.charset}) USING utf8mb4) AS v${i}`;
      });
      const [rows] = await conn.query(
        `SELECT ${expressions.join(', ')}`,
        chunk.map(([, , text]) => text.bytes),
      );
      const converted = (rows as Record<string, string>[])[0] ?? {};
      chunk.forEach(([row, name], i) => {
        row[name] = converted[`v${i}`];
      });
    }
  }

  private tableOf(ev: { readonly tableId: number }): TableState {
    const table = this.tables.get(ev.tableId);
    if (!table) throw new AssertionError(`row event for table id ${ev.tableId} without a preceding TABLE_MAP`);
    return table;
  }
}
