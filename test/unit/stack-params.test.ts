import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

type Resolver = (resolver: { resolveVariable: (name: string) => Promise<string> }) => Promise<string>;
const { glueDatabase, securityGroupIds, icebergCatalog, icebergMaintenance, restNamespace, s3TablesNamespace } = createRequire(import.meta.url)(
  '../../scripts/stack-params.cjs',
) as {
  glueDatabase: Resolver;
  icebergMaintenance: Resolver;
  securityGroupIds: Resolver;
  icebergCatalog: Resolver;
  restNamespace: Resolver;
  s3TablesNamespace: Resolver;
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

  it('leaves the Glue database empty by default when another catalog or S3 Tables is chosen', async () => {
    const stage = { 'self:service': 'sluice', 'sls:stage': 'prod' };
    expect(await glueDatabase(resolving({ ...stage, 'param:icebergCatalog': 'rest' }))).toBe('');
    expect(await glueDatabase(resolving({ ...stage, 'param:icebergCatalog': 'file' }))).toBe('');
    expect(await glueDatabase(resolving({ ...stage, 'param:s3TablesBucket': 'lake' }))).toBe('');
    expect(await glueDatabase(resolving({ ...stage, 'param:icebergCatalog': 'glue' }))).toBe('sluice_prod');
  });

  it('works out the catalog and refuses settings that contradict each other before anything is deployed', async () => {
    const catalog = (values: Record<string, string>) =>
      icebergCatalog(resolving(Object.fromEntries(Object.entries(values).map(([k, v]) => [`param:${k}`, v]))));
    expect(await catalog({ glueDatabase: 'sluice_prod' })).toBe('glue');
    expect(await catalog({})).toBe('file');
    expect(await catalog({ icebergCatalog: 'rest', icebergRestUri: 'https://glue.us-east-1.amazonaws.com/iceberg', icebergRestNamespace: 'lake' })).toBe(
      'rest',
    );
    // S3 Tables: the table bucket's branch sets the catalog; this is the other branch's.
    expect(await catalog({ s3TablesBucket: 'sluice-lake', icebergRestNamespace: 'sluice' })).toBe('file');
    await expect(catalog({ icebergCatalog: 'rest', glueDatabase: 'x', icebergRestUri: 'https://x' })).rejects.toThrow(
      /glueDatabase is set but icebergCatalog is rest/,
    );
    await expect(catalog({ icebergCatalog: 'rest' })).rejects.toThrow(/icebergRestUri is empty/);
    await expect(catalog({ icebergCatalog: 'glue' })).rejects.toThrow(/glueDatabase is empty/);
    await expect(catalog({ icebergCatalog: 'hive' })).rejects.toThrow(/none of file, glue, rest/);
    await expect(catalog({ glueDatabase: 'g', icebergRestUri: 'https://x' })).rejects.toThrow(/icebergRestUri: only used with icebergCatalog rest/);
    await expect(catalog({ icebergCatalog: 'rest', icebergRestUri: 'https://x', icebergRestLocation: 'here' })).rejects.toThrow(/neither sluice nor catalog/);
    await expect(catalog({ s3TablesBucket: 'Lake_1' })).rejects.toThrow(/not a table bucket name/);
    await expect(catalog({ s3TablesBucket: 'lake', glueDatabase: 'g' })).rejects.toThrow(/unset glueDatabase/);
    await expect(catalog({ s3TablesBucket: 'lake', icebergCatalog: 'glue' })).rejects.toThrow(/S3 Tables is a REST catalog/);
    await expect(catalog({ s3TablesBucket: 'lake', icebergRestUri: 'https://x', icebergRestSigningName: 'glue' })).rejects.toThrow(
      /unset icebergRestUri, icebergRestSigningName/,
    );
    expect(await restNamespace(resolving({ 'param:icebergRestNamespace': 'lake' }))).toBe('lake');
    expect(await restNamespace(resolving({ 'param:icebergRestNamespace': 'lake', 'param:s3TablesBucket': 'b' }))).toBe('');
  });

  it('works out who maintains the Iceberg tables, and refuses a maintainer the catalog cannot be', async () => {
    const maintenance = (values: Record<string, string>) =>
      icebergMaintenance(resolving(Object.fromEntries(Object.entries(values).map(([k, v]) => [`param:${k}`, v]))));
    expect(await maintenance({ icebergMaintenance: 'sluice' })).toBe('sluice');
    expect(await maintenance({})).toBe('sluice');
    expect(await maintenance({ glueDatabase: 'sluice_prod' })).toBe('sluice');
    expect(await maintenance({ s3TablesBucket: 'lake' }), "S3 Tables' own maintenance by default").toBe('catalog');
    expect(await maintenance({ s3TablesBucket: 'lake', icebergMaintenance: 'sluice' })).toBe('sluice');
    expect(await maintenance({ icebergMaintenance: 'glue', glueDatabase: 'sluice_prod' })).toBe('catalog');
    expect(await maintenance({ icebergMaintenance: 'catalog', s3TablesBucket: 'lake' })).toBe('catalog');
    expect(await maintenance({ icebergMaintenance: 'catalog', icebergCatalog: 'rest' })).toBe('catalog');
    await expect(maintenance({ icebergMaintenance: 'glue', s3TablesBucket: 'lake' })).rejects.toThrow(
      /icebergMaintenance is glue but the tables are in the rest catalog/,
    );
    await expect(maintenance({ icebergMaintenance: 'glue' })).rejects.toThrow(/need glueDatabase/);
    await expect(maintenance({ icebergMaintenance: 'catalog' })).rejects.toThrow(/in no catalog that maintains them/);
    await expect(maintenance({ icebergMaintenance: 'aws' })).rejects.toThrow(/is none of sluice, glue, catalog/);
  });

  it('puts S3 Tables tables into one namespace S3 Tables accepts: sluice by default, and refuses one it would refuse', async () => {
    expect(await s3TablesNamespace(resolving({ 'param:s3TablesBucket': 'lake' }))).toBe('sluice');
    expect(await s3TablesNamespace(resolving({ 'param:s3TablesBucket': 'lake', 'param:icebergRestNamespace': 'cdc_prod' }))).toBe('cdc_prod');
    for (const bad of ['lake.sluice', 'Sluice', '_cdc', 'cdc-prod'])
      await expect(icebergCatalog(resolving({ 'param:s3TablesBucket': 'lake', 'param:icebergRestNamespace': bad })), bad).rejects.toThrow(
        /is not an S3 Tables namespace/,
      );
    expect(await icebergCatalog(resolving({ 'param:s3TablesBucket': 'lake', 'param:icebergRestNamespace': 'cdc_prod' }))).toBe('file');
  });
});
