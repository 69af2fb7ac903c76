import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { emittedMetricNames, graphedMetricNames } from '../support/emitted-metrics.ts';

const { body } = createRequire(import.meta.url)('../../scripts/dashboard.cjs') as {
  body: (resolver: { resolveVariable: (name: string) => Promise<string> }) => Promise<string>;
};

const values: Record<string, string> = {
  'self:service': 'sluice',
  'sls:stage': 'prod',
  'self:provider.region': 'eu-west-1',
  'param:sourceId': 'main',
  'param:lagAlarmSeconds': '900',
  'param:purgeAlarmSeconds': '21600',
  'self:functions.poller.timeout': '70',
  'self:functions.snapshot.timeout': '900',
  'self:functions.iceberg.timeout': '900',
  'self:provider.memorySize': '1024',
  'param:icebergMemory': '3008',
};
const resolveVariable = async (name: string) => {
  const value = values[name];
  if (value === undefined) throw new Error(`the dashboard asked for ${name}, which serverless.yml does not define here`);
  return value;
};

describe('the CloudWatch dashboard (scripts/dashboard.cjs)', () => {
  it('graphs only metrics the functions emit, so a renamed metric cannot leave a dead graph', async () => {
    const graphed = graphedMetricNames(await body({ resolveVariable }));
    const emitted = emittedMetricNames();
    expect([...graphed].filter((name) => !emitted.has(name))).toEqual([]);
    // What the operator's view needs (issue #22): lag, throughput, purge, snapshot, Iceberg, errors, memory.
    for (const name of [
      'LagBytes',
      'LagSeconds',
      'PositionAgeSeconds',
      'RowsCaptured',
      'Commits',
      'TimeToPurgeSeconds',
      'SnapshotRows',
      'SnapshotEtaSeconds',
      'IcebergLagCommits',
      'Errors',
      'MemoryUsedMB',
      'Repositions',
    ])
      expect(graphed).toContain(name);
  });

  it('shows the fleet first (every source, the worst lag, the sources in error), then one source, chosen by the `source` variable', async () => {
    const dashboard = JSON.parse(await body({ resolveVariable })) as {
      variables: { type: string; property: string; defaultValue: string; search: string; populateFrom: string }[];
      widgets: { properties: { title: string; metrics: unknown[][] } }[];
    };
    const [fleetLag, fleetErrors] = dashboard.widgets;
    const expressions = (w: typeof fleetLag) => w?.properties.metrics.map((row) => (row[0] as { expression?: string }).expression);
    // Every source: no source in the searches; the worst of them, and how many series are in error.
    expect(expressions(fleetLag)).toEqual([`SEARCH('{sluice,service,source} MetricName="LagSeconds"', 'Maximum', 60)`, 'MAX(lag)']);
    expect(expressions(fleetErrors)?.[1]).toBe('SUM(IF(failed > 0, 1, 0))');
    // The variable changes the `source` dimension of every per-source graph, listing the sources that emit.
    expect(dashboard.variables).toEqual([expect.objectContaining({ type: 'property', property: 'source', defaultValue: 'main', populateFrom: 'source' })]);
    expect(graphedMetricNames(JSON.stringify({ widgets: [{ properties: { metrics: [[{ expression: dashboard.variables[0]?.search }]] } }] }))).toEqual(
      new Set(['LagBytes']),
    );
    const lag = dashboard.widgets.find((w) => w.properties.title === 'Binlog lag');
    expect(lag?.properties.metrics[0]?.slice(0, 6)).toEqual(['sluice', 'LagBytes', 'service', 'sluice', 'source', 'main']);
  });

  it("draws each function's duration and memory against its own limits, for this stage's function names", async () => {
    const { widgets } = JSON.parse(await body({ resolveVariable })) as {
      widgets: { properties: { title: string; region: string; metrics: unknown[][]; annotations?: { horizontal: { value: number }[] } } }[];
    };
    const widget = (title: string) => widgets.find((w) => w.properties.title.startsWith(title))?.properties;
    expect(widget('iceberg: memory')?.annotations?.horizontal[0]?.value).toBe(3008);
    expect(widget('poller: duration')?.annotations?.horizontal[0]?.value).toBe(70_000);
    expect(widget('poller: duration')?.metrics[0]).toEqual([
      'AWS/Lambda',
      'Duration',
      'FunctionName',
      'sluice-prod-poller',
      { stat: 'Maximum', label: 'max ms' },
    ]);
    expect(new Set(widgets.map((w) => w.properties.region))).toEqual(new Set(['eu-west-1']));
    expect(JSON.stringify(widgets)).not.toContain('undefined');
  });
});
