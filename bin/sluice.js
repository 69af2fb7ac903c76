#!/usr/bin/env node
// Runs the TypeScript sources directly (tsx), so the CLI and the Lambda bundles share one codebase.
import { register } from 'tsx/esm/api';

register();
const { run } = await import('../lib/cli/main.ts');
process.exitCode = await run(process.argv.slice(2), { env: process.env, stdout: process.stdout, stderr: process.stderr });
