import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

/*
 * lib/iceberg's folders by job, in the order of docs/ARCHITECTURE.md: the file formats, the table
 * layer, the catalogs, the merge. A module imports its own folder or one before it, never one after.
 */
const FOLDERS = ['files', 'table', 'catalog', 'merge'];
const ROOT = 'lib/iceberg';

const folderOf = (file: string) => relative(ROOT, file).split('/')[0] as string;

function imports(file: string): string[] {
  const source = readFileSync(file, 'utf8');
  const specifiers = [...source.matchAll(/(?:\bfrom\s+|\bimport\s*\(?\s*)['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) => m[1] as string);
  return specifiers.map((s) => relative('.', normalize(join(dirname(file), s))));
}

describe("lib/iceberg's folders", () => {
  const files = readdirSync(ROOT, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => join(ROOT, name));

  it('hold every module of lib/iceberg', () => {
    expect(files.filter((file) => !FOLDERS.includes(folderOf(file)))).toEqual([]);
  });

  it('import only their own folder or one before it', () => {
    const wrong: string[] = [];
    for (const file of files)
      for (const target of imports(file).filter((t) => t.startsWith(`${ROOT}/`)))
        if (FOLDERS.indexOf(folderOf(target)) > FOLDERS.indexOf(folderOf(file))) wrong.push(`${file} → ${target}`);
    expect(wrong).toEqual([]);
  });

  it('finds what it checks: the merge imports the table layer', () => {
    expect(imports('lib/iceberg/merge/stage.ts')).toContain('lib/iceberg/table/table.ts');
  });
});
