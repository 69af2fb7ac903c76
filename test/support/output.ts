import { vi } from 'vitest';

/**
 * Runs `fn` with what it prints (Powertools' JSON logs, EMF metric documents) captured instead of
 * shown, and returns its result with the printed JSON documents, for the test to assert on.
 */
export async function printed<T>(fn: () => Promise<T>): Promise<{ result: T; documents: Record<string, unknown>[] }> {
  const text: string[] = [];
  const capture = (chunk: string | Uint8Array) => {
    text.push(String(chunk));
    return true;
  };
  const spies = [
    vi.spyOn(process.stdout, 'write').mockImplementation(capture),
    vi.spyOn(process.stderr, 'write').mockImplementation(capture),
    vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => void text.push(`${args.map(String).join(' ')}\n`)),
  ];
  try {
    const result = await fn();
    const documents = text
      .join('')
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    return { result, documents };
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
}

/** The EMF document that carries metric `name`, if any. */
export function metric(documents: Record<string, unknown>[], name: string): Record<string, unknown> | undefined {
  return documents.find((d) =>
    (d._aws as { CloudWatchMetrics?: { Metrics: { Name: string }[] }[] } | undefined)?.CloudWatchMetrics?.[0]?.Metrics.some((m) => m.Name === name),
  );
}

/** The log documents with `message`. */
export function logs(documents: Record<string, unknown>[], message: string): Record<string, unknown>[] {
  return documents.filter((d) => d.message === message);
}
