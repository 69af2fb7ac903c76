import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stackHome } from '../../lib/local/stack.ts';

describe('stackHome', () => {
  it('an empty SLUICE_HOME means the default home, not the current folder', () => {
    expect(stackHome({ SLUICE_HOME: '' })).toBe(join(process.cwd(), '.sluice'));
    expect(stackHome({ SLUICE_HOME: '/srv/sluice' })).toBe('/srv/sluice');
  });
});
