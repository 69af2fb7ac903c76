import { defineConfig } from 'vitest/config';

// `npm run test:deploy`: `sls deploy --stage local` into an AWS emulator (moto's server mode,
// installed on first use into .tools/deploy), the deployed resources checked through its APIs, the
// deployed function bundles run against them, then `sls remove` (test/deploy/).
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

export default defineConfig({
  test: {
    include: ['test/deploy/**/*.test.ts'],
    globalSetup: ['test/deploy/setup.ts'],
    testTimeout: 300_000,
    hookTimeout: 600_000,
    fileParallelism: false,
    maxWorkers: 1,
  },
});
