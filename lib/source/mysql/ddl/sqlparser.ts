/**
 * sqlparser-rs (WASM, `@guanmingchiu/sqlparser-ts`), loaded on first use: the WASM module is
 * 3.5 MB and takes ~100 ms to compile, and most runs never see a DDL statement.
 *
 * Packaging: the package reads `../wasm/sqlparser_rs_wasm_bg.wasm` relative to its own module
 * file, so a bundle must keep the package external (shipped in node_modules) or copy that file.
 */
type ParseFn = (sql: string) => unknown[];

let loading: Promise<ParseFn> | undefined;

async function load(): Promise<ParseFn> {
  const parser = await import('@guanmingchiu/sqlparser-ts');
  await parser.init();
  return (sql) => parser.parse(sql, 'mysql') as unknown[];
}

/** The parser, loaded once per process. */
export function sqlParser(): Promise<ParseFn> {
  loading ??= load().catch((error: unknown) => {
    loading = undefined;
    throw error;
  });
  return loading;
}
