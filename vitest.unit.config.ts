import { defineConfig } from 'vitest/config';

// `npm run test:unit`: the tests of pure logic (test/unit/), without the local stack: no server,
// DynamoDB Local or S3 emulator is started, so the project runs in seconds. `npm test` runs them
// too, with everything else.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts'],
    testTimeout: 10_000,
    maxWorkers: 2,
  },
});
