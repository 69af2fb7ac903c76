#!/usr/bin/env node
// Runs the TypeScript sources directly (tsx), so the CLI and the Lambda bundles share one codebase.
import { register } from 'tsx/esm/api';

register();
await import('../lib/cli/main.ts');
