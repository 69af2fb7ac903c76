import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../lib/config/config.ts';
import { BinlogReader } from '../../lib/source/mysql/binlog-reader.ts';
import { connect } from '../../lib/source/mysql/server.ts';
import { mysqlTarget } from '../../lib/source/mysql/target.ts';
import { type Sha2ServerOptions, startSha2Server } from '../support/sha2-server.ts';

/*
 * SHA-2 authentication against a server that speaks only the authentication exchange
 * (test/support/sha2-server.ts): what the client sends is checked byte by byte, so "the password
 * never left" is observed, not assumed. The server stands for whoever answers: the real server, or
 * someone in between.
 */
const PASSWORD = 'Sha2-secret-pw';

describe('caching_sha2_password and sha256_password: the password goes only where nobody else can read it', () => {
  let dir: string;
  const servers: Awaited<ReturnType<typeof startSha2Server>>[] = [];
  const serverKeys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const otherKeys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = (key: typeof serverKeys) => key.publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const cert = (name: string) => ({ key: readFileSync(join(dir, `${name}-key.pem`), 'utf8'), cert: readFileSync(join(dir, `${name}.pem`), 'utf8') });

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-sha2-'));
    for (const name of ['localhost', 'elsewhere.invalid', '127.0.0.1']) {
      const san = name === '127.0.0.1' ? `IP:${name}` : `DNS:${name}`;
      execFileSync(
        'openssl',
        ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', `/CN=${name}`, '-addext', `subjectAltName=${san}`].concat([
          '-keyout',
          `${name}-key.pem`,
          '-out',
          `${name}.pem`,
        ]),
        { cwd: dir, stdio: 'pipe' },
      );
    }
    writeFileSync(join(dir, 'server-public.pem'), pem(serverKeys));
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()));
    rmSync(dir, { recursive: true, force: true });
  });

  const start = async (options: Omit<Sha2ServerOptions, 'password' | 'keys'>) => {
    const server = await startSha2Server({ ...options, password: PASSWORD, keys: serverKeys });
    servers.push(server);
    return server;
  };
  const settings = (port: number, env: Record<string, string> = {}, host = '127.0.0.1') =>
    loadConfig({
      SLUICE_SOURCE_ID: 'auth',
      SLUICE_MYSQL_URL: `mysql://sluice:${PASSWORD}@${host}:${port}/`,
      SLUICE_STATE_TABLE: 'x-table',
      SLUICE_BUCKET: 'x-bucket',
      ...env,
    });
  const connectWith = async (port: number, env: Record<string, string> = {}, host?: string) => {
    const conn = await connect(await mysqlTarget(settings(port, env, host)));
    await conn.end();
  };
  const leaked = (bytes: Buffer) => bytes.includes(Buffer.from(PASSWORD));

  it('the server stands for a man in the middle: plain mysql2 asks it for its key and hands it the password', async () => {
    const server = await start({ plugin: 'caching_sha2_password' });
    const conn = await mysql.createConnection({ uri: `mysql://sluice:${PASSWORD}@127.0.0.1:${server.port}/` });
    await conn.end();
    expect(server.sessions[0]?.steps).toEqual(['switch', 'token', 'full-auth', 'key-request', 'rsa-password', 'ok']);
    expect(server.sessions[0]?.password).toBe(PASSWORD);
  });

  it('without TLS and without a pinned key, sluice refuses at the switch: no scramble, no key request, no password', async () => {
    const server = await start({ plugin: 'caching_sha2_password' });
    const refusal = await connectWith(server.port).catch((error: unknown) => error);
    expect(refusal).toMatchObject({ code: 'MYSQL_AUTH_INSECURE', retriable: false });
    expect((refusal as Error).message).toMatch(
      /caching_sha2_password.*without TLS.*The password was not sent.*SLUICE_MYSQL_TLS=verify.*SLUICE_MYSQL_SERVER_PUBLIC_KEY/,
    );
    await expect.poll(() => server.sessions[0]?.steps).toEqual(['switch']);
    // After the handshake response (which carries a mysql_native_password scramble, as for any account), nothing.
    expect(leaked(server.bytes(0))).toBe(false);
  });

  it('with a pinned key (PEM text or a file) the password goes RSA-encrypted to that key, never to a key the server sends', async () => {
    const server = await start({ plugin: 'caching_sha2_password' });
    await connectWith(server.port, { SLUICE_MYSQL_SERVER_PUBLIC_KEY: pem(serverKeys) });
    await connectWith(server.port, { SLUICE_MYSQL_SERVER_PUBLIC_KEY: join(dir, 'server-public.pem') });
    for (const session of server.sessions) {
      expect(session.steps).toEqual(['switch', 'token', 'full-auth', 'rsa-password', 'ok']);
      expect(session.password).toBe(PASSWORD);
      expect(leaked(Buffer.concat(session.received))).toBe(false);
    }
    // A warm cache needs only the scramble.
    const fast = await start({ plugin: 'caching_sha2_password', fastAuth: true });
    await connectWith(fast.port, { SLUICE_MYSQL_SERVER_PUBLIC_KEY: pem(serverKeys) });
    expect(fast.sessions[0]?.steps).toEqual(['switch', 'token', 'ok']);
  });

  it('a key that is not the server’s: the server cannot read the password, and the message points at the key', async () => {
    const server = await start({ plugin: 'caching_sha2_password' });
    const error = await connectWith(server.port, { SLUICE_MYSQL_SERVER_PUBLIC_KEY: pem(otherKeys) }).catch((e: unknown) => e);
    expect(server.sessions[0]?.steps).toEqual(['switch', 'token', 'full-auth', 'rsa-password', 'denied']);
    expect(error).toMatchObject({ code: 'MYSQL_CONNECT' });
    expect((error as Error).message).toMatch(/Access denied.*SLUICE_MYSQL_SERVER_PUBLIC_KEY may not be this server's key/);
  });

  it('SLUICE_MYSQL_TLS=required (any certificate) refuses: inside unverified TLS the password would go in clear to whoever answered', async () => {
    const server = await start({ plugin: 'caching_sha2_password', tls: cert('localhost') });
    const refusal = await connectWith(server.port, { SLUICE_MYSQL_TLS: 'required' }).catch((error: unknown) => error);
    expect(refusal).toMatchObject({ code: 'MYSQL_AUTH_INSECURE' });
    expect((refusal as Error).message).toMatch(/certificate is not checked \(SLUICE_MYSQL_TLS=required\).*SLUICE_MYSQL_TLS=verify/);
    await expect.poll(() => server.sessions[0]?.steps).toEqual(['tls', 'switch']);
    expect(leaked(server.bytes(0))).toBe(false); // what the TLS peer decrypted
  });

  it('SLUICE_MYSQL_TLS=verify sends the password inside TLS to the server whose certificate and name were checked, and to no other', async () => {
    const server = await start({ plugin: 'caching_sha2_password', tls: cert('localhost') });
    await connectWith(server.port, { SLUICE_MYSQL_TLS: 'verify', SLUICE_MYSQL_CA: join(dir, 'localhost.pem') }, 'localhost');
    expect(server.sessions[0]?.steps).toEqual(['tls', 'switch', 'token', 'full-auth', 'clear-password', 'ok']);
    expect(server.sessions[0]?.password).toBe(PASSWORD);
    // A certificate the CA vouches for, but for another name: refused at TLS, before any credentials.
    const impostor = await start({ plugin: 'caching_sha2_password', tls: cert('elsewhere.invalid') });
    const error = await connectWith(impostor.port, { SLUICE_MYSQL_TLS: 'verify', SLUICE_MYSQL_CA: join(dir, 'elsewhere.invalid.pem') }, 'localhost').catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: 'MYSQL_CONNECT' });
    expect((error as Error).message).toMatch(/localhost.*(not in the cert's altnames|does not match)/i);
    await expect.poll(() => impostor.sessions[0]?.steps).toEqual(['tls']);
    expect(leaked(impostor.bytes(0))).toBe(false);
  });

  it('SLUICE_MYSQL_TLS=verify by IP address checks the IP against the certificate’s IP names, not the name "localhost"', async () => {
    const server = await start({ plugin: 'caching_sha2_password', tls: cert('127.0.0.1') });
    await connectWith(server.port, { SLUICE_MYSQL_TLS: 'verify', SLUICE_MYSQL_CA: join(dir, '127.0.0.1.pem') }, '127.0.0.1');
    expect(server.sessions[0]?.steps).toEqual(['tls', 'switch', 'token', 'full-auth', 'clear-password', 'ok']);
    // A certificate for localhost does not vouch for an address, even a loopback one.
    const impostor = await start({ plugin: 'caching_sha2_password', tls: cert('localhost') });
    const error = await connectWith(impostor.port, { SLUICE_MYSQL_TLS: 'verify', SLUICE_MYSQL_CA: join(dir, 'localhost.pem') }, '127.0.0.1').catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code: 'MYSQL_CONNECT' });
    expect((error as Error).message).toMatch(/IP: 127\.0\.0\.1 is not in the cert's list/i);
    await expect.poll(() => impostor.sessions[0]?.steps).toEqual(['tls']);
    expect(leaked(impostor.bytes(0))).toBe(false);
  });

  it('sha256_password follows the same rules: refused without TLS or key, RSA to the pinned key', async () => {
    const server = await start({ plugin: 'sha256_password' });
    await expect(connectWith(server.port)).rejects.toMatchObject({ code: 'MYSQL_AUTH_INSECURE', message: expect.stringMatching(/sha256_password/) });
    await connectWith(server.port, { SLUICE_MYSQL_SERVER_PUBLIC_KEY: pem(serverKeys) });
    expect(server.sessions.map((s) => s.steps)).toEqual([['switch'], ['switch', 'rsa-password', 'ok']]);
    expect(server.sessions[1]?.password).toBe(PASSWORD);
    expect(leaked(server.bytes(0))).toBe(false);
  });

  it('the binlog connection (zongji) gets the same plugins: it refuses with the same error', async () => {
    const server = await start({ plugin: 'caching_sha2_password' });
    const reader = new BinlogReader({ target: await mysqlTarget(settings(server.port)), start: { file: 'binlog.000001', pos: 4 }, filter: () => false });
    try {
      const read = (async () => {
        for await (const _ of reader);
      })();
      await expect(read).rejects.toMatchObject({ code: 'MYSQL_AUTH_INSECURE' });
    } finally {
      await reader.stop();
    }
    // zongji opens two connections; the second may be cut off before its switch: none gets further.
    expect(server.sessions.map((s) => s.steps[0])).toContain('switch');
    for (const session of server.sessions) expect(session.steps.filter((step) => step !== 'switch')).toEqual([]);
  });
});
