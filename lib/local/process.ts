import { spawn } from 'node:child_process';
import { openSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer, Socket } from 'node:net';
import { LocalStackError } from '../errors.ts';

/** Asks the kernel for a free loopback port. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new LocalStackError('the kernel gave no free loopback port')),
      );
    });
  });
}

/** Starts a long-lived detached process logging to `logFile`; returns its pid. */
export function spawnDetached(command: string, args: string[], logFile: string, env: NodeJS.ProcessEnv = process.env, cwd?: string): number {
  const log = openSync(logFile, 'a');
  const child = spawn(command, args, { detached: true, stdio: ['ignore', log, log], env, cwd });
  child.unref();
  if (child.pid === undefined) throw new LocalStackError(`could not start ${command}`);
  return child.pid;
}

export function isAlive(pid: number | undefined): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Stops a process we started: SIGTERM, then SIGKILL after `graceMs`. */
export async function stopProcess(pid: number | undefined, graceMs = 10_000): Promise<void> {
  if (!isAlive(pid)) return;
  process.kill(pid as number, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (isAlive(pid) && Date.now() < deadline) await sleep(50);
  if (isAlive(pid)) process.kill(pid as number, 'SIGKILL');
}

export function portOpen(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const socket = new Socket();
    socket.setTimeout(500);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => resolve(false));
    socket.connect(port, '127.0.0.1');
  });
}

/** Polls `check` until it returns true; on time-out throws with the tail of `logFile`. */
export async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number, logFile?: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await sleep(100);
  }
  const tail = logFile ? (await readFile(logFile, 'utf8').catch(() => '')).split('\n').slice(-15).join('\n') : '';
  throw new LocalStackError(`${what} did not become ready within ${timeoutMs} ms${tail ? `; last log lines:\n${tail}` : ''}`);
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
