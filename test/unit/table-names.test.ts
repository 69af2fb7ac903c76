import { describe, expect, it } from 'vitest';
import { keyColumn, loadConfig } from '../../lib/config/config.ts';
import { segment, unsegment } from '../../lib/core/table-path.ts';
import { formatTableRef, parseTableRef, parseTableRefs, type TableRef, tableKey } from '../../lib/core/table-ref.ts';
import { encodeShape } from '../../lib/format/event.ts';
import { buildManifest, readManifest } from '../../lib/format/manifest.ts';
import { dataKey, snapshotDataKey, snapshotManifestKey } from '../../lib/sink/s3/keys.ts';

// Every name over this alphabet up to three characters: separators, escapes, quotes, multi-byte characters.
const ALPHABET = ['a', 'Z', '0', '_', '.', '/', '%', '`', ' ', '=', '-', '#', '2', 'F', 'é', '€', '😀', '\\'];
const corpus = (() => {
  const names: string[] = [...ALPHABET];
  for (const a of ALPHABET) for (const b of ALPHABET) names.push(a + b);
  for (const a of ALPHABET) for (const b of ALPHABET) for (const c of ALPHABET) names.push(a + b + c);
  return names;
})();

describe('segment(): a database or table name as one key segment', () => {
  it('encodes the examples of docs/FORMAT.md', () => {
    expect(
      Object.fromEntries(
        ['orders', 'Order_Lines2', 'a/b', 'dot.ted', '..', '.', 'x=y', '_tmp', 'a_b_', 'café', '50%', 'a b', 'a`b'].map((n) => [n, segment(n)]),
      ),
    ).toEqual({
      orders: 'orders',
      Order_Lines2: 'Order_Lines2',
      'a/b': 'a%2Fb',
      'dot.ted': 'dot%2Eted',
      '..': '%2E%2E',
      '.': '%2E',
      'x=y': 'x%3Dy',
      _tmp: '%5Ftmp',
      a_b_: 'a_b_',
      café: 'caf%C3%A9',
      '50%': '50%25',
      'a b': 'a%20b',
      'a`b': 'a%60b',
    });
  });

  it(`is injective and round-trips over ${corpus.length} generated names`, () => {
    const segments = new Map<string, string>();
    for (const name of corpus) {
      const s = segment(name);
      expect(segments.get(s), `${JSON.stringify(name)} and ${JSON.stringify(segments.get(s))} share ${s}`).toBeUndefined();
      segments.set(s, name);
      expect(unsegment(s)).toBe(name);
    }
    expect(segments.size).toBe(corpus.length);
  });

  it('never yields "/", ".", "..", a leading "_" or ".", or anything but [A-Za-z0-9_%]', () => {
    for (const name of corpus) {
      const s = segment(name);
      expect(s).toMatch(/^(?:[A-Za-z0-9]|%[0-9A-F]{2})(?:[A-Za-z0-9_]|%[0-9A-F]{2})*$/);
      expect(['.', '..']).not.toContain(s);
    }
  });

  it('unsegment refuses text no name encodes to, so one name has one segment', () => {
    for (const text of ['', 'a.b', 'a/b', '_x', '%61', 'a%2f', '%2', '%C3', '%ZZ', 'caf\u00e9'])
      expect(() => unsegment(text), JSON.stringify(text)).toThrow(/is not an encoded name/);
  });

  it('keeps two tables that a joined name would merge in two folders', () => {
    expect(dataKey('p/', 'a/b', 'c', 's', 1)).toBe('p/tables/a%2Fb/c/s-000000000001.jsonl.gz');
    expect(dataKey('p/', 'a', 'b/c', 's', 1)).toBe('p/tables/a/b%2Fc/s-000000000001.jsonl.gz');
    expect(dataKey('p/', 'x', 'dot.ted', 's', 1)).toBe('p/tables/x/dot%2Eted/s-000000000001.jsonl.gz');
    expect(dataKey('p/', 'x.dot', 'ted', 's', 1)).toBe('p/tables/x%2Edot/ted/s-000000000001.jsonl.gz');
    expect(dataKey('p/', 'shop', '..', 's', 1)).toBe('p/tables/shop/%2E%2E/s-000000000001.jsonl.gz');
    expect(snapshotDataKey('p/', 'shop', '_x', 's', 'j', 1, 2)).toBe('p/tables/shop/%5Fx/s-snapshot-j-0001-00000002.jsonl.gz');
    expect(snapshotManifestKey('p/', 's', 'j', 'x.dot', 'ted', 1, 2)).toBe('p/manifests/s/snapshots/j/x%2Edot/ted/0001-00000002.json');
  });
});

