// Parameter defaults serverless.yml computes; osls calls each with its variable resolver.
// CommonJS: osls loads `${file(...)}` sources with require().

/** Lower-case letters, digits and `_`: the only characters Athena reads in a database name. */
const athenaName = (name) => name.toLowerCase().replace(/[^a-z0-9_]/g, '_');

/** The Glue database's default name, `<service>_<stage>` ("pr-7" and "Prod" are valid stages). */
exports.glueDatabase = async ({ resolveVariable }) => athenaName(`${await resolveVariable('self:service')}_${await resolveVariable('sls:stage')}`);

exports.athenaName = athenaName;
