import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { Config } from '../../config/config.ts';
import { ConfigError, ErrorCode, SluiceError } from '../../errors.ts';
import { type AuthPlugin, authPlugins } from './auth.ts';
import { type TlsOptions, tlsOptions } from './tls.ts';

/** How to reach MySQL: a URI plus TLS options, as mysql2 (and zongji, which passes them on) take them. */
export interface MysqlTarget {
  readonly uri: string;
  readonly ssl?: TlsOptions;
  /** SLUICE_MYSQL_SERVER_PUBLIC_KEY: the pinned RSA key SHA-2 authentication encrypts the password with when there is no TLS. */
  readonly serverPublicKey?: string;
  /** The URI with the password hidden, for messages. */
  readonly label: string;
}

/**
 * The options every mysql2 connection to the target takes, zongji's two included: the URI, TLS,
 * and the SHA-2 authentication plugins that send the password only where TLS was verified or to
 * the pinned key (lib/source/mysql/auth.ts). The plugins' policy follows the TLS actually used.
 */
export function connectionOptions(target: MysqlTarget): { uri: string; ssl?: TlsOptions; authPlugins: Record<string, AuthPlugin> } {
  const ssl = target.ssl;
  const tls = !ssl ? 'off' : ssl.rejectUnauthorized && ssl.verifyIdentity ? 'verify' : 'required';
  return {
    uri: target.uri,
    ...(ssl ? { ssl } : {}),
    authPlugins: authPlugins({ tls, ...(target.serverPublicKey ? { serverPublicKey: target.serverPublicKey } : {}) }),
  };
}

/**
 * The URL with its password replaced by `***`, however the password is written: percent-encoded,
 * or raw with `@`, `/`, `:` or `%` in it. The credentials end at the URL's last `@`, so anything
 * between the user name and it is hidden (with an `@` after the host, more is hidden, never less).
 */
export function redact(url: string): string {
  const scheme = url.indexOf('://');
  const at = url.lastIndexOf('@');
  if (scheme < 0 || at < scheme) return url;
  const credentials = url.slice(scheme + 3, at);
  const colon = credentials.indexOf(':');
  const user = colon < 0 ? credentials : credentials.slice(0, colon);
  return `${url.slice(0, scheme + 3)}${user}${colon < 0 ? '' : ':***'}${url.slice(at)}`;
}

/** The secret parts of a MySQL URL as they may appear in text: the password raw, decoded and encoded. */
function secretsOf(uri: string): string[] {
  const scheme = uri.indexOf('://');
  const at = uri.lastIndexOf('@');
  if (scheme < 0 || at < scheme) return [];
  const credentials = uri.slice(scheme + 3, at);
  const colon = credentials.indexOf(':');
  if (colon < 0) return [];
  const raw = credentials.slice(colon + 1);
  let decoded = raw;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    // a raw `%` in the password: the raw form is all there is
  }
  return [...new Set([raw, decoded, encodeURIComponent(decoded)])].filter((secret) => secret.length > 0).sort((a, b) => b.length - a.length);
}

/** `text` (an error message from the driver or the network) with the target's password hidden wherever it appears. */
export function scrub(text: string, uri: string): string {
  let out = text;
  for (const secret of secretsOf(uri)) out = out.split(secret).join('***');
  return out;
}

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

const cache = new Map<string, { target: Promise<MysqlTarget>; at: number }>();

/** How long a secret's value is used before it is read again: a rotated secret reaches every warm container within this. */
export const SECRET_REFRESH_MS = 5 * 60_000;

/**
 * Resolves the MySQL target once per container: from SLUICE_MYSQL_URL, or SLUICE_MYSQL_SECRET_ID
 * (Secrets Manager, through the SDK's normal endpoint configuration), read again once
 * SECRET_REFRESH_MS old; with the TLS settings.
 */
export function mysqlTarget(config: Config, secrets?: () => Pick<SecretsManagerClient, 'send'>, now: () => number = Date.now): Promise<MysqlTarget> {
  const cacheKey = `${config.mysqlSecretId ?? config.mysqlUrl}|${config.mysqlTls}|${config.mysqlCa ?? ''}|${config.mysqlServerPublicKey ?? ''}`;
  const cached = cache.get(cacheKey);
  let target = cached && !(config.mysqlSecretId && now() - cached.at >= SECRET_REFRESH_MS) ? cached.target : undefined;
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
      return {
        uri,
        ssl: tlsOptions(config.mysqlTls, config.mysqlCa),
        ...(config.mysqlServerPublicKey ? { serverPublicKey: config.mysqlServerPublicKey } : {}),
        label: redact(uri),
      };
    })();
    const entry = { target, at: now() };
    // A failed lookup is retried by the next run.
    target.catch(() => {
      if (cache.get(cacheKey) === entry) cache.delete(cacheKey);
    });
    cache.set(cacheKey, entry);
  }
  return target;
}
