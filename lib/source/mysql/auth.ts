/*
 * How the password leaves sluice for MySQL 8's SHA-2 authentication (`caching_sha2_password`, the
 * default since 8.0.4 and the only one left in 9.x, and the older `sha256_password`).
 *
 * Both end, at least sometimes, with the client sending the password itself: `caching_sha2_password`
 * whenever the server's cache lacks the account (after every restart, FLUSH PRIVILEGES or password
 * change: "perform full authentication"), `sha256_password` always. It goes either in clear inside
 * TLS or RSA-encrypted with the server's public key. mysql2 on its own sends it in clear inside any
 * TLS, verified or not, and without TLS asks the server for its public key and encrypts with
 * whatever key comes back: whoever sits in between answers with their own key, or their own
 * certificate, and reads the password.
 *
 * The plugins below send the password only where nobody else can read it:
 * - over TLS whose certificate chain and host name were checked (SLUICE_MYSQL_TLS=verify), or a
 *   Unix socket: in clear inside the channel, as the protocol wants;
 * - without TLS, RSA-encrypted with the key pinned in SLUICE_MYSQL_SERVER_PUBLIC_KEY: only the
 *   holder of its private key can read it. The key is never requested from the server.
 * Everywhere else (no TLS and no pinned key; SLUICE_MYSQL_TLS=required, which accepts any
 * certificate) they refuse when the server names the plugin, before sending the password or its
 * SHA-2 scramble, so the refusal does not depend on whether the server's cache happens to be warm
 * (a setup that works until the next restart is worse than one that never works).
 *
 * Registering them makes mysql2 answer the server's greeting with mysql_native_password and meet
 * these through the server's auth switch (one round trip more). That first answer is a
 * mysql_native_password token of the password and the peer's nonce, as for any account: it does
 * not reveal the password, but a peer that is not the server could try to guess the password
 * from it offline. Only `verify` (or a socket) rules that out. MariaDB's plugins
 * (mysql_native_password, ed25519) are left to mysql2 as before.
 */
import { createHash, constants as cryptoConstants, publicEncrypt } from 'node:crypto';
import { TLSSocket } from 'node:tls';
import { ErrorCode, SluiceError } from '../../errors.ts';

/** What the connection's settings allow: SLUICE_MYSQL_TLS and SLUICE_MYSQL_SERVER_PUBLIC_KEY. */
export interface PasswordPolicy {
  readonly tls: 'off' | 'required' | 'verify';
  /** SPKI PEM text of the server's RSA public key. */
  readonly serverPublicKey?: string;
}

/** The part of mysql2's connection an authentication plugin reads. */
interface PluginConnection {
  readonly config: { readonly password?: string; readonly socketPath?: string };
  /** The socket (a TLSSocket once TLS is up); missing from mysql2's typings. */
  readonly stream?: unknown;
}

/** An authentication plugin as mysql2's `authPlugins` option takes it. */
export type AuthPlugin = (context: { connection: PluginConnection }) => (data: Buffer) => Buffer | null;

const CACHING_SHA2 = 'caching_sha2_password';
const SHA256 = 'sha256_password';
const FAST_AUTH_SUCCESS = 0x03;
const PERFORM_FULL_AUTHENTICATION = 0x04;

/** Where the password would travel. */
type Channel = 'protected' | 'plain' | 'unverified-tls';

function channelOf(connection: PluginConnection, policy: PasswordPolicy): Channel {
  if (connection.config.socketPath) return 'protected';
  const stream = connection.stream;
  if (stream instanceof TLSSocket && stream.encrypted) {
    // `authorized` alone is not enough: under `required` it only says the chain matched Node's
    // public roots, for whatever name (mysql2 skips the name check there).
    return policy.tls === 'verify' && stream.authorized ? 'protected' : 'unverified-tls';
  }
  return 'plain';
}

const FIXES =
  "Fix: SLUICE_MYSQL_TLS=verify with SLUICE_MYSQL_CA (rds for RDS/Aurora), or, without TLS, pin the server's RSA public key in SLUICE_MYSQL_SERVER_PUBLIC_KEY (PEM text or a file; SHOW STATUS LIKE 'Caching_sha2_password_rsa_public_key' prints it). See docs/RUNBOOK.md \"TLS to MySQL\".";

