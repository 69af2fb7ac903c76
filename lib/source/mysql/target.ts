import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { Config } from '../../config/config.ts';
import { ConfigError, ErrorCode, SluiceError } from '../../errors.ts';
import { type TlsOptions, tlsOptions } from './tls.ts';

/** How to reach MySQL: a URI plus TLS options, as mysql2 (and zongji, which passes them on) take them. */
export interface MysqlTarget {
  readonly uri: string;
  readonly ssl?: TlsOptions;
  /** The URI with the password hidden, for messages. */
  readonly label: string;
}

export const redact = (url: string) => url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');

/** An RDS-style secret: {"username", "password", "host", "port", "dbname"?}. */
function uriFromSecret(secretId: string, text: string | undefined): string {
  let secret: Record<string, unknown>;
  try {
    secret = JSON.parse(text ?? '') as Record<string, unknown>;
  } catch {
    throw new SluiceError(
      ErrorCode.MYSQL_SECRET,
      `secret ${secretId} is not JSON; store {"username","password","host","port"} (the format RDS-managed secrets use)`,
    );
  }
  const { username, password, host, port } = secret;
  if (typeof username !== 'string' || typeof password !== 'string' || typeof host !== 'string') {
    throw new SluiceError(ErrorCode.MYSQL_SECRET, `secret ${secretId} lacks username, password or host; store {"username","password","host","port"}`);
  }
  return `mysql://${encodeURIComponent(username)}:${encodeURIComponent(password)}@${host}:${Number(port ?? 3306)}/`;
}

const cache = new Map<string, Promise<MysqlTarget>>();

/**
 * Resolves the MySQL target once per container: from SLUICE_MYSQL_SECRET_ID (Secrets Manager,
 * through the SDK's normal endpoint configuration) or SLUICE_MYSQL_URL, with the TLS settings.
 */
export function mysqlTarget(config: Config, secrets?: () => Pick<SecretsManagerClient, 'send'>): Promise<MysqlTarget> {
  const cacheKey = `${config.mysqlSecretId ?? config.mysqlUrl}|${config.mysqlTls}|${config.mysqlCa ?? ''}`;
  let target = cache.get(cacheKey);
  if (!target) {
    target = (async () => {
      let uri = config.mysqlUrl;
      if (config.mysqlSecretId) {
        const id = config.mysqlSecretId;
        // Loaded only when a secret is configured: the SDK client adds to every start otherwise.
        const { GetSecretValueCommand, SecretsManagerClient } = await import('@aws-sdk/client-secrets-manager');
        const value = await (secrets?.() ?? new SecretsManagerClient({})).send(new GetSecretValueCommand({ SecretId: id })).catch((error: Error) => {
          throw new SluiceError(
            ErrorCode.MYSQL_SECRET,
            `cannot read secret ${id} from Secrets Manager: ${error.message} (the function needs secretsmanager:GetSecretValue on it)`,
            { cause: error, retriable: true },
          );
        });
        uri = uriFromSecret(id, value.SecretString);
      }
      if (!uri) throw new ConfigError('set SLUICE_MYSQL_URL or SLUICE_MYSQL_SECRET_ID');
      return { uri, ssl: tlsOptions(config.mysqlTls, config.mysqlCa), label: redact(uri) };
    })();
    target.catch(() => cache.delete(cacheKey)); // a failed lookup is retried by the next run
    cache.set(cacheKey, target);
  }
  return target;
}
