import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

const { glueDatabase } = createRequire(import.meta.url)('../../scripts/stack-params.cjs') as {
  glueDatabase: (resolver: { resolveVariable: (name: string) => Promise<string> }) => Promise<string>;
};

const resolving = (values: Record<string, string>) => ({ resolveVariable: async (name: string) => values[name] ?? '' });

describe("serverless.yml's computed defaults", () => {
  it('names the Glue database <service>_<stage> in the characters Athena accepts, whatever the stage is called', async () => {
    expect(await glueDatabase(resolving({ 'self:service': 'sluice', 'sls:stage': 'prod' }))).toBe('sluice_prod');
    expect(await glueDatabase(resolving({ 'self:service': 'sluice', 'sls:stage': 'pr-7' }))).toBe('sluice_pr_7');
    expect(await glueDatabase(resolving({ 'self:service': 'sluice', 'sls:stage': 'Team.Dev' }))).toBe('sluice_team_dev');
  });
});
