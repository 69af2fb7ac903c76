/**
 * Statements of an SQL script as the mysql client sends them: split at the delimiter (`;`, or what
 * a `DELIMITER` line sets) outside strings, quoted names and comments; comments stay in the text
 * (the server, and sluice's lexer, read executable ones).
 */
export function splitStatements(script: string): string[] {
  const out: string[] = [];
  let delimiter = ';';
  let current = '';
  let i = 0;
  const flush = () => {
    if (current.trim()) out.push(current.trim());
    current = '';
  };
  while (i < script.length) {
    const atLineStart = current.trim() === '';
    if (atLineStart) {
      const line = /^\s*DELIMITER\s+(\S+)[^\n]*(?:\n|$)/i.exec(script.slice(i));
      if (line) {
        delimiter = line[1] as string;
        i += line[0].length;
        current = '';
        continue;
      }
    }
    const c = script[i] as string;
    if (script.startsWith(delimiter, i)) {
      flush();
      i += delimiter.length;
      continue;
    }
    if (c === "'" || c === '"' || c === '`') {
      let j = i + 1;
      while (j < script.length && script[j] !== c) j += script[j] === '\\' && c !== '`' ? 2 : 1;
      current += script.slice(i, j + 1);
      i = j + 1;
      continue;
    }
    if (c === '#' || (c === '-' && script[i + 1] === '-' && /\s/.test(script[i + 2] ?? ' '))) {
      const end = script.indexOf('\n', i);
      i = end < 0 ? script.length : end + 1;
      current += '\n';
      continue;
    }
    if (c === '/' && script[i + 1] === '*') {
      const end = script.indexOf('*/', i + 2);
      const stop = end < 0 ? script.length : end + 2;
      current += script.slice(i, stop);
      i = stop;
      continue;
    }
    current += c;
    i++;
  }
  flush();
  return out;
}
