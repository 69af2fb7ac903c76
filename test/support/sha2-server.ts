import { constants, createHash, generateKeyPairSync, type KeyObject, privateDecrypt } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Duplex } from 'node:stream';
import { TLSSocket } from 'node:tls';
import mysql from 'mysql2';

/*
 * A MySQL server, on mysql2's createServer(), that only authenticates: it greets as MySQL 8.4 with
 * mysql_native_password (as RDS MySQL 8.0 does by default), switches the client to the account's
 * plugin (caching_sha2_password or sha256_password) and then, for caching_sha2_password, either
 * accepts the scramble ("fast auth", a warm cache) or asks for the password ("perform full
 * authentication", a cold cache). It checks what the client sends against the protocol as the
 * MySQL 8.4 manual describes it ("Caching SHA-2 Pluggable Authentication", "SHA-256 Pluggable
 * Authentication") and records every byte the client sent after TLS (what a man in the middle
 * reads), so tests can say whether the password or a public-key request ever left the client.
 */

export interface Sha2ServerOptions {
  plugin: 'caching_sha2_password' | 'sha256_password';
  password: string;
  /** caching_sha2_password: accept the scramble instead of asking for the password. */
  fastAuth?: boolean;
  /** Offer TLS with this certificate and key (PEM). */
  tls?: { key: string; cert: string };
  /** The server's RSA key pair; a fresh 2048-bit one by default. */
  keys?: { publicKey: KeyObject; privateKey: KeyObject };
}

/** What one connection did, step by step. */
export interface Sha2Session {
  steps: string[];
  /** Every byte the client sent (decrypted, for TLS connections). */
  received: Buffer[];
  /** The password as the server read it (clear or RSA-decrypted), if one arrived. */
  password?: string;
}

interface ServerPacket {
  buffer: Buffer;
  start: number;
  end: number;
}
interface ServerConnection {
  stream: NodeJS.ReadWriteStream & { removeAllListeners(event: string): unknown; on(event: string, cb: (data: Buffer) => void): unknown };
  packetParser: { execute(data: Buffer): void };
  writePacket(packet: { buffer: Buffer; length(): number; writeHeader(sequenceId: number): void }): void;
  writeOk(): void;
  writeError(error: { message: string; code: number }): void;
  close(): void;
  serverHandshake(args: Record<string, unknown>): { next: unknown };
}
type State = (packet: ServerPacket, conn: ServerConnection) => State | unknown;

// Capability flags (MySQL's include/mysql_com.h): LONG_PASSWORD, FOUND_ROWS, LONG_FLAG, CONNECT_WITH_DB,
// PROTOCOL_41, TRANSACTIONS, SECURE_CONNECTION, MULTI_RESULTS, PLUGIN_AUTH, and SSL when offered.
const CAPABILITIES = 0x1 | 0x2 | 0x4 | 0x8 | 0x200 | 0x2000 | 0x8000 | 0x20000 | 0x80000;
const SSL = 0x800;

const payloadOf = (packet: ServerPacket) => packet.buffer.subarray(packet.start + 4, packet.end);
/** A packet mysql2's writePacket can send (it writes the header and sequence id). */
function raw(payload: Buffer) {
  const buffer = Buffer.concat([Buffer.alloc(4), payload]);
  return {
    buffer,
    length: () => buffer.length,
    writeHeader(sequenceId: number) {
      buffer.writeUIntLE(buffer.length - 4, 0, 3);
      buffer[3] = sequenceId;
    },
  };
}
const sha256 = (data: Buffer) => createHash('sha256').update(data).digest();

