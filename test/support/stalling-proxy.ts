import { createConnection, createServer, type Socket } from 'node:net';

/**
 * A TCP proxy to MariaDB that holds back what the server sends for `stallMs` once a client asks for
 * the binlog (COM_BINLOG_DUMP, command 0x12): a stream that pauses, as on a loaded machine.
 */
export async function stallingProxy(target: URL, stallMs: number) {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = createConnection(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    let stallUntil = 0;
    client.on('data', (data) => {
      if (data.length > 4 && data[4] === 0x12) stallUntil = Date.now() + stallMs;
      upstream.write(data);
    });
    upstream.on('data', (data) => {
      const wait = stallUntil - Date.now();
      if (wait <= 0) return void client.write(data);
      upstream.pause();
      setTimeout(() => {
        client.write(data);
        upstream.resume();
      }, wait);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(target);
  url.port = String((server.address() as { port: number }).port);
  return {
    url: url.toString(),
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * A TCP proxy to the server `target` names, which can be pointed at another one (`switchTo`): an
 * endpoint that stays the same while the server behind it changes (a DNS name moved in a failover,
 * RDS Proxy, a Blue/Green switchover). Switching drops the open connections, as such a move does.
 */
export async function switchingProxy(target: URL) {
  let upstreamUrl = target;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = createConnection(Number(upstreamUrl.port), upstreamUrl.hostname);
    sockets.add(client).add(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(target);
  url.port = String((server.address() as { port: number }).port);
  return {
    url: url.toString(),
    switchTo(next: URL) {
      upstreamUrl = next;
      for (const socket of sockets) socket.destroy();
    },
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * A TCP proxy to the server `target` names whose every reply arrives `latencyMs` late (in order):
 * a slow link, as from a Lambda function to a database in another zone or region.
 */
export async function slowProxy(target: URL, latencyMs: number) {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = createConnection(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    client.pipe(upstream);
    upstream.on('data', (data) => setTimeout(() => client.writable && client.write(data), latencyMs));
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('close', end).on('error', end);
    upstream.on('close', end).on('error', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(target);
  url.port = String((server.address() as { port: number }).port);
  return {
    url: url.toString(),
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
