import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { createClients, initResources } from '../../lib/aws.ts';
import { run } from '../../lib/cli/main.ts';
import { loadConfig } from '../../lib/config/config.ts';
import { cliEnv, sluice } from '../support/cli.ts';
import { testSource } from '../support/source.ts';

describe('sluice CLI', () => {
  it('init, doctor, capture --once and status work against the local stack', async () => {
    await using source = await testSource('cli');
    const env = cliEnv(source);
    await source.sql('CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(10))');

    expect((await sluice(['init'], env)).stdout).toMatch(/state table sluice-state ready; bucket sluice-local exists/);
    const doctor = await sluice(['doctor'], env);
    expect(doctor.code).toBe(0);
    expect(doctor.stdout.match(/^ok /gm)).toHaveLength(3);

    expect((await sluice(['capture', '--once'], env)).stdout).toMatch(/captured 0 events/);
    await source.sql("INSERT INTO a VALUES (1,'x'),(2,'y')");
    const capture = await sluice(['capture', '--once'], env);
    expect(capture.stdout).toMatch(/captured 2 events in 1 transactions, 1 commits.*\(caught up\)/);

    const status = JSON.parse((await sluice(['status', '--json'], env)).stdout);
    // Commit 1 saved the schema catalog the source started with; commit 2 the two rows.
    expect(status).toMatchObject({ source: source.db, commitSeq: 2, positionOnServer: true, stored: (await source.state())?.position });
    expect(status.lease).toBeUndefined();
    // Other test files share the binlog, so lag is not 0 here; but writing without capturing must grow it.
    await source.sql("INSERT INTO a VALUES (3, REPEAT('z', 10))");
    const later = JSON.parse((await sluice(['status', '--json'], env)).stdout);
    expect(later.lagBytes).toBeGreaterThan(status.lagBytes);
    expect((await sluice(['status'], env)).stdout).toMatch(/lag\s+\d+ bytes of binlog/);
  });

  it('runs in-process on the environment it is given: --once stops when caught up, the clients reach the stack from that environment', async () => {
    await using source = await testSource('cliinproc');
    await source.sql('CREATE TABLE a (id INT PRIMARY KEY)');
    await source.capture();
    await source.sql('INSERT INTO a VALUES (1), (2), (3)');
    const stdout: string[] = [];
    const io = { env: cliEnv(source), stdout: { write: (text: string) => stdout.push(text) }, stderr: { write: () => true } };
    // Only the environment handed to the command points at the stack, not process.env.
    const aws = ['AWS_ENDPOINT_URL_S3', 'AWS_ENDPOINT_URL_DYNAMODB', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_REGION'];
    const saved = aws.map((name) => [name, process.env[name]] as const);
    for (const name of aws) delete process.env[name];
    try {
      const started = Date.now();
      expect(await run(['capture', '--once', '--seconds', '60'], io)).toBe(0);
      expect(Date.now() - started).toBeLessThan(30_000); // without --once it would read for ~45 s
      expect(stdout.join('')).toMatch(/captured 3 events in 1 transactions, 1 commits.*\(caught up\)/);
      expect(await run(['state', 'export'], io)).toBe(0);
      expect(JSON.parse(stdout.slice(1).join(''))).toMatchObject({ source: source.db, commitSeq: 2 });
    } finally {
      for (const [name, value] of saved) if (value !== undefined) process.env[name] = value;
    }
  });

  it('snapshot shows progress and status reports it per table', async () => {
    await using source = await testSource('clisnap');
    const env = cliEnv(source, { SLUICE_SNAPSHOT_PAGE_ROWS: '300', SLUICE_SNAPSHOT_CHUNK_ROWS: '1000' });
    await source.sql('CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(10)); INSERT INTO a SELECT seq, "x" FROM seq_1_to_2500; ANALYZE TABLE a');
    const idle = await sluice(['snapshot', '--workers', '2'], env);
    expect(idle.code).toBe(0);
    expect(idle.stdout).toContain('no snapshot is pending (none has run on this source); nothing done.');
    expect(idle.stdout).toContain('sluice snapshot --all');
    expect((await sluice(['snapshot', '--all', '--tables', `${source.db}.a`], env)).stderr).toContain('give either --all or --tables, not both');
    const run = await sluice(['snapshot', '--all', '--workers', '2'], env);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/: 2500 rows in \d+ pages this run; complete/);
    expect(run.stderr).toMatch(/\[#{30}\] 100% 2,500\/[\d,]+ rows, 3\/3 chunks/);
    const status = JSON.parse((await sluice(['status', '--json'], env)).stdout);
    expect(status.snapshot).toMatchObject({ status: 'done', tables: [{ table: `${source.db}.a`, rows: 2500, chunks: 3, chunksDone: 3, etaSeconds: 0 }] });
    expect((await sluice(['status'], env)).stdout).toMatch(new RegExp(`${source.db}\\.a\\s+2,500/[\\d,]+ rows, 3/3 chunks`));
    const again = await sluice(['snapshot'], env);
    expect(again.stdout).toMatch(/no snapshot is pending \(the last one, \S+, is done\); nothing done/);
  });

  it('a killed capture blocks the source for one short lease, not its run; the next run names the holder and --wait takes over', async () => {
    await using source = await testSource('clilease');
    const env = cliEnv(source, { SLUICE_LEASE_SECONDS: '4' });
    await source.sql('CREATE TABLE a (id INT PRIMARY KEY)');
    expect((await sluice(['capture', '--once'], env)).code).toBe(0);
    const child = spawn(process.execPath, ['bin/sluice.js', 'capture', '--seconds', '120'], { env, stdio: 'ignore' });
    let lease: { owner: string; expiresAt: number } | undefined;
    for (let i = 0; i < 200 && !lease; i++) {
      lease = (await source.state())?.lease;
      if (!lease) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // Renewed past the first grant while it lives: wait for one renewal (every second), then kill it.
    const first = lease?.expiresAt ?? 0;
    for (let i = 0; i < 60 && ((await source.state())?.lease?.expiresAt ?? 0) <= first; i++) await new Promise((resolve) => setTimeout(resolve, 100));
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));
    const killed = await source.state();
    expect(killed?.lease?.expiresAt).toBeGreaterThan(first);
    expect((killed?.lease?.expiresAt ?? 0) - Date.now()).toBeLessThanOrEqual(4_000); // not the run's 120 s

    await source.sql('INSERT INTO a VALUES (1)');
    const busy = await sluice(['capture', '--once', '--no-wait'], env);
    expect(busy.code).toBe(0);
    expect(busy.stdout).toMatch(
      new RegExp(
        `another run holds the lease \\(source ${source.db} is leased by cli-[\\w-]+-${child.pid}-[0-9a-f]{8} until 20\\d\\d-[\\d-]+T[\\d:.]+Z\\); nothing done`,
      ),
    );
    expect(busy.stdout).toContain('`--wait` waits for it');
    const waited = await sluice(['capture', '--once', '--wait'], env);
    expect(waited.stderr).toMatch(/waiting for the lease: source \S+ is leased by cli-/);
    expect(waited.stdout).toMatch(/captured 1 events in 1 transactions/);
  });

  it('a snapshot chunk a killed worker holds: --no-wait names the holder and stops, --wait waits for its lease and finishes', async () => {
    await using source = await testSource('clisnapwait');
    const env = cliEnv(source, { SLUICE_SNAPSHOT_PAGE_ROWS: '500', SLUICE_SNAPSHOT_LEASE_SECONDS: '3' });
    await source.sql("CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(20)); INSERT INTO a SELECT seq, CONCAT('v', seq) FROM seq_1_to_20000");
    const child = spawn(process.execPath, ['bin/sluice.js', 'snapshot', '--all', '--workers', '1'], { env, stdio: 'ignore' });
    for (let i = 0; i < 300; i++) {
      const job = await source.clients.snapshots.latestJob(source.db);
      const chunk = job?.status === 'planned' ? await source.clients.snapshots.chunk(source.db, job.id, job.tables?.[0]?.id ?? '', 0) : undefined;
      if ((chunk?.pages ?? 0) >= 2) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));

    const left = await sluice(['snapshot', '--no-wait', '--workers', '1'], env);
    expect(left.code).toBe(1);
    expect(left.stdout).toMatch(
      new RegExp(`not finished .*; 1 chunk\\(s\\) held by other workers \\(cli-[\\w-]+-${child.pid}-0 until 20[\\d-]+T[\\d:.]+Z; \`--wait\` waits for them\\)`),
    );
    const waited = await sluice(['snapshot', '--wait', '--workers', '1'], env);
    expect(waited.stderr).toMatch(new RegExp(`waiting for 1 chunk\\(s\\) other workers hold: ${source.db}\\.a #0 by cli-[\\w-]+-${child.pid}-0 until`));
    expect(waited.stdout).toMatch(/; complete$/m);
    expect(waited.code).toBe(0);
  });

  it('init is idempotent and safe to run concurrently', async () => {
    const name = `init-${Date.now()}`;
    const config = loadConfig({ ...process.env, SLUICE_SOURCE_ID: 'x', SLUICE_STATE_TABLE: name, SLUICE_BUCKET: name });
    const clients = createClients(config);
    const results = await Promise.all([initResources(config, clients), initResources(config, clients), initResources(config, clients)]);
    expect(results).toHaveLength(3);
    expect(await initResources(config, clients)).toEqual({ bucket: 'exists' });
    expect(await clients.store.get('x')).toBeUndefined();
  });

  it('a bad setting exits non-zero naming the variable and what it accepts', async () => {
    const result = await sluice(['capture', '--once', '--startup', 'yesterday'], { ...process.env, SLUICE_SOURCE_ID: 'x', SLUICE_HOME: '/nonexistent' });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /SLUICE_STARTUP: expected initial, initial-only, latest, earliest, position:<file>:<pos>, gtid:<set> or timestamp:<ISO-8601>, got "yesterday"/,
    );
  });

  it('doctor reports a server it cannot reach, and exits non-zero', async () => {
    const result = await sluice(['doctor'], {
      ...process.env,
      SLUICE_SOURCE_ID: 'x',
      SLUICE_MYSQL_URL: 'mysql://u:secret@127.0.0.1:1/',
      SLUICE_HOME: '/nonexistent',
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/FAIL {2}MySQL mysql:\/\/u:\*\*\*@127\.0\.0\.1:1\//);
    expect(result.stdout).not.toMatch(/secret/);
  });
});