describe('table refs: the text forms', () => {
  it('writes plain names plainly and quotes both names otherwise', () => {
    expect(formatTableRef({ db: 'shop', table: 'orders' })).toBe('shop.orders');
    expect(formatTableRef({ db: 'shop', table: '$tmp_1' })).toBe('shop.$tmp_1');
    expect(formatTableRef({ db: 'a.b', table: 'c/d' })).toBe('`a.b`.`c/d`');
    expect(formatTableRef({ db: 'x', table: 'dot.ted' })).toBe('`x`.`dot.ted`');
    expect(formatTableRef({ db: 'x', table: 'a`b' })).toBe('`x`.`a``b`');
  });

  it('parses plain and quoted forms', () => {
    expect(parseTableRef('shop.orders')).toEqual({ db: 'shop', table: 'orders' });
    expect(parseTableRef(' `a.b`.`c/d` ')).toEqual({ db: 'a.b', table: 'c/d' });
    expect(parseTableRef('`x`.`dot.ted`')).toEqual({ db: 'x', table: 'dot.ted' });
    expect(parseTableRef('`x.dot`.`ted`')).toEqual({ db: 'x.dot', table: 'ted' });
    expect(parseTableRef('`we``ird`.t')).toEqual({ db: 'we`ird', table: 't' });
    expect(parseTableRef('shop.`..`')).toEqual({ db: 'shop', table: '..' });
    expect(parseTableRef('café.größe')).toEqual({ db: 'café', table: 'größe' });
  });

  it('round-trips every generated pair of names through its text form', () => {
    for (const [i, db] of corpus.entries()) {
      const ref = { db, table: corpus[(i * 7919) % corpus.length] as string };
      expect(parseTableRef(formatTableRef(ref))).toEqual(ref);
    }
  });

  it('parses comma-separated lists whose names hold commas and dots', () => {
    expect(parseTableRefs('`a,b`.c, d.`e.f`,, `g`.`h,`, ')).toEqual([
      { db: 'a,b', table: 'c' },
      { db: 'd', table: 'e.f' },
      { db: 'g', table: 'h,' },
    ]);
    expect(parseTableRefs('')).toEqual([]);
  });

  it('names the problem in each malformed form', () => {
    const problem = (text: string, parse: (t: string) => unknown = parseTableRef) => {
      try {
        parse(text);
      } catch (error) {
        expect(error).toMatchObject({ code: 'TABLE_NAME' });
        return (error as Error).message;
      }
      throw new Error(`${text} parsed`);
    };
    expect(problem('orders')).toBe('table "orders": expected "." and a table name after the database orders (write db.table)');
    expect(problem('a.b.c')).toMatch(/a table is named by two names, db.table; quote a name that holds a dot with backticks, e.g. `a.b`.c/);
    expect(problem('`a.b.c')).toMatch(/the backtick at position 1 is never closed/);
    expect(problem('shop.order-items')).toMatch(/"-" cannot appear in an unquoted name: quote it with backticks, `order-items`/);
    expect(problem('``.t')).toMatch(/empty name `` at position 1/);
    expect(problem('shop.')).toMatch(/a name is missing at the end/);
    expect(problem('a.b x')).toMatch(/unexpected "x" at position 5 after a.b/);
    expect(problem('a.b c.d', (t) => parseTableRefs(t, '--tables'))).toBe('--tables "a.b c.d": expected "," at position 5, found "c"');
  });

  it('keys maps injectively where a joined name would not', () => {
    const refs: TableRef[] = [
      { db: 'x', table: 'dot.ted' },
      { db: 'x.dot', table: 'ted' },
      { db: 'a/b', table: 'c' },
      { db: 'a', table: 'b/c' },
    ];
    expect(new Set(refs.map(tableKey)).size).toBe(4);
  });
});

