import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

type Resolver = (resolver: { resolveVariable: (name: string) => Promise<string> }) => Promise<string>;
const { glueDatabase, securityGroupIds } = createRequire(import.meta.url)('../../scripts/stack-params.cjs') as {
  glueDatabase: Resolver;
  securityGroupIds: Resolver;
};

const resolving = (values: Record<string, string>) => ({ resolveVariable: async (name: string) => values[name] ?? '' });

describe("serverless.yml's computed defaults", () => {
  it('names the Glue database <service>_<stage> in the characters Athena accepts, whatever the stage is called', async () => {
    expect(await glueDatabase(resolving({ 'self:service': 'sluice', 'sls:stage': 'prod' }))).toBe('sluice_prod');
    expect(await glueDatabase(resolving({ 'self:service': 'sluice', 'sls:stage': 'pr-7' }))).toBe('sluice_pr_7');
    expect(await glueDatabase(resolving({ 'self:service': 'sluice', 'sls:stage': 'Team.Dev' }))).toBe('sluice_team_dev');
  });

  it('refuses subnets without security groups, which would deploy the functions outside the VPC', async () => {
    await expect(securityGroupIds(resolving({ 'param:subnetIds': 'subnet-1' }))).rejects.toThrow(/securityGroupIds is empty/);
    expect(await securityGroupIds(resolving({ 'param:subnetIds': 'subnet-1', 'param:securityGroupIds': 'sg-1' }))).toBe('sg-1');
    expect(await securityGroupIds(resolving({}))).toBe('');
  });
});
