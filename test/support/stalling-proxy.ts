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
