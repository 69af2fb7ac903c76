import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/*
 * Apache Iceberg's own REST catalog server, installed on first use into the git-ignored
 * .tools/rest-catalog: `RESTCatalogServer` from the `test-fixtures` jar of
 * org.apache.iceberg:iceberg-open-api (what the apache/iceberg-rest-fixture image runs; Maven
 * Central has no `iceberg-open-api-test-fixtures-runtime` jar, and the fixtures jar exists for
 * 1.10.x and 1.11.0, not 1.12.0), with what the fixture's Gradle build puts beside it: iceberg-core
 * and its tests jar (RESTCatalogAdapter, RESTCatalogServlet), iceberg-aws for S3FileIO and its
 * bundle, Jetty 12.1 (ee10 servlet, gzip), Hadoop's client API (the fixture builds a Hadoop
 * Configuration), SQLite for the JDBC catalog. Maven resolves them from a generated pom.
 *
 * It runs over a JDBC catalog on a SQLite file with S3FileIO on the test stack's S3 emulator, bound
 * to the loopback by RestCatalogLoopback.java (the fixture's own start binds every interface).
 */

const ICEBERG = '1.11.0';
const JETTY = '12.1.5';
export const REST_PINS = [
  `org.apache.iceberg:iceberg-open-api:${ICEBERG}:test-fixtures`,
  `org.apache.iceberg:iceberg-core:${ICEBERG}`,
  `org.apache.iceberg:iceberg-core:${ICEBERG}:tests`,
  `org.apache.iceberg:iceberg-aws:${ICEBERG}`,
  `org.apache.iceberg:iceberg-aws-bundle:${ICEBERG}`,
  'org.xerial:sqlite-jdbc:3.54.1.0',
  `org.eclipse.jetty.ee10:jetty-ee10-servlet:${JETTY}`,
  `org.eclipse.jetty.compression:jetty-compression-server:${JETTY}`,
  `org.eclipse.jetty.compression:jetty-compression-gzip:${JETTY}`,
  'org.apache.hadoop:hadoop-client-api:3.4.1',
  'org.apache.hadoop:hadoop-client-runtime:3.4.1',
  'org.slf4j:slf4j-simple:2.0.17',
] as const;

const HOME = resolve('.tools/rest-catalog');
const JARS = join(HOME, 'jars');
const CLASSES = join(HOME, 'classes');
const MARKER = join(HOME, 'installed.json');

function pom(): string {
  const dependencies = REST_PINS.map((pin) => {
    const [group, artifact, version, classifier] = pin.split(':');
    return `<dependency><groupId>${group}</groupId><artifactId>${artifact}</artifactId><version>${version}</version>${classifier ? `<classifier>${classifier}</classifier>` : ''}</dependency>`;
  });
  return `<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>sluice.test</groupId><artifactId>rest-catalog</artifactId><version>1</version>
<dependencies>${dependencies.join('\n')}</dependencies></project>\n`;
}

async function step(what: string, command: string, args: string[], cwd?: string) {
  try {
    await run(command, args, { maxBuffer: 64 * 1024 * 1024, timeout: 15 * 60_000, ...(cwd ? { cwd } : {}) });
  } catch (error) {
    const e = error as { stderr?: string; stdout?: string; message: string };
    const detail = `${e.stderr ?? ''}${e.stdout ?? ''}`.trim().split('\n').slice(-15).join('\n') || e.message;
    throw new Error(
      `Installing Iceberg's REST catalog server: ${what} failed. Run by hand to see why:\n  (cd ${cwd ?? '.'} && ${command} ${args.join(' ')})\n${detail}`,
    );
  }
}

/** Installs the pinned jars unless the marker says they are there, and compiles the loopback launcher. Returns the classpath. */
export async function ensureRestCatalog(): Promise<{ classpath: string; installSeconds: number }> {
  const pins = JSON.stringify(REST_PINS);
  const started = Date.now();
  const installed = existsSync(MARKER) && readFileSync(MARKER, 'utf8') === pins;
  if (!installed) {
    rmSync(HOME, { recursive: true, force: true });
    mkdirSync(HOME, { recursive: true });
    writeFileSync(join(HOME, 'pom.xml'), pom());
    await step(
      'resolving the jars from Maven Central',
      'mvn',
      ['-q', '-B', 'dependency:copy-dependencies', '-DincludeScope=runtime', `-DoutputDirectory=${JARS}`],
      HOME,
    );
    writeFileSync(MARKER, pins);
  }
  rmSync(CLASSES, { recursive: true, force: true });
  await step('compiling the launcher', 'javac', ['-nowarn', '-cp', `${JARS}/*`, '-d', CLASSES, resolve('test/engines/RestCatalogLoopback.java')]);
  return { classpath: `${CLASSES}:${JARS}/*`, installSeconds: installed ? 0 : (Date.now() - started) / 1000 };
}

/** A free TCP port on the loopback (the kernel's pick; released before the server takes it). */
function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolvePort(address.port) : reject(new Error('no port'))));
    });
  });
}

/** The S3 the catalog's S3FileIO talks to. */
export interface S3Settings {
  readonly endpoint: string;
  readonly region: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

export interface RunningRestCatalog {
  readonly uri: string;
  /** The server's output so far (for a failure's message). */
  output(): string;
  stop(): Promise<void>;
}

/** Starts the REST catalog on a free loopback port over a fresh SQLite file in `dir`, tables under `warehouse` (s3://…). */
export async function startRestCatalog(options: { classpath: string; dir: string; warehouse: string; s3: S3Settings }): Promise<RunningRestCatalog> {
  const port = await freePort();
  mkdirSync(options.dir, { recursive: true });
  // The fixture reads its catalog properties from CATALOG_* (`__` for "-", `_` for "."), as the image does.
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? '',
    CATALOG_URI: `jdbc:sqlite:file:${join(options.dir, 'catalog.db')}`,
    CATALOG_JDBC_SCHEMA__VERSION: 'V1',
    CATALOG_WAREHOUSE: options.warehouse,
    CATALOG_IO__IMPL: 'org.apache.iceberg.aws.s3.S3FileIO',
    CATALOG_S3_ENDPOINT: options.s3.endpoint,
    CATALOG_S3_PATH__STYLE__ACCESS: 'true',
    CATALOG_S3_ACCESS__KEY__ID: options.s3.accessKeyId,
    CATALOG_S3_SECRET__ACCESS__KEY: options.s3.secretAccessKey,
    CATALOG_CLIENT_REGION: options.s3.region,
    AWS_REGION: options.s3.region,
  };
  const child: ChildProcess = spawn('java', ['-Xmx512m', '-cp', options.classpath, 'org.apache.iceberg.rest.RestCatalogLoopback', String(port)], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (d) => {
    output += d;
  });
  child.stderr?.on('data', (d) => {
    output += d;
  });
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  const uri = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
  };
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`Iceberg's REST catalog server exited (${child.exitCode}) before answering:\n${output.slice(-3000)}`);
    try {
      const response = await fetch(`${uri}/v1/config`);
      if (response.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`Iceberg's REST catalog server did not answer ${uri}/v1/config within 120 s:\n${output.slice(-3000)}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return { uri, output: () => output, stop };
}
