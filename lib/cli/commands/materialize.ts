import type { Command } from 'commander';
import { formatTableRef, parseTableRef } from '../../core/table-ref.ts';
import { ErrorCode, SluiceError } from '../../errors.ts';
import type { Cli } from '../cli.ts';

/** `sluice materialize`: a table's current rows by the materialization rule. */
export function materializeCommand(program: Command, cli: Cli): void {
  program
    .command('materialize')
    .description("write a table's current rows from the output, by the materialization rule (docs/FORMAT.md), as Parquet or JSON Lines")
    .requiredOption('--table <db.table>', 'the table, backtick-quoted where needed (`a.b`.`c/d`)')
    .option('--out <file>', 'a .parquet or .jsonl file')
    .option('--sql', 'print the DuckDB statements it runs for the table (load the events, the rule, the export)')
    .action(async (options: { table: string; out?: string; sql?: boolean }) => {
      const { materialize } = await import('../../materialize/write.ts');
      const table = parseTableRef(options.table, '--table');
      if (!options.out && !options.sql) throw new SluiceError(ErrorCode.MATERIALIZE_FORMAT, 'give --out <file.parquet|file.jsonl>, --sql, or both');
      const { config, clients } = await cli.configure(program.opts());
      const result = await materialize({ config, s3: clients.s3 }, table, { out: options.out });
      const name = formatTableRef(table);
      if (options.sql)
        cli.out(
          `-- ${name}: the statements sluice materialize runs (DuckDB), reading the table's objects in place (INSTALL httpfs; LOAD httpfs; and S3 credentials)\n${result.printable.join(';\n\n')};`,
        );
      if (result.gone)
        cli.out(`${name} no longer exists in the captured set (dropped, renamed away or excluded): 0 rows${options.out ? ` written to ${options.out}` : ''}`);
      else if (options.out) cli.out(`${result.rows} rows of ${name} written to ${options.out}`);
    });
}
