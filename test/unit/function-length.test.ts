import { describe, expect, it } from 'vitest';
import { measureFile, measureTree } from '../support/function-lengths.ts';

/*
 * The function-length budget (#28): no function of lib/ or functions/ is longer than 150 lines,
 * tables excepted (a function whose body is one object or array literal). A longer one is split
 * where it does more than one thing; the budget's message names it.
 */
const BUDGET = 150;

describe(`the function-length budget (${BUDGET} lines, tables excepted)`, () => {
  it('no function is over it', () => {
    const over = measureTree()
      .filter((f) => f.lines > BUDGET && !f.table)
      .map((f) => `${f.file}: ${f.name} (line ${f.line}) has ${f.lines} lines: split it to ${BUDGET} or fewer`);
    expect(over).toEqual([]);
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
