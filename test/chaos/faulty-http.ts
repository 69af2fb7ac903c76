import { Readable } from 'node:stream';
import { NodeHttpHandler } from '@smithy/node-http-handler';

type HttpRequest = Parameters<NodeHttpHandler['handle']>[0];

/**
 * An SDK request handler that injects failures at the HTTP layer: a 503 before the request is
 * sent, or a lost response after it was applied (the nastiest case for conditional writes).
 */
export class FaultyHttpHandler {
  readonly inner = new NodeHttpHandler();
  injected = { http503: 0, lostResponse: 0 };
  enabled = false;

  constructor(
    private readonly random: () => number,
    private readonly probability: number,
  ) {}

  async handle(request: HttpRequest, options?: Parameters<NodeHttpHandler['handle']>[1]) {
    const roll = this.enabled ? this.random() : 1;
    if (roll < this.probability / 2) {
      this.injected.http503++;
      return {
        response: {
          statusCode: 503,
          reason: 'Service Unavailable',
          headers: { 'content-type': 'application/json' },
          body: Readable.from(['{"__type":"ServiceUnavailable","message":"injected"}']),
        },
      };
    }
    const result = await this.inner.handle(request, options);
    if (roll < this.probability) {
      this.injected.lostResponse++;
      (result.response.body as Readable | undefined)?.destroy?.();
      throw Object.assign(new Error('socket hang up (injected after the request was applied)'), { code: 'ECONNRESET' });
    }
    return result;
  }

  updateHttpClientConfig(...args: Parameters<NodeHttpHandler['updateHttpClientConfig']>) {
    this.inner.updateHttpClientConfig(...args);
  }

  httpHandlerConfigs() {
    return this.inner.httpHandlerConfigs();
  }

  destroy() {
    this.inner.destroy();
  }
}
