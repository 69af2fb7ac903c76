import { inject } from 'vitest';

// Point the AWS SDK (which reads AWS_ENDPOINT_URL_* itself) and sluice at the test stack.
Object.assign(process.env, inject('stackEnv'));
// A passing run is quiet: the SDK warns once per worker that it will drop Node 20 (the machine's).
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
