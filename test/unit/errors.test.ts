import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../lib/errors.ts';

describe('error codes', () => {
  it('the runbook lists exactly the codes lib/errors.ts defines', () => {
    const runbook = readFileSync(new URL('../../docs/RUNBOOK.md', import.meta.url), 'utf8');
    const section = runbook.slice(runbook.indexOf('## Error codes'), runbook.indexOf('\n## ', runbook.indexOf('## Error codes') + 1));
    const documented = [...section.matchAll(/^\| `([A-Z0-9_]+)` \|/gm)].map((m) => m[1]);
    expect(documented.sort()).toEqual(Object.values(ErrorCode).sort());
  });

  it('each code is its own name, so logs and the state item show what the source says', () => {
    for (const [name, code] of Object.entries(ErrorCode)) expect(code).toBe(name);
  });
});
