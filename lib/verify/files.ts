import { createWriteStream } from 'node:fs';

/** Writes lines to a file with back-pressure. */
export function lineFile(path: string) {
  const stream = createWriteStream(path);
  return {
    async write(line: string) {
      if (!stream.write(line)) await new Promise<void>((resolve) => stream.once('drain', () => resolve()));
    },
    close: () => new Promise<void>((resolve, reject) => stream.end((error?: Error | null) => (error ? reject(error) : resolve()))),
  };
}
