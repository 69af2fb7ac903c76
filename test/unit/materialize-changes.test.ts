import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChangeStep, changeSet, stepLines } from '../../lib/materialize/changes.ts';
import { loadEventsSql } from '../../lib/materialize/events.ts';
import { TableHistory } from '../../lib/materialize/history.ts';
import { materializeRule } from '../../lib/materialize/rule.ts';
import type { SchemaVersion } from '../../lib/schema/version.ts';
import { members, project } from '../support/rule-reference.ts';
import { eventFiles, random, workload } from '../support/rule-workload.ts';

let duck: DuckDBConnection;
let work: string;
beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'sluice-changes-'));
  duck = await (await DuckDBInstance.create(':memory:', { threads: '1' })).connect();
});
afterAll(() => {
  duck.closeSync();
  rmSync(work, { recursive: true, force: true });
});

/** A merged table as a merge would keep it: rows by identity (keyed) or counted (keyless), in one version. */
class MergedTable {
  version: number | null = null;
  keyed = new Map<string, string>();
  counted = new Map<string, number>();

  constructor(private readonly versions: Map<number, SchemaVersion>) {}

  private key(): readonly string[] | null {
    return this.version === null ? null : (this.versions.get(this.version)?.key ?? null);
  }

  private id(row: string, key: readonly string[]): string {
    const values = new Map(members(row));
    return `{${key.map((k) => `${JSON.stringify(k)}:${values.get(k)}`).join(',')}}`;
  }

  async apply(step: ChangeStep): Promise<void> {
    if (step.kind === 'reset') {
      this.keyed.clear();
      this.counted.clear();
      this.version = step.version.version;
    } else if (step.kind === 'schema') {
      const rows = this.rows().map((r) => (this.version === null ? r : project(r, this.version, step.to.version, this.versions)));
      this.version = step.to.version;
      this.keyed.clear();
      this.counted.clear();
      const key = this.key();
      for (const row of rows) {
        if (key) this.keyed.set(this.id(row, key), row);
        else this.counted.set(row, (this.counted.get(row) ?? 0) + 1);
      }
    } else {
      // As a consumer such as the Iceberg layer gets it: deletes, then upserts.
      const { upserts, deletes } = stepLines(duck, step);
      const key = this.key();
      for await (const line of deletes) {
        if (key) this.keyed.delete(line);
        else if ((this.counted.get(line) ?? 0) > 1) this.counted.set(line, (this.counted.get(line) ?? 0) - 1);
        else this.counted.delete(line);
      }
      for await (const row of upserts) {
        if (key) this.keyed.set(this.id(row, key), row);
        else this.counted.set(row, (this.counted.get(row) ?? 0) + 1);
      }
    }
  }

  rows(): string[] {
    return [...this.keyed.values(), ...[...this.counted].flatMap(([row, n]) => Array.from({ length: n }, () => row))];
  }
}

const read = async (sql: string) => (await duck.runAndReadAll(sql)).getRowObjects();

describe('the rule, incrementally (the Iceberg merge)', () => {
  it('applying change sets over random splits of the feed equals materializing it whole', async () => {
    let splits = 0;
    let schemaSteps = 0;
    let rekeys = 0;
    for (let seed = 7000; seed < 7016; seed++) {
      const w = await workload(seed, 120, seed % 2 ? 1 : 0.2);
      const history = new TableHistory({ db: w.db, table: w.table }, [...w.versions.values()], true);
      const byVersion = new Map([...w.versions]);
      const ordered = w.lines.map((line, i) => ({ line, seq: w.events[i]?.seq ?? '' })).sort((a, b) => (a.seq < b.seq ? -1 : 1));

      await duck.run(loadEventsSql('ev', await eventFiles(w.lines, join(work, `all${seed}`), 3, seed)));
      const whole = await materializeRule(duck, history, 'ev', 'm');
      const expected = (await read(`SELECT row, n FROM ${whole.state}`)).flatMap((r) => Array.from({ length: Number(r.n) }, () => String(r.row)));

      const rnd = random(seed);
      const cuts = [...new Set(Array.from({ length: 1 + rnd.int(8) }, () => rnd.int(ordered.length)))].sort((a, b) => a - b);
      const merged = new MergedTable(byVersion);
      let gone = false;
      for (const [i, from] of [0, ...cuts].entries()) {
        const chunk = ordered.slice(from, cuts[i] ?? ordered.length).map((e) => e.line);
        if (!chunk.length) continue;
        await duck.run(loadEventsSql('ev', await eventFiles(chunk, join(work, `c${seed}-${i}`), 2, seed + i)));
        const changes = await changeSet(duck, history, 'ev', { version: merged.version }, 'x');
        for (const step of changes.steps) {
          await merged.apply(step);
          if (step.kind === 'schema') schemaSteps++;
          if (step.kind === 'schema' && step.rekey) rekeys++;
        }
        gone = changes.gone || (gone && !changes.plan.reset);
        expect(merged.version, `seed ${seed}, split ${i}`).toBe(changes.version.version);
        splits++;
      }
      expect([...merged.rows()].sort(), `seed ${seed}: cuts ${cuts}`).toEqual([...expected].sort());
      expect(gone, `seed ${seed}`).toBe(whole.gone);
    }
    expect(splits).toBeGreaterThan(40);
    expect(schemaSteps).toBeGreaterThan(20);
    expect(rekeys).toBeGreaterThan(2);
  });
});
