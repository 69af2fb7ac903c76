import type { PutMetricAlarmCommandInput } from '@aws-sdk/client-cloudwatch';

/*
 * A registered source's CloudWatch alarms, the ones serverless.yml declares for the stack's own
 * source (lag, purge risk, stalled position) plus its failed runs, each named after the source and
 * sent to the stack's alarm topic. `sluice sources` creates them with the source, turns their
 * actions off while it is paused, and deletes them with it: a CloudFormation stack cannot declare
 * alarms for sources registered after its deploy.
 */

/** What the stack's environment says of its alarms (serverless.yml sets these on its functions). */
export interface AlarmSettings {
  readonly topicArn: string;
  readonly lagSeconds: number;
  readonly purgeSeconds: number;
  /** Alarm names start with this (the stack's state table: one per stack). */
  readonly prefix: string;
}

/** The stack's alarm settings; undefined without SLUICE_ALARM_TOPIC_ARN (a local stack has no topic). */
export function alarmSettings(env: Readonly<Record<string, string | undefined>>): AlarmSettings | undefined {
  const topicArn = env.SLUICE_ALARM_TOPIC_ARN;
  if (!topicArn) return undefined;
  const seconds = (name: string, fallback: number) => {
    const value = Number(env[name] ?? fallback);
    return Number.isFinite(value) && value > 0 ? value : fallback;
  };
  return {
    topicArn,
    lagSeconds: seconds('SLUICE_LAG_ALARM_SECONDS', 900),
    purgeSeconds: seconds('SLUICE_PURGE_ALARM_SECONDS', 21_600),
    prefix: env.SLUICE_STATE_TABLE ?? 'sluice',
  };
}

/**
 * Source `id`'s alarms, as PutMetricAlarm takes them. A source captured every `everyMinutes`
 * reports that seldom and lags by that much between its runs: its lag and stall thresholds grow by
 * the gap, and its lag alarm waits longer for data.
 */
export function sourceAlarms(settings: AlarmSettings, id: string, everyMinutes = 1): PutMetricAlarmCommandInput[] {
  const lagSeconds = settings.lagSeconds + (everyMinutes - 1) * 60;
  const dimensions = [
    { Name: 'service', Value: 'sluice' },
    { Name: 'source', Value: id },
  ];
  const common = { AlarmActions: [settings.topicArn], EvaluationPeriods: 1, Threshold: 1, ComparisonOperator: 'GreaterThanOrEqualToThreshold' as const };
  const name = (what: string) => `${settings.prefix}-${id}-${what}`;
  return [
    {
      ...common,
      AlarmName: name('lag'),
      AlarmDescription: `sluice source ${id} is behind the binlog (or not running at all)`,
      Namespace: 'sluice',
      MetricName: 'LagSeconds',
      Dimensions: dimensions,
      Statistic: 'Maximum',
      Period: 300,
      EvaluationPeriods: Math.max(3, Math.ceil((everyMinutes * 60) / 300) + 1),
      Threshold: lagSeconds,
      ComparisonOperator: 'GreaterThanThreshold',
      // No data means no run reported: as bad as lagging.
      TreatMissingData: 'breaching',
    },
    {
      ...common,
      AlarmName: name('purge-risk'),
      AlarmDescription: `the binlog sluice source ${id} still needs will be purged soon (docs/RUNBOOK.md)`,
      Namespace: 'sluice',
      MetricName: 'TimeToPurgeSeconds',
      Dimensions: dimensions,
      Statistic: 'Minimum',
      Period: 300,
      Threshold: settings.purgeSeconds,
      ComparisonOperator: 'LessThanThreshold',
      TreatMissingData: 'notBreaching',
    },
    {
      ...common,
      AlarmName: name('errors'),
      AlarmDescription: `sluice source ${id}'s runs are failing (sluice status --source ${id} shows the recorded error)`,
      Metrics: [
        {
          Id: 'errors',
          Expression: `SELECT SUM(Errors) FROM SCHEMA(sluice, service, source, function, code) WHERE source = '${id}'`,
          Period: 300,
          ReturnData: true,
        },
      ],
      TreatMissingData: 'notBreaching',
    },
    {
      ...common,
      AlarmName: name('stalled'),
      AlarmDescription: `sluice source ${id}'s position has not moved while the binlog grew beyond it (stuck, not just busy)`,
      Metrics: [
        { Id: 'stalled', Expression: `IF(lag > 0 AND age > ${lagSeconds}, 1, 0)`, Label: 'stalled', ReturnData: true },
        {
          Id: 'lag',
          ReturnData: false,
          MetricStat: { Metric: { Namespace: 'sluice', MetricName: 'LagBytes', Dimensions: dimensions }, Period: 300, Stat: 'Minimum' },
        },
        {
          Id: 'age',
          ReturnData: false,
          MetricStat: { Metric: { Namespace: 'sluice', MetricName: 'PositionAgeSeconds', Dimensions: dimensions }, Period: 300, Stat: 'Minimum' },
        },
      ],
      TreatMissingData: 'notBreaching',
    },
  ];
}
