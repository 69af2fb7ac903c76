// Parameter defaults serverless.yml computes; osls calls each with its variable resolver.
// CommonJS: osls loads `${file(...)}` sources with require().

/** Lower-case letters, digits and `_`: the only characters Athena reads in a database name. */
const athenaName = (name) => name.toLowerCase().replace(/[^a-z0-9_]/g, '_');

/** The Glue database's default name, `<service>_<stage>` ("pr-7" and "Prod" are valid stages); none when another catalog is chosen. */
exports.glueDatabase = async ({ resolveVariable }) => {
  const [catalog, s3Tables] = [await resolveVariable('param:icebergCatalog'), await resolveVariable('param:s3TablesBucket')];
  if (s3Tables || catalog === 'rest' || catalog === 'file') return '';
  return athenaName(`${await resolveVariable('self:service')}_${await resolveVariable('sls:stage')}`);
};

/** A namespace (or table) name S3 Tables accepts: one level, `[a-z0-9_]`, a letter or digit at each end. */
const S3_TABLES_NAME = /^[a-z0-9](?:[a-z0-9_]{0,253}[a-z0-9])?$/;

/** The REST settings besides the namespace, which S3 Tables sets itself. */
const REST_PARAMS = ['icebergRestUri', 'icebergRestWarehouse', 'icebergRestSigningName', 'icebergRestSigningRegion', 'icebergRestLocation'];

/**
 * SLUICE_ICEBERG_CATALOG when s3TablesBucket is off, after checking the catalog parameters agree
 * (as lib/config/config.ts does when the function starts, but before anything is deployed).
 */
exports.icebergCatalog = async ({ resolveVariable }) => {
  const param = async (name) => String((await resolveVariable(`param:${name}`)) ?? '');
  const [catalog, glue, s3Tables, location] = [
    await param('icebergCatalog'),
    await param('glueDatabase'),
    await param('s3TablesBucket'),
    await param('icebergRestLocation'),
  ];
  const rest = [];
  for (const name of REST_PARAMS) if (await param(name)) rest.push(name);
  if (s3Tables) {
    if (!/^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/.test(s3Tables))
      throw new Error(
        `s3TablesBucket "${s3Tables}" is not a table bucket name: use 3-63 lower-case letters, digits and hyphens, a letter or digit at each end`,
      );
    if (catalog && catalog !== 'rest')
      throw new Error(`s3TablesBucket is set but icebergCatalog is ${catalog}: S3 Tables is a REST catalog; unset icebergCatalog`);
    if (glue)
      throw new Error(
        's3TablesBucket and glueDatabase are both set: the tables go into the table bucket; unset glueDatabase (docs/ICEBERG.md "Configuration")',
      );
    if (rest.length) throw new Error(`s3TablesBucket sets the REST catalog settings itself: unset ${rest.join(', ')}`);
    const namespace = await param('icebergRestNamespace');
    if (namespace && !S3_TABLES_NAME.test(namespace))
      throw new Error(
        `icebergRestNamespace "${namespace}" is not an S3 Tables namespace: use one level of lower-case letters, digits and "_", a letter or digit at each end (empty: sluice)`,
      );
    // The function's catalog comes from the table bucket; this is the value of a stack whose table bucket parameter is emptied.
    return 'file';
  }
  const kind = catalog || (glue ? 'glue' : 'file');
  if (!['file', 'glue', 'rest'].includes(kind)) throw new Error(`icebergCatalog "${catalog}" is none of file, glue, rest`);
  if (kind === 'glue' && !glue) throw new Error('icebergCatalog is glue but glueDatabase is empty: name the Glue database');
  if (kind !== 'glue' && glue) throw new Error(`glueDatabase is set but icebergCatalog is ${kind}: unset one of them`);
  if (kind === 'rest' && !(await param('icebergRestUri')))
    throw new Error('icebergCatalog is rest but icebergRestUri is empty: set the catalog URI before /v1 (or s3TablesBucket for Amazon S3 Tables)');
  if (kind !== 'rest' && (rest.length || (await param('icebergRestNamespace'))))
    throw new Error(
      `${[...rest, ...((await param('icebergRestNamespace')) ? ['icebergRestNamespace'] : [])].join(', ')}: only used with icebergCatalog rest (it is ${kind}): set that, or unset these`,
    );
  if (!['', 'sluice', 'catalog'].includes(location)) throw new Error(`icebergRestLocation "${location}" is neither sluice nor catalog`);
  return kind;
};

/**
 * SLUICE_ICEBERG_MAINTENANCE from icebergMaintenance (sluice | glue | catalog; empty: catalog with
 * s3TablesBucket, else sluice), after checking that a
 * catalog maintains the tables: glue needs the Glue catalog, catalog a REST catalog (S3 Tables' own
 * maintenance) or Glue (optimizers set up outside this stack).
 */
exports.icebergMaintenance = async ({ resolveVariable }) => {
  const param = async (name) => String((await resolveVariable(`param:${name}`)) ?? '');
  const [maintenance, catalog, glue, s3Tables] = [
    await param('icebergMaintenance'),
    await param('icebergCatalog'),
    await param('glueDatabase'),
    await param('s3TablesBucket'),
  ];
  const kind = s3Tables ? 'rest' : catalog || (glue ? 'glue' : 'file');
  // S3 Tables maintains every table it holds: building on it is the default there.
  if (!maintenance) return s3Tables ? 'catalog' : 'sluice';
  if (!['sluice', 'glue', 'catalog'].includes(maintenance)) throw new Error(`icebergMaintenance "${maintenance}" is none of sluice, glue, catalog`);
  if (maintenance === 'glue' && kind !== 'glue')
    throw new Error(
      `icebergMaintenance is glue but the tables are in the ${kind} catalog: Glue's table optimizers need glueDatabase (docs/ICEBERG.md "Maintenance by the catalog")`,
    );
  if (maintenance === 'catalog' && kind === 'file')
    throw new Error(
      'icebergMaintenance is catalog but the tables are in no catalog that maintains them: set s3TablesBucket, icebergCatalog rest, or glueDatabase',
    );
  return maintenance === 'sluice' ? 'sluice' : 'catalog';
};

/** The functions' security groups; subnets without them would leave the functions outside the VPC. */
exports.securityGroupIds = async ({ resolveVariable }) => {
  const [subnets, groups] = [await resolveVariable('param:subnetIds'), await resolveVariable('param:securityGroupIds')];
  if (subnets && !groups) throw new Error("subnetIds is set but securityGroupIds is empty: set securityGroupIds to the functions' security groups in that VPC");
  return groups;
};

/** SLUICE_ICEBERG_REST_NAMESPACE when s3TablesBucket is off: the namespace of a REST catalog (none for S3 Tables, whose branch sets it). */
exports.restNamespace = async ({ resolveVariable }) =>
  (await resolveVariable('param:s3TablesBucket')) ? '' : await resolveVariable('param:icebergRestNamespace');

/** The S3 Tables namespace every table goes into: icebergRestNamespace (checked by icebergCatalog), else `sluice`. */
exports.s3TablesNamespace = async ({ resolveVariable }) => (await resolveVariable('param:icebergRestNamespace')) || 'sluice';

exports.athenaName = athenaName;
