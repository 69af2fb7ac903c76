/**
 * Runs the poller handler once in a process of its own, as Lambda would: configuration from the
 * environment, the Powertools logger at its default level (INFO), and a failed invocation printed
 * the way the Lambda runtime prints it. Tests read everything the process writes.
 */
import type { Context } from 'aws-lambda';

const context = { functionName: 'sluice-poller', awsRequestId: 'req-secrets', getRemainingTimeInMillis: () => Number(process.env.TEST_BUDGET_MS ?? 8000) };
try {
  const { handler } = await import('../../functions/poller.ts');
  await handler({}, context as unknown as Context);
} catch (error) {
  const e = error as Error;
  process.stderr.write(`ERROR\tInvoke Error\t${JSON.stringify({ errorType: e.name, errorMessage: e.message, stack: e.stack?.split('\n') })}\n`);
  process.exitCode = 1;
}
