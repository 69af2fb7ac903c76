import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/*
 * The engines' tooling, installed on first use into the git-ignored .tools/engines: a Python venv
 * (Spark, PyIceberg, DuckDB with its extensions as wheels: nothing is downloaded at run time) and
 * the jars Spark needs for Iceberg (the runtime, the AWS bundle for S3FileIO, SQLite for the JDBC
 * catalog) and Trino's server (its Maven tarball, about 800 MB). Pinned exactly; a marker holds the pins, and a change of pins reinstalls.
 *
 * Spark 4.1 is the newest line for which Maven Central has iceberg-spark-runtime at the newest
 * Iceberg (1.12.0). The DuckDB extension wheels must be the DuckDB wheel's version.
 */

export const PINS = {
  python: [
    'pyspark==4.1.4',
    'pyiceberg[pyarrow]==0.12.0',
    'pyarrow==26.0.1',
    'duckdb==1.5.5',
    'duckdb-extension-iceberg==1.5.5',
    'duckdb-extension-httpfs==1.5.5',
    'duckdb-extension-avro==1.5.5',
    // DuckDB's Python client needs it to return TIMESTAMPTZ values.
    'pytz==2025.2',
  ],
  maven: ['org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0', 'org.apache.iceberg:iceberg-aws-bundle:1.12.0', 'org.xerial:sqlite-jdbc:3.54.1.0'],
  // The newest trino-server whose tarball Maven Central serves here (477 and later: not found).
  trino: 'io.trino:trino-server:476:tar.gz',
} as const;

/** Trino 476 needs Java 24 or later; these machines have Temurin 25 beside the default JDK 17. */
const JAVA_25 = process.env.SLUICE_ENGINES_JAVA_HOME ?? '/usr/lib/jvm/temurin-25-jdk-amd64';

/** Where the tooling lives, and the paths the readers need. */
export const TOOLS = resolve('.tools/engines');
const VENV = join(TOOLS, 'venv');
const JARS = join(TOOLS, 'jars');
const MARKER = join(TOOLS, 'installed.json');
export const PYTHON = join(VENV, 'bin', 'python');
const JUDGE_CLASSES = join(TOOLS, 'judge');
const TRINO = join(TOOLS, 'trino-server-476');

export interface Tools {
  readonly python: string;
  /** The jars for Spark's driver classpath: Iceberg's, and the compiled judge. */
  readonly classpath: string[];
  /** Trino's home and the Java it runs on. */
  readonly trino: { readonly home: string; readonly java: string };
  /** Seconds the install took (0: already installed). */
  readonly installSeconds: number;
}

/** A step of the install; a failure names the registry and the command to run by hand. */
async function step(registry: string, command: string, args: string[]) {
  try {
    await run(command, args, { maxBuffer: 64 * 1024 * 1024, timeout: 15 * 60_000 });
  } catch (error) {
    const e = error as { stderr?: string; stdout?: string; message: string };
    const detail = `${e.stderr ?? ''}${e.stdout ?? ''}`.trim().split('\n').slice(-15).join('\n') || e.message;
    throw new Error(
      `Installing the Iceberg engines from ${registry} failed. The engines suite needs ${registry} on first use; run by hand to see why:\n  ${command} ${args.join(' ')}\n${detail}`,
    );
  }
}

/** Installs the pinned tooling unless the marker says it is there; the seconds it took (0: already there). */
async function install(): Promise<number> {
  const pins = JSON.stringify(PINS);
  const started = Date.now();
  const installed = existsSync(MARKER) && readFileSync(MARKER, 'utf8') === pins && existsSync(PYTHON) && existsSync(join(TRINO, 'bin', 'launcher'));
  if (!installed) {
    rmSync(TOOLS, { recursive: true, force: true });
    mkdirSync(JARS, { recursive: true });
    await step('the local Python', 'python3', ['-m', 'venv', VENV]);
    await step('PyPI', join(VENV, 'bin', 'pip'), ['install', '--quiet', '--disable-pip-version-check', ...PINS.python]);
    for (const artifact of PINS.maven)
      await step('Maven Central', 'mvn', ['-q', '-B', 'dependency:copy', `-Dartifact=${artifact}`, `-DoutputDirectory=${JARS}`]);
    await step('Maven Central', 'mvn', ['-q', '-B', 'dependency:copy', `-Dartifact=${PINS.trino}`, `-DoutputDirectory=${TOOLS}`]);
    const tarball = join(TOOLS, 'trino-server-476.tar.gz');
    await step('the downloaded Trino tarball', 'tar', ['-xzf', tarball, '-C', TOOLS]);
    rmSync(tarball);
    // Only the Iceberg connector is used; fewer plugins start faster.
    for (const plugin of readdirSync(join(TRINO, 'plugin'))) if (plugin !== 'iceberg') rmSync(join(TRINO, 'plugin', plugin), { recursive: true });
    writeFileSync(MARKER, pins);
  }
  return installed ? 0 : (Date.now() - started) / 1000;
}

const installedJars = () =>
  readdirSync(JARS)
    .filter((f) => f.endsWith('.jar'))
    .map((f) => join(JARS, f));

/** The Python and the jars Spark needs for Iceberg, installed on first use (no judge: bench:iceberg's Spark read). */
export async function sparkTools(): Promise<{ python: string; jars: string[] }> {
  await install();
  return { python: PYTHON, jars: installedJars() };
}

/** Installs the pinned tooling unless the marker says it is there; compiles the judge. */
export async function ensureTools(): Promise<Tools> {
  const installSeconds = await install();
  const jars = installedJars();
  rmSync(JUDGE_CLASSES, { recursive: true, force: true });
  await step('the local JDK', 'javac', ['-nowarn', '-cp', jars.join(':'), '-d', JUDGE_CLASSES, resolve('test/engines/SluiceJudge.java')]);
  if (!existsSync(join(JAVA_25, 'bin', 'java')))
    throw new Error(`Trino 476 needs Java 24 or later, looked for at ${JAVA_25}: install a JDK 25 there or set SLUICE_ENGINES_JAVA_HOME to one`);
  return { python: PYTHON, classpath: [JUDGE_CLASSES, ...jars], trino: { home: TRINO, java: JAVA_25 }, installSeconds };
}
