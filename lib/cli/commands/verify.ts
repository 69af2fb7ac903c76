import type { Command } from 'commander';
import { formatPosition } from '../../core/position.ts';
import { parseTableRefs } from '../../core/table-ref.ts';
import type { Cli } from '../cli.ts';

/** `sluice verify`: the output against the live tables. */
export function verifyCommand(program: Command, cli: Cli): void {
  program
    .command('verify')
    .description('compare the output in S3 with the live tables (safe on a running source); exit 1 on any difference')
    .option('--tables <list>', 'comma-separated db.table names, backtick-quoted where needed (`a.b`.`c/d`) (default: every included table)')
    .option('--json', 'machine-readable output')
    .action(async (options: { tables?: string; json?: boolean }) => {
      const { verify } = await import('../../verify/verify.ts');
      const tables = options.tables === undefined ? undefined : parseTableRefs(options.tables, '--tables');
      const { config, clients } = await cli.configure(program.opts());
      const verdict = await verify({ config, s3: clients.s3, store: clients.store, snapshots: clients.snapshots }, { tables });
      if (options.json) cli.out(JSON.stringify(verdict, null, 2));
      else {
        cli.out(`MySQL read at ${formatPosition(verdict.mysqlPosition)}; output at ${verdict.outputPosition ? formatPosition(verdict.outputPosition) : '-'}`);
        for (const t of verdict.tables) {
          if (t.status === 'changing') {
            cli.out(`skip  ${t.table}: changing (${t.note})`);
            continue;
          }
          const bad = t.missing + t.extra + t.differing + t.missingColumns.length + t.extraColumns.length + (t.columnOrderDiffers ? 1 : 0);
          const what = t.keyed ? 'rows compared' : 'rows compared as a multiset (no key)';
          cli.out(
            `${bad ? 'DIFF' : 'ok  '}  ${t.table}: ${t.compared} ${what}, ${t.skipped} changing ${t.keyed ? 'keys' : 'rows'} skipped; ${t.missing} missing, ${t.extra} extra, ${t.differing} differing`,
          );
          if (t.missingColumns.length) cli.out(`        columns missing in S3: ${t.missingColumns.join(', ')}`);
          if (t.extraColumns.length) cli.out(`        columns in S3 but not in MySQL: ${t.extraColumns.join(', ')}`);
          if (t.columnOrderDiffers) cli.out('        the columns are in another order in S3');
          if (t.note) cli.out(`        note: ${t.note}`);
          for (const k of t.examples.missing) cli.out(`        missing in S3: ${k}`);
          for (const k of t.examples.extra) cli.out(`        extra in S3:   ${k}`);
          for (const d of t.examples.differing) cli.out(`        differs ${d.key} in ${d.columns.join(', ')}: mysql ${d.mysql} s3 ${d.output}`);
        }
        for (const o of verdict.orphans)
          cli.out(`DIFF  ${o.table}: ${o.rows} rows in S3, but the table ${o.reason === 'does not exist' ? 'no longer exists' : 'is no longer included'}`);
        for (const t of verdict.changing) cli.out(`skip  ${t}: only in S3, changing (a DDL between the output position and the MySQL read)`);
      }
      if (!verdict.ok) cli.fail();
    });
}