describe('SLUICE_KEY_COLUMNS', () => {
  const base = { SLUICE_SOURCE_ID: 's', SLUICE_MYSQL_URL: 'mysql://u:p@db:3306/', SLUICE_STATE_TABLE: 'state', SLUICE_BUCKET: 'lake' };

  it('accepts quoted tables and columns', () => {
    const config = loadConfig({ ...base, SLUICE_KEY_COLUMNS: 'shop.t:id, `a.b`.`c/d`:`my col`,`x`.`k:v`:`a``b`' });
    expect(keyColumn(config, { db: 'shop', table: 't' })).toBe('id');
    expect(keyColumn(config, { db: 'a.b', table: 'c/d' })).toBe('my col');
    expect(keyColumn(config, { db: 'x', table: 'k:v' })).toBe('a`b');
    expect(keyColumn(config, { db: 'a', table: 'b.c/d' })).toBeUndefined();
  });

  it('names the problem', () => {
    expect(() => loadConfig({ ...base, SLUICE_KEY_COLUMNS: 'shop.t' })).toThrow(
      'SLUICE_KEY_COLUMNS: db.table:column list "shop.t": expected ":" and the key column after the table, at position 7',
    );
    expect(() => loadConfig({ ...base, SLUICE_KEY_COLUMNS: 'shop.t:id x' })).toThrow(/expected "," at position 11, found "x"/);
  });
});

describe('manifests v2', () => {
  const shape = (db: string, table: string) =>
    encodeShape({ db, table, columns: [{ name: 'id', sqlType: 'int', kind: 'int', nullable: false } as never], key: [0] });

  it('lists each table with its two names, so tables a joined name would merge stay apart', () => {
    const objects = [shape('a/b', 'c'), shape('a', 'b/c')].map((s, i) => ({ shape: s, key: `k${i}`, events: 1, bytes: 1, seqMin: '1', seqMax: '1' }));
    const manifest = buildManifest(
      'src',
      0,
      { commit_seq: 1, position: { from: { file: 'b.1', pos: 4 }, to: { file: 'b.1', pos: 9 } }, transactions: 1 },
      objects,
    );
    expect(manifest.format).toBe('sluice/v2');
    expect(manifest.tables).toEqual([
      { db: 'a/b', table: 'c', key: ['id'], columns: [{ name: 'id', type: 'int' }] },
      { db: 'a', table: 'b/c', key: ['id'], columns: [{ name: 'id', type: 'int' }] },
    ]);
  });

  it('reads a v1 manifest (tables keyed by db.table) in the v2 shape', () => {
    const v1 = {
      format: 'sluice/v1',
      source: 'src',
      committed_at: '2026-01-01T00:00:00.000Z',
      events: 3,
      snapshot: { id: 'j', table: 'shop.orders', chunk: 0, page: 1, watermark: { file: 'b.1', pos: 4 }, after: null, last: [3] },
      objects: [{ key: 'k', db: 'shop', table: 'orders', events: 3, bytes: 10, seq_min: '1', seq_max: '2' }],
      tables: { 'shop.orders': { key: ['id'], columns: [{ name: 'id', type: 'int' }] } },
    };
    const read = readManifest(JSON.stringify(v1));
    expect(read.format).toBe('sluice/v1');
    expect(read.tables).toEqual([{ db: 'shop', table: 'orders', key: ['id'], columns: [{ name: 'id', type: 'int' }] }]);
    expect(read.snapshot).toMatchObject({ id: 'j', db: 'shop', table: 'orders', chunk: 0, page: 1 });
  });
});