/** Starts the server on 127.0.0.1; `sessions` fills as clients connect. */
export async function startSha2Server(options: Sha2ServerOptions) {
  const keys = options.keys ?? generateKeyPairSync('rsa', { modulusLength: 2048 });
  const publicKeyPem = keys.publicKey.export({ type: 'spki', format: 'pem' }).toString();
  const sessions: Sha2Session[] = [];
  let connectionId = 0;
  const server = mysql.createServer((base) => {
    const conn = base as unknown as ServerConnection;
    base.on('error', () => undefined); // a client that refuses or quits closes its socket: expected here
    const session: Sha2Session = { steps: [], received: [] };
    sessions.push(session);
    const nonce = Buffer.from(Array.from({ length: 20 }, (_, i) => 0x21 + ((i * 7) % 90)));
    let tls = false;
    // The SSLRequest is taken off the raw socket before mysql2's parser sees it: the client sends
    // its TLS ClientHello right behind it, often in the same chunk, and those bytes belong to TLS.
    const plain = conn.stream;
    plain.removeAllListeners('data');
    let first = true;
    plain.on('data', (chunk: Buffer) => {
      session.received.push(chunk);
      const sslRequest = first && options.tls && chunk.length >= 36 && chunk.readUIntLE(0, 3) === 32 && (chunk.readUInt32LE(4) & SSL) !== 0;
      first = false;
      if (!sslRequest || !options.tls) return conn.packetParser.execute(chunk);
      session.steps.push('tls');
      tls = true;
      (conn as unknown as { sequenceId: number }).sequenceId = 2; // the SSLRequest was packet 1
      plain.removeAllListeners('data');
      // TLS over a plain JS stream, so the ClientHello bytes already read are not lost.
      const carrier = new Duplex({
        read() {},
        write(data, _encoding, done) {
          plain.write(data, done);
        },
      });
      plain.on('data', (data: Buffer) => carrier.push(data));
      plain.on('end', () => carrier.push(null));
      const secure = new TLSSocket(carrier, { isServer: true, key: options.tls.key, cert: options.tls.cert });
      session.received.length = 0; // from here on, what the peer reads is the decrypted stream
      secure.on('data', (data: Buffer) => {
        session.received.push(data);
        conn.packetParser.execute(data);
      });
      secure.on('error', () => undefined); // a client refusing the certificate ends the handshake
      conn.stream = secure as never;
      carrier.push(chunk.subarray(36));
    });
    const handshake = conn.serverHandshake({
      protocolVersion: 10,
      serverVersion: '8.4.3',
      connectionId: ++connectionId,
      statusFlags: 2,
      characterSet: 255,
      capabilityFlags: CAPABILITIES | (options.tls ? SSL : 0),
      authCallback: () => undefined, // the states below answer instead
    });
    const proto = Object.getPrototypeOf(handshake) as { readClientReply: State; dispatchCommands: State };
    const accept = (conn: ServerConnection, password: string) => {
      session.password = password;
      if (password === options.password) {
        session.steps.push('ok');
        conn.writeOk();
        (conn as unknown as { sequenceId: number }).sequenceId = 0; // every command after the handshake starts at 0
      } else {
        session.steps.push('denied');
        conn.writeError({ message: 'Access denied', code: 1045 });
        conn.close();
      }
      return proto.dispatchCommands;
    };
    const readPassword: State = (packet, conn) => {
      const data = payloadOf(packet);
      if (data.length === 1 && data[0] === (options.plugin === 'caching_sha2_password' ? 0x02 : 0x01)) {
        session.steps.push('key-request');
        conn.writePacket(raw(Buffer.concat([Buffer.from([0x01]), Buffer.from(publicKeyPem)])));
        return readPassword;
      }
      if (tls) {
        session.steps.push('clear-password');
        return accept(conn, data.subarray(0, data.indexOf(0)).toString('utf8'));
      }
      session.steps.push('rsa-password');
      let mixed: Buffer;
      try {
        mixed = privateDecrypt({ key: keys.privateKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha1' }, data);
      } catch {
        return accept(conn, '<not decryptable with the server key>');
      }
      const clear = Buffer.from(mixed.map((byte, i) => byte ^ (nonce[i % nonce.length] ?? 0)));
      return accept(conn, clear.subarray(0, clear.indexOf(0)).toString('utf8'));
    };
    const readToken: State = (packet, conn) => {
      const token = payloadOf(packet);
      const stage1 = sha256(Buffer.from(options.password));
      const expected = Buffer.from(stage1.map((b, i) => b ^ (sha256(Buffer.concat([sha256(stage1), nonce]))[i] ?? 0)));
      session.steps.push(token.equals(expected) ? 'token' : 'bad-token');
      if (options.fastAuth) {
        conn.writePacket(raw(Buffer.from([0x01, 0x03])));
        return accept(conn, token.equals(expected) ? options.password : '<bad token>');
      }
      conn.writePacket(raw(Buffer.from([0x01, 0x04])));
      session.steps.push('full-auth');
      return readPassword;
    };
    const readReply: State = function (this: unknown, packet, conn) {
      proto.readClientReply.call(this, packet, conn); // parses the HandshakeResponse (user, flags)
      session.steps.push('switch');
      conn.writePacket(raw(Buffer.concat([Buffer.from([0xfe]), Buffer.from(`${options.plugin}\0`), nonce, Buffer.from([0])])));
      return options.plugin === 'caching_sha2_password' ? readToken : readPassword;
    };
    handshake.next = readReply;
  });
  await new Promise<void>((resolve) =>
    (server as unknown as { _server: { listen(port: number, host: string, cb: () => void): void } })._server.listen(0, '127.0.0.1', () => resolve()),
  );
  const port = (server as unknown as { _server: { address(): AddressInfo } })._server.address().port;
  return {
    port,
    publicKeyPem,
    sessions,
    /** Everything the client sent on connection `i`, as one buffer. */
    bytes: (i: number) => Buffer.concat(sessions[i]?.received ?? []),
    close: () => new Promise<void>((resolve) => (server as unknown as { close(cb: () => void): void }).close(() => resolve())),
  };
}
