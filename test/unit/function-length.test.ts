import { describe, expect, it } from 'vitest';
import { type FunctionLength, measureFile, measureTree } from '../support/function-lengths.ts';

/*
 * The function-length budget (#28): no function of lib/ or functions/ is longer than 150 lines,
 * tables excepted (a function whose body is one object or array literal). The functions over it
 * when the budget came in are listed below with their length: each may shrink, never grow, and
 * the list follows it down — an entry whose function got shorter or left the budget's reach must
 * be updated or removed, so the list only ever empties.
 */
const BUDGET = 150;

/** Today's offenders, `file: function` (enclosing names `/`-joined) → lines. */
const OFFENDERS: Readonly<Record<string, number>> = {
  'lib/iceberg/rest.ts: restCatalog': 154,
};

const key = (f: FunctionLength) => `${f.file}: ${f.name}`;

describe(`the function-length budget (${BUDGET} lines, tables excepted)`, () => {
  const over = new Map(
    measureTree()
      .filter((f) => f.lines > BUDGET && !f.table)
      .map((f) => [key(f), f]),
  );

  it('no function over it but the listed ones, none of which grew', () => {
    const wrong: string[] = [];
    for (const [name, f] of over) {
      const listed = OFFENDERS[name];
      if (listed === undefined) wrong.push(`${name} (line ${f.line}) has ${f.lines} lines: split it to ${BUDGET} or fewer`);
      else if (f.lines > listed) wrong.push(`${name} (line ${f.line}) grew from ${listed} to ${f.lines} lines`);
    }
    expect(wrong).toEqual([]);
  });

  it('the list of offenders is current: one that shrank says its new length, one within the budget is gone', () => {
    const stale: string[] = [];
    for (const [name, listed] of Object.entries(OFFENDERS)) {
      const f = over.get(name);
      if (!f) stale.push(`${name}: no longer over ${BUDGET} lines (or renamed): remove it from OFFENDERS`);
      else if (f.lines < listed) stale.push(`${name}: now ${f.lines} lines, listed as ${listed}: lower its entry`);
    }
    expect(stale).toEqual([]);
  });
});

describe('the measure', () => {
  const measure = (text: string) => measureFile('x.ts', text).map(({ name, lines, table }) => ({ name, lines, table }));

  it('counts each function from its first line to its last, named after what holds it, nested ones in their own and the enclosing length', () => {
    const text = [
      '/** Not counted: the comment before. */',
      'export function outer() {',
      '  const inner = () => {',
      '    return 1;',
      '  };',
      '  return [1].map((n) => n + inner());',
      '}',
      'class Box {',
      '  get size() { return 1; }',
      '}',
    ].join('\n');
    expect(measure(text)).toEqual([
      { name: 'outer', lines: 6, table: false },
      { name: 'outer/inner', lines: 3, table: false },
      { name: 'outer/([1].map callback)', lines: 1, table: false },
      { name: 'Box/size', lines: 1, table: false },
    ]);
  });

  it('tells a table (one object or array literal, returned or an arrow’s body) from logic', () => {
    const text = ['const a = () => ({ x: 1 });', 'function b() { return [1, 2] as const; }', 'function c() { const t = { x: 1 }; return t; }'].join('\n');
    expect(measure(text).map((f) => [f.name, f.table])).toEqual([
      ['a', true],
      ['b', true],
      ['c', false],
    ]);
  });

  it('tells apart two functions of one name in one scope', () => {
    expect(measure('f(() => 1); f(() => 2);').map((f) => f.name)).toEqual(['(f callback)', '(f callback)#2']);
  });
});