/** The refusal, wrapped: mysql2 overwrites the `code` of what a plugin throws, so the SluiceError travels as the cause. */
function refuse(plugin: string, channel: Exclude<Channel, 'protected'>): never {
  const where =
    channel === 'plain'
      ? 'a connection without TLS, and no server public key is pinned: mysql2 would fetch the key from whoever answers and encrypt the password for them'
      : 'TLS whose certificate is not checked (SLUICE_MYSQL_TLS=required): the password would go in clear inside TLS to whoever answered';
  const refusal = new SluiceError(
    ErrorCode.MYSQL_AUTH_INSECURE,
    `the MySQL account authenticates with ${plugin}, which sends the password itself, over ${where}. The password was not sent. ${FIXES}`,
  );
  throw new Error(refusal.message, { cause: refusal });
}

/** The refusal a failed connection carries, if the plugins refused (see `refuse`). */
export function authRefusal(error: unknown): SluiceError | undefined {
  const cause = (error as { cause?: unknown } | undefined)?.cause;
  return cause instanceof SluiceError && cause.code === ErrorCode.MYSQL_AUTH_INSECURE ? cause : undefined;
}

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest();

/** caching_sha2_password's scramble: SHA256(p) XOR SHA256(SHA256(SHA256(p)) + nonce); empty for an empty password. */
export function sha2Token(password: string, nonce: Buffer): Buffer {
  if (!password) return Buffer.alloc(0);
  const stage1 = sha256(Buffer.from(password, 'utf8'));
  const stage3 = sha256(Buffer.concat([sha256(stage1), nonce]));
  return Buffer.from(stage1.map((byte, i) => byte ^ (stage3[i] ?? 0)));
}

/** The password (NUL-terminated) XOR the nonce, RSA-OAEP-encrypted with the server's key, as both plugins send it. */
export function encryptPassword(password: string, nonce: Buffer, publicKey: string): Buffer {
  const clear = Buffer.from(`${password}\0`, 'utf8');
  const mixed = Buffer.from(clear.map((byte, i) => byte ^ (nonce[i % nonce.length] ?? 0)));
  return publicEncrypt({ key: publicKey, padding: cryptoConstants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha1' }, mixed);
}

function cachingSha2(policy: PasswordPolicy): AuthPlugin {
  return ({ connection }) => {
    let nonce: Buffer | undefined;
    let channel: Channel = 'plain';
    const password = connection.config.password ?? '';
    return (data) => {
      if (!nonce) {
        channel = channelOf(connection, policy);
        if (channel === 'unverified-tls' || (channel === 'plain' && !policy.serverPublicKey)) refuse(CACHING_SHA2, channel);
        nonce = data.subarray(0, 20);
        return sha2Token(password, nonce);
      }
      if (data.length === 1 && data[0] === FAST_AUTH_SUCCESS) return null; // the server's OK follows
      if (data.length === 1 && data[0] === PERFORM_FULL_AUTHENTICATION) {
        if (channel === 'protected') return Buffer.from(`${password}\0`, 'utf8');
        // 'plain' with a pinned key (the first call refused otherwise). Never ask the server for its key.
        return encryptPassword(password, nonce, policy.serverPublicKey as string);
      }
      throw new Error(`unexpected ${CACHING_SHA2} packet from the server (${data.length} bytes, first 0x${(data[0] ?? 0).toString(16)})`);
    };
  };
}

function sha256Password(policy: PasswordPolicy): AuthPlugin {
  return ({ connection }) => {
    let sent = false;
    const password = connection.config.password ?? '';
    return (data) => {
      if (sent) throw new Error(`unexpected ${SHA256} packet from the server after the password was sent`);
      const channel = channelOf(connection, policy);
      if (channel === 'unverified-tls' || (channel === 'plain' && !policy.serverPublicKey)) refuse(SHA256, channel);
      sent = true;
      if (channel === 'protected') return Buffer.from(`${password}\0`, 'utf8');
      return encryptPassword(password, data.subarray(0, 20), policy.serverPublicKey as string);
    };
  };
}

/** The `authPlugins` option for every mysql2 connection sluice opens (zongji passes it on to its own). */
export function authPlugins(policy: PasswordPolicy): Record<string, AuthPlugin> {
  return { [CACHING_SHA2]: cachingSha2(policy), [SHA256]: sha256Password(policy) };
}
