// Parameter defaults serverless.yml computes; osls calls each with its variable resolver.
// CommonJS: osls loads `${file(...)}` sources with require().

/** Lower-case letters, digits and `_`: the only characters Athena reads in a database name. */
const athenaName = (name) => name.toLowerCase().replace(/[^a-z0-9_]/g, '_');

/** The Glue database's default name, `<service>_<stage>` ("pr-7" and "Prod" are valid stages). */
exports.glueDatabase = async ({ resolveVariable }) => athenaName(`${await resolveVariable('self:service')}_${await resolveVariable('sls:stage')}`);

/** The functions' security groups; subnets without them would leave the functions outside the VPC. */
exports.securityGroupIds = async ({ resolveVariable }) => {
  const [subnets, groups] = [await resolveVariable('param:subnetIds'), await resolveVariable('param:securityGroupIds')];
  if (subnets && !groups) throw new Error("subnetIds is set but securityGroupIds is empty: set securityGroupIds to the functions' security groups in that VPC");
  return groups;
};

exports.athenaName = athenaName;
