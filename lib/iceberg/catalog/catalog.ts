import { GlueClient } from '@aws-sdk/client-glue';
import { type Env, sdkSettings } from '../../aws.ts';
import type { Config } from '../../config/config.ts';
import type { ObjectStore } from '../../sink/s3/object-store.ts';
import { glueCatalog, glueTableName } from './glue.ts';
import { catalogs, fileCatalog, type IcebergCatalog } from './port.ts';
import { restCatalog } from './rest.ts';
import { fetchTransport, type RestAuth } from './rest-transport.ts';

/* The catalogs configuration asks for. */

/**
 * The catalogs configuration asks for: the file catalog always, then Glue (`SLUICE_GLUE_DATABASE`,
 * its client from AWS_ENDPOINT_URL_GLUE / AWS_ENDPOINT_URL) or an Iceberg REST catalog
 * (`SLUICE_ICEBERG_CATALOG=rest`, SigV4 credentials and region from the same AWS configuration as
 * the other clients).
 */
export function configuredCatalog(config: Config, store: ObjectStore, env: Env = process.env): IcebergCatalog & { destroy(): void } {
  const chosen = config.iceberg.catalog;
  if (chosen.kind === 'file') return { ...fileCatalog(store), destroy() {} };
  if (chosen.kind === 'glue') {
    const glue = new GlueClient({ ...sdkSettings(env, 'GLUE'), maxAttempts: 5 });
    const { retentionMs, keepSnapshots } = config.iceberg;
    const optimizers = chosen.optimizerRoleArn ? { roleArn: chosen.optimizerRoleArn, retentionHours: retentionMs / 3_600_000, keepSnapshots } : undefined;
    return { ...catalogs(fileCatalog(store), glueCatalog(glue, chosen.database, store, optimizers)), destroy: () => glue.destroy() };
  }
  const { auth, destroy } = restAuth(chosen.auth, env);
  const namespace = chosen.namespace;
  const rest = restCatalog(fetchTransport(chosen.uri, auth), store, {
    ...(chosen.warehouse ? { warehouse: chosen.warehouse } : {}),
    location: chosen.location,
    nameOf: (table) => (namespace ? { namespace, name: glueTableName(table) } : { namespace: [table.db], name: table.table }),
  });
  return { ...catalogs(fileCatalog(store), rest), destroy };
}

type RestAuthConfig = Extract<Config['iceberg']['catalog'], { kind: 'rest' }>['auth'];

/** The REST catalog's authentication; SigV4's credentials and region come from the SDK's own chains (env, profile, the Lambda role). */
function restAuth(auth: RestAuthConfig, env: Env): { auth: RestAuth; destroy(): void } {
  if (auth.kind !== 'sigv4') return { auth, destroy() {} };
  const aws = new GlueClient(sdkSettings(env, 'GLUE'));
  const region = auth.region ?? (() => aws.config.region());
  return { auth: { kind: 'sigv4', signingName: auth.signingName, region, credentials: () => aws.config.credentials() }, destroy: () => aws.destroy() };
}
