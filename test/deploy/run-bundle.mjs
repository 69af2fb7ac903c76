// Runs one Lambda invocation of a packaged handler bundle, as the Node.js runtime would: imports the
// bundle's .mjs, calls the export with the event and a context, writes {result} or {error} to a file
// and exits (Lambda freezes the process; open sockets must not keep this one alive).
// Usage: node run-bundle.mjs <request.json> <response.json>
import { readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const [requestFile, responseFile] = process.argv.slice(2);
const request = JSON.parse(readFileSync(requestFile, 'utf8'));
const started = Date.now();
const context = {
  functionName: request.functionName,
  functionVersion: '$LATEST',
  invokedFunctionArn: request.functionArn,
  memoryLimitInMB: String(request.memoryMb),
  awsRequestId: request.requestId,
  getRemainingTimeInMillis: () => request.timeoutSeconds * 1000 - (Date.now() - started),
};
try {
  const module = await import(pathToFileURL(request.file).href);
  const result = await module[request.export](request.event, context);
  writeFileSync(responseFile, JSON.stringify({ result: result ?? null }));
} catch (error) {
  writeFileSync(responseFile, JSON.stringify({ error: { name: error?.name, message: error?.message, code: error?.code } }));
}
process.exit(0);
