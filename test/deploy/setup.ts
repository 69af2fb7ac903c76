import { rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startMariaDb } from '../../lib/local/mariadb.ts';
import { stopProcess } from '../../lib/local/process.ts';
import { ensureMoto, startMoto } from './emulator.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    deployEnv: {
      /** moto's endpoint (every AWS API), as `sls deploy` is given it. */
      endpoint: string;
      /** The MariaDB the deployed functions capture: their URL, and an admin URL for the test's writes. */
      mysqlUrl: string;
      mysqlAdminUrl: string;
      /** Where the suite keeps its data (git-ignored). */
      home: string;
      installSeconds: number;
    };
  }
}

/**
 * `npm run test:deploy`: installs the emulator on first use, starts it and a private MariaDB under
 * .sluice/deploy, and stops both after the run (they hold no state worth keeping).
 */
export default async function setup(project: TestProject) {
  const home = resolve('.sluice', 'deploy');
  // A fresh MariaDB and log each run: the deployed poller captures every database on the server.
  rmSync(home, { recursive: true, force: true });
  const installSeconds = await ensureMoto();
  const lines: string[] = [];
  const [moto, mariadb] = await Promise.allSettled([startMoto(home), startMariaDb(join(home, 'mariadb'), (line) => lines.push(line))]);
  const stop = () => Promise.all([moto, mariadb].map((r) => (r.status === 'fulfilled' ? stopProcess(r.value.pid) : undefined)));
  if (moto.status === 'rejected' || mariadb.status === 'rejected') {
    await stop();
    for (const line of lines) console.error(`[mariadb] ${line}`);
    throw moto.status === 'rejected' ? moto.reason : (mariadb as PromiseRejectedResult).reason;
  }
  project.provide('deployEnv', { endpoint: moto.value.endpoint, mysqlUrl: mariadb.value.url, mysqlAdminUrl: mariadb.value.adminUrl, home, installSeconds });
  return async () => {
    await stop();
  };
}
