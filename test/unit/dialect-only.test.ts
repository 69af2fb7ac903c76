import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/*
 * One dialect object per server (lib/source/mysql/dialect/): the flavor is read and asked there
 * only. Everything else asks the dialect what to send and what the server can do; a check of the
 * flavor outside it is the drift this guards against. (Which server the local stack starts,
 * `--server`, is not the source's flavor.)
 */
const DIALECT = join('lib', 'source', 'mysql', 'dialect');
const FLAVOR_CHECK = /\bkind\s*[!=]==\s*'(mysql|mariadb)'|\bserverKind\b|\bServerFlavor\b|\bparseServerFlavor\b|\bdialectFor\b|\.flavor\b/;

function* modules(dir: string): Generator<string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* modules(path);
    else if (entry.name.endsWith('.ts')) yield path;
  }
}

describe('the dialect (lib/source/mysql/dialect/)', () => {
  it('is the only place that reads or checks the server flavor', () => {
    const outside = [...modules('lib'), ...modules('functions')].filter((file) => !file.startsWith(DIALECT));
    const checks = outside.flatMap((file) =>
      readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((line, i) => (FLAVOR_CHECK.test(line) ? [`${file}:${i + 1}: ${line.trim()}`] : [])),
    );
    expect(checks).toEqual([]);
  });
});
