import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Every metric name the functions' code emits (`addMetric('Name', …)` in lib/ and functions/). */
export function emittedMetricNames(root = process.cwd()): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts')) for (const m of readFileSync(join(root, path), 'utf8').matchAll(/addMetric\('(\w+)'/g)) names.add(m[1] as string);
    }
  };
  walk('lib');
  walk('functions');
  return names;
}

/** The `sluice` metric names a dashboard body graphs: metric rows and SEARCH expressions. */
export function graphedMetricNames(body: string): Set<string> {
  const names = new Set<string>();
  const { widgets } = JSON.parse(body) as { widgets: { properties: { metrics: unknown[][] } }[] };
  for (const widget of widgets)
    for (const row of widget.properties.metrics) {
      if (row[0] === 'sluice') names.add(String(row[1]));
      const expression = (row[0] as { expression?: string } | undefined)?.expression ?? '';
      for (const m of expression.matchAll(/\{sluice,[^}]*\} MetricName="(\w+)"/g)) names.add(m[1] as string);
    }
  return names;
}
