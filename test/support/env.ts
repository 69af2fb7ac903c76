import { inject } from 'vitest';

// Point the AWS SDK (which reads AWS_ENDPOINT_URL_* itself) and sluice at the test stack.
Object.assign(process.env, inject('stackEnv'));
