import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// The CLI the global setup built (scripts/build.js); bin/sluice.js's choice between builds is test/unit/cli-build.test.ts.
describe('dist/cli/main.cjs', () => {
  it('is built as strict code, as the ES modules it stands for are', () => {
    // Run as a function body (Module.wrap): only a leading directive makes it strict.
    const source = readFileSync('dist/cli/main.cjs', 'latin1');
    expect(new Function(`${source.slice(0, source.indexOf('\n'))}\nreturn this;`)()).toBeUndefined();
  });
});
