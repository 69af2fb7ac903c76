import { createHash, createHmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import { ErrorCode, SluiceError } from '../../errors.ts';
import { parseJson, stringifyJson } from '../files/json.ts';

/* The REST catalog's HTTP: one exchange per request, authenticated by a bearer token, OAuth client credentials or SigV4. */

/** How long one catalog request may take. */
const REQUEST_TIMEOUT_MS = 30_000;

/** One HTTP exchange with the catalog: JSON in, status and JSON out (fetch, or a fake in tests). */
export interface RestTransport {
  request(method: 'GET' | 'POST' | 'HEAD' | 'DELETE', path: string, body?: unknown): Promise<{ status: number; body: unknown }>;
}

/** How requests are authenticated. */
export type RestAuth =
  | { readonly kind: 'none' }
  | { readonly kind: 'bearer'; readonly token: string }
  | { readonly kind: 'oauth'; readonly clientId: string; readonly clientSecret: string; readonly scope: string; readonly tokenUri?: string | undefined }
  | {
      readonly kind: 'sigv4';
      readonly signingName: string;
      readonly region: string | (() => Promise<string>);
      readonly credentials: AwsCredentialSource;
    };

/** What SignatureV4 accepts as credentials: a value or the SDK's provider. */
export type AwsCredentialSource =
  | { accessKeyId: string; secretAccessKey: string; sessionToken?: string }
  | (() => Promise<{ accessKeyId: string; secretAccessKey: string; sessionToken?: string }>);

type Bytes = string | ArrayBuffer | ArrayBufferView;
const bytes = (data: Bytes) =>
  typeof data === 'string' ? data : data instanceof ArrayBuffer ? new Uint8Array(data) : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);

/** SHA-256 (an HMAC given a secret) for SignatureV4, from node:crypto. */
class Sha256 {
  private hash;
  constructor(private readonly secret?: Bytes) {
    this.hash = this.fresh();
  }
  private fresh() {
    return this.secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(this.secret));
  }
  update(data: Bytes): void {
    this.hash.update(bytes(data));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
  reset(): void {
    this.hash = this.fresh();
  }
}

/** The transport over fetch: `<uri>/v1/...`, authenticated as `auth` says. */
export function fetchTransport(uri: string, auth: RestAuth, fetcher: typeof fetch = fetch): RestTransport {
  const base = uri.replace(/\/+$/, '');
  const signer =
    auth.kind === 'sigv4'
      ? new SignatureV4({ service: auth.signingName, region: auth.region, credentials: auth.credentials, sha256: Sha256, applyChecksum: true })
      : undefined;
  let token: { value: string; until: number } | undefined = auth.kind === 'bearer' ? { value: auth.token, until: Infinity } : undefined;

  const oauthToken = async (): Promise<string> => {
    if (auth.kind !== 'oauth') throw new SluiceError(ErrorCode.ASSERTION, 'no OAuth client configured');
    if (token && Date.now() < token.until) return token.value;
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: auth.clientId, client_secret: auth.clientSecret, scope: auth.scope });
    const response = await fetcher(auth.tokenUri ?? `${base}/v1/oauth/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
    });
    const body = (await response.json().catch(() => ({}))) as { access_token?: string; expires_in?: number; error_description?: string };
    if (!response.ok || !body.access_token)
      throw new SluiceError(
        ErrorCode.ICEBERG_CATALOG_REQUEST,
        `the Iceberg REST catalog's token endpoint refused the client credentials (HTTP ${response.status}${body.error_description ? `: ${body.error_description}` : ''}): check SLUICE_ICEBERG_REST_CREDENTIAL and SLUICE_ICEBERG_REST_SCOPE`,
      );
    // Renew a minute early: a request never goes out on a token about to expire.
    token = { value: body.access_token, until: Date.now() + Math.max(0, (body.expires_in ?? 3600) - 60) * 1000 };
    return token.value;
  };

  return {
    async request(method, path, body) {
      const url = new URL(`${base}${path}`);
      const text = body === undefined ? undefined : stringifyJson(body);
      let headers: Record<string, string> = { accept: 'application/json', ...(text !== undefined ? { 'content-type': 'application/json' } : {}) };
      if (auth.kind === 'bearer' || auth.kind === 'oauth') headers.authorization = `Bearer ${auth.kind === 'bearer' ? auth.token : await oauthToken()}`;
      if (signer) {
        const query: Record<string, string> = {};
        for (const [k, v] of url.searchParams) query[k] = v;
        const signed = await signer.sign({
          method,
          protocol: url.protocol,
          hostname: url.hostname,
          ...(url.port ? { port: Number(url.port) } : {}),
          path: url.pathname,
          query,
          headers: { ...headers, host: url.host },
          ...(text !== undefined ? { body: text } : {}),
        });
        // fetch sets Host itself, from the same URL.
        const { host: _host, ...rest } = signed.headers;
        headers = rest;
      }
      let response: Response;
      try {
        // A catalog that hangs must not hold the table (its lease renewed) until the function times out.
        response = await fetcher(url, { method, headers, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS), ...(text !== undefined ? { body: text } : {}) });
      } catch (error) {
        throw new SluiceError(
          ErrorCode.ICEBERG_CATALOG_REQUEST,
          `the Iceberg REST catalog at ${base} did not answer ${method} ${url.pathname}: ${(error as Error).message}`,
          {
            cause: error,
            retriable: true,
          },
        );
      }
      const answer = await response.text();
      let json: unknown;
      try {
        json = answer ? parseJson(answer) : undefined;
      } catch {
        json = { error: { message: answer.slice(0, 300) } };
      }
      return { status: response.status, body: json };
    },
  };
}
