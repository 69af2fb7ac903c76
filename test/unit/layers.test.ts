import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/*
 * The layer rule of docs/ARCHITECTURE.md, checked on every import in lib/ and functions/ (static,
 * re-exports and dynamic): a module imports its own folder, or a folder of a lower layer; the one
 * import across a layer's folders is capture's of snapshot/plan.ts (the initial snapshot).
 */
const LAYERS: readonly (readonly string[])[] = [
  ['errors.ts', 'log.ts', 'profile.ts'],
  ['core'],
  ['format', 'config'],
  ['state', 'schema', 'fleet'],
  ['source', 'sink', 'aws.ts'],
  ['commit', 'materialize'],
  ['capture', 'snapshot', 'verify', 'iceberg', 'ops', 'local'],
  ['cli'],
  ['functions'],
];
const ACROSS = new Set(['capture → snapshot']);

/** A module's place: lib/<folder or file>, or functions. */
const placeOf = (file: string) => (file.startsWith('functions/') ? 'functions' : (file.split('/')[1] as string));
const layerOf = (place: string) => LAYERS.findIndex((layer) => layer.includes(place));

function* modules(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* modules(path);
    else if (entry.name.endsWith('.ts')) yield path;
  }
}

function imports(file: string): string[] {
  const source = readFileSync(file, 'utf8');
  // `from '…'` (imports, re-exports), `import '…'` (for its effects) and `import('…')`.
  const specifiers = [...source.matchAll(/(?:\bfrom\s+|\bimport\s*\(?\s*)['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) => m[1] as string);
  return specifiers.map((s) => relative('.', normalize(join(dirname(file), s))));
}

describe('the layer rule (docs/ARCHITECTURE.md)', () => {
  const files = [...modules('lib'), ...modules('functions')];

  it('places every module of lib/ in a layer', () => {
    expect(files.map(placeOf).filter((place) => layerOf(place) < 0)).toEqual([]);
  });

  it('imports point down: no module imports a folder of its own layer or of one above it, or anything outside lib/ and functions/', () => {
    const wrong: string[] = [];
    for (const file of files) {
      const from = placeOf(file);
      for (const target of imports(file)) {
        // Nothing outside lib/ and functions/ (test tooling, benchmarks, scripts) is imported by them.
        if (!target.startsWith('lib/') && !target.startsWith('functions/')) {
          wrong.push(`${file} → ${target}`);
          continue;
        }
        const to = placeOf(target);
        if (to === from || ACROSS.has(`${from} → ${to}`)) continue;
        if (layerOf(to) >= layerOf(from)) wrong.push(`${file} → ${target}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('finds what it checks: the capture run imports the source, and the rule would refuse the reverse', () => {
    expect(imports('lib/capture/run.ts')).toContain('lib/source/mysql/binlog-reader.ts');
    expect(layerOf('capture')).toBeGreaterThan(layerOf('source'));
  });
});
