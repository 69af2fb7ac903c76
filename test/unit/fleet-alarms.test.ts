import { describe, expect, it } from 'vitest';
import { alarmSettings, sourceAlarms } from '../../lib/fleet/alarms.ts';

describe("a registered source's alarms (lib/fleet/alarms.ts)", () => {
  it("are the stack's own, for its source dimension and named after it, on the stack's topic and thresholds", () => {
    const settings = alarmSettings({
      SLUICE_ALARM_TOPIC_ARN: 'arn:aws:sns:eu-west-1:1:sluice-prod-alarms',
      SLUICE_LAG_ALARM_SECONDS: '600',
      SLUICE_STATE_TABLE: 'sluice-prod-state',
    });
    if (!settings) throw new Error('a topic was given');
    expect(settings).toMatchObject({ lagSeconds: 600, purgeSeconds: 21_600 });
    const alarms = sourceAlarms(settings, 'orders');
    expect(alarms.map((a) => a.AlarmName)).toEqual(['lag', 'purge-risk', 'errors', 'stalled'].map((what) => `sluice-prod-state-orders-${what}`));
    for (const alarm of alarms) {
      expect(alarm.AlarmActions).toEqual(['arn:aws:sns:eu-west-1:1:sluice-prod-alarms']);
      expect(alarm.AlarmDescription).toContain('orders');
      // Every metric it reads is the source's: by its dimension, or the query's WHERE.
      const text = JSON.stringify(alarm);
      expect(text.includes('{"Name":"source","Value":"orders"}') || text.includes("WHERE source = 'orders'"), alarm.AlarmName).toBe(true);
    }
    expect(alarms[0]).toMatchObject({ MetricName: 'LagSeconds', Threshold: 600, TreatMissingData: 'breaching' });
    expect(alarms[3]?.Metrics?.[0]?.Expression).toBe('IF(lag > 0 AND age > 600, 1, 0)');
  });

  it('a source captured every hour lags by that much between runs: its thresholds and its wait for data grow by the gap', () => {
    const settings = alarmSettings({ SLUICE_ALARM_TOPIC_ARN: 'arn:aws:sns:eu-west-1:1:t', SLUICE_LAG_ALARM_SECONDS: '600' });
    if (!settings) throw new Error('a topic was given');
    const [lag, , , stalled] = sourceAlarms(settings, 'nightly', 60);
    expect(lag).toMatchObject({ Threshold: 600 + 59 * 60, EvaluationPeriods: 13 });
    expect(stalled?.Metrics?.[0]?.Expression).toBe(`IF(lag > 0 AND age > ${600 + 59 * 60}, 1, 0)`);
  });

  it('none without the stack’s topic (a local stack)', () => {
    expect(alarmSettings({ SLUICE_STATE_TABLE: 'x' })).toBeUndefined();
  });
});
