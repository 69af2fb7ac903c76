// The CloudWatch dashboard serverless.yml deploys (one per stage), built from the metrics the
// functions emit (lib/ops/lambda-metrics.ts, functions/*.ts; namespace `sluice`, dimensions service
// and source). test/unit/dashboard.test.ts checks every metric name here against the code's.
// The first row is the fleet (every source: the stack's own and the registered ones, by their
// `source` dimension); the rows below are one source's, the stack's own by default, any other
// chosen with the dashboard's `source` variable (it changes every `source` dimension below).
// CommonJS: osls loads `${file(...)}` sources with require() and calls the export with its resolver.

const NS = 'sluice';

/** The dashboard body (a JSON string) for one stage's values. */
function dashboardBody({ service, stage, region, sourceId, lagAlarmSeconds, purgeAlarmSeconds, functions }) {
  const dims = ['service', 'sluice', 'source', sourceId];
  const widgets = [];
  const place = (title, properties, width = 12) =>
    widgets.push({ type: 'metric', width, height: 6, properties: { title, region, view: 'timeSeries', ...properties } });
  const search = (dimensions, metric, stat, period) => `SEARCH('{${NS},${dimensions.join(',')}} MetricName="${metric}"', '${stat}', ${period})`;

  place('Fleet: seconds behind, per source and the worst', {
    metrics: [
      [{ expression: search(['service', 'source'], 'LagSeconds', 'Maximum', 60), id: 'lag', label: '' }],
      [{ expression: 'MAX(lag)', id: 'worst', label: 'worst source' }],
    ],
    period: 60,
  });
  place('Fleet: sources in error (failed runs by source, function and code)', {
    metrics: [
      [{ expression: search(['service', 'source', 'function', 'code'], 'Errors', 'Sum', 300), id: 'failed', label: '' }],
      [{ expression: 'SUM(IF(failed > 0, 1, 0))', id: 'erring', label: 'series in error', yAxis: 'right' }],
    ],
    period: 300,
    view: 'bar',
  });

  place('Binlog lag', {
    metrics: [
      [NS, 'LagBytes', ...dims, { stat: 'Maximum', label: 'bytes of binlog behind' }],
      [NS, 'LagSeconds', ...dims, { stat: 'Maximum', label: 'seconds behind', yAxis: 'right' }],
    ],
    period: 60,
  });
  place('Position age (heartbeat): lag with a still position is stuck', {
    metrics: [
      [NS, 'PositionAgeSeconds', ...dims, { stat: 'Maximum', label: 'seconds since the position moved' }],
      [NS, 'LagBytes', ...dims, { stat: 'Maximum', label: 'bytes behind', yAxis: 'right' }],
    ],
    annotations: { horizontal: [{ label: 'StalledAlarm', value: lagAlarmSeconds }] },
    period: 60,
  });
  place('Events and commits per minute', {
    metrics: [
      [NS, 'RowsCaptured', ...dims, { stat: 'Sum', label: 'events' }],
      [NS, 'Commits', ...dims, { stat: 'Sum', label: 'commits', yAxis: 'right' }],
      [NS, 'Heartbeats', ...dims, { stat: 'Sum', label: 'heartbeats', yAxis: 'right' }],
    ],
    period: 60,
  });
  place('Time to purge (the stored binlog may be purged in)', {
    metrics: [[NS, 'TimeToPurgeSeconds', ...dims, { stat: 'Minimum', label: 'seconds' }]],
    annotations: { horizontal: [{ label: 'PurgeRiskAlarm', value: purgeAlarmSeconds }] },
    period: 300,
  });
  place('Snapshot rows/s and ETA', {
    metrics: [
      [{ expression: 'rows / 60', label: 'rows/s', id: 'rate' }],
      [NS, 'SnapshotRows', ...dims, { stat: 'Sum', id: 'rows', visible: false }],
      [NS, 'SnapshotEtaSeconds', ...dims, { stat: 'Maximum', label: 'ETA (s)', yAxis: 'right' }],
    ],
    period: 60,
  });
  place('Iceberg merge lag per source and table (source commits behind)', {
    metrics: [[{ expression: search(['service', 'source', 'table'], 'IcebergLagCommits', 'Maximum', 300), id: 'lag', label: '' }]],
    period: 300,
  });
  place('Tables re-copied after DDL sluice could not classify (SLUICE_DDL_UNKNOWN=resnapshot)', {
    metrics: [[NS, 'UnclassifiedDdlResnapshots', ...dims, { stat: 'Sum', label: 'tables' }]],
    period: 300,
    view: 'bar',
  });
  // A failover sluice followed by itself is not an error, but a change of server an operator confirms
  // (RepositionAlarm); a history it could not follow ends in a re-copy (state reset, HistoryResyncs).
  place('Binlog history changes: failovers followed by GTID, re-copies after a reset', {
    metrics: [
      [NS, 'Repositions', ...dims, { stat: 'Sum', label: 'followed (Repositions)' }],
      [NS, 'HistoryResyncs', ...dims, { stat: 'Sum', label: 're-copied (HistoryResyncs)' }],
    ],
    period: 300,
    view: 'bar',
  });
  for (const fn of functions) {
    const name = `${service}-${stage}-${fn.name}`;
    place(
      `${fn.name}: duration against its ${fn.timeout} s timeout`,
      {
        metrics: [['AWS/Lambda', 'Duration', 'FunctionName', name, { stat: 'Maximum', label: 'max ms' }]],
        annotations: { horizontal: [{ label: 'timeout', value: fn.timeout * 1000 }] },
        period: 300,
      },
      8,
    );
    place(
      `${fn.name}: memory against its ${fn.memory} MB`,
      {
        metrics: [[NS, 'MemoryUsedMB', ...dims, 'function', fn.name, { stat: 'Maximum', label: 'peak MB' }]],
        annotations: { horizontal: [{ label: 'memory size', value: fn.memory }] },
        period: 300,
      },
      8,
    );
    place(
      `${fn.name}: invocations and errors`,
      {
        metrics: [
          ['AWS/Lambda', 'Invocations', 'FunctionName', name, { stat: 'Sum' }],
          ['AWS/Lambda', 'Errors', 'FunctionName', name, { stat: 'Sum' }],
        ],
        period: 300,
      },
      8,
    );
  }
  const variables = [
    {
      type: 'property',
      property: 'source',
      inputType: 'select',
      id: 'source',
      label: 'source',
      defaultValue: sourceId,
      visible: true,
      search: `{${NS},service,source} MetricName="LagBytes"`,
      populateFrom: 'source',
    },
  ];
  return JSON.stringify({ variables, widgets });
}

/** osls: `${file(./scripts/dashboard.cjs):body}`, from this stage's parameters. */
exports.body = async ({ resolveVariable }) => {
  const number = async (name) => Number(await resolveVariable(name));
  return dashboardBody({
    service: await resolveVariable('self:service'),
    stage: await resolveVariable('sls:stage'),
    region: await resolveVariable('self:provider.region'),
    sourceId: await resolveVariable('param:sourceId'),
    lagAlarmSeconds: await number('param:lagAlarmSeconds'),
    purgeAlarmSeconds: await number('param:purgeAlarmSeconds'),
    functions: [
      { name: 'poller', timeout: await number('self:functions.poller.timeout'), memory: await number('self:provider.memorySize') },
      { name: 'snapshot', timeout: await number('self:functions.snapshot.timeout'), memory: await number('self:provider.memorySize') },
      { name: 'iceberg', timeout: await number('self:functions.iceberg.timeout'), memory: await number('param:icebergMemory') },
    ],
  });
};

exports.dashboardBody = dashboardBody;
