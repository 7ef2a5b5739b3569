import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KourierError } from '../core/errors.js';
import type { TriggerConfig } from '../core/triggers.js';
import { parse } from './http.js';
import { TRIGGER_LIMITS as L } from './limits.js';

const trigger = (kind: TriggerConfig['kind']): TriggerConfig => ({
  binding: 'team-a/support',
  name: 'alerts',
  kind,
  instruction: 'Investigate.',
  onResolved: 'notice',
  target: {},
  threadsPerMinute: 5,
});

const labelName = fc.stringMatching(/^[a-zA-Z_][a-zA-Z0-9_]{0,20}$/);
const iso = fc
  .integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2030, 0, 1) })
  .map((ms) => new Date(ms).toISOString());

/** A value longer than is kept (cheap to generate: a short random head, a long tail). */
const long = fc.string({ maxLength: 10 }).map((head) => `${head}${'v'.repeat(520)}`);

/** An Alertmanager v4 notification as its webhook notifier writes it. */
const alertArb = fc.record({
  status: fc.constantFrom('firing', 'resolved'),
  // Now and then more labels and annotations than are kept, and values longer than are kept.
  labels: fc.oneof(
    fc.dictionary(labelName, fc.string({ maxLength: 60 }), { maxKeys: 8 }),
    fc.dictionary(labelName, long, { minKeys: 20, maxKeys: 40 }),
  ),
  annotations: fc.oneof(
    fc.dictionary(labelName, fc.string({ maxLength: 60 }), { maxKeys: 3 }),
    fc.dictionary(labelName, long, { minKeys: 6, maxKeys: 12 }),
  ),
  startsAt: iso,
  endsAt: fc.oneof(iso, fc.constant('0001-01-01T00:00:00Z')),
  generatorURL: fc.webUrl(),
  fingerprint: fc.stringMatching(/^[0-9a-f]{16}$/),
});
const notificationArb = fc.record({
  version: fc.constant('4'),
  groupKey: fc.string({ minLength: 1, maxLength: 200 }),
  truncatedAlerts: fc.nat({ max: 50 }),
  status: fc.constantFrom('firing', 'resolved'),
  receiver: fc.string({ maxLength: 30 }),
  groupLabels: fc.dictionary(labelName, fc.string({ maxLength: 40 }), { maxKeys: 4 }),
  commonLabels: fc.dictionary(labelName, fc.string({ maxLength: 40 }), { maxKeys: 4 }),
  commonAnnotations: fc.dictionary(labelName, fc.string({ maxLength: 40 }), { maxKeys: 2 }),
  externalURL: fc.webUrl(),
  alerts: fc.oneof(
    fc.array(alertArb, { minLength: 1, maxLength: 4 }),
    fc.array(alertArb, { minLength: 21, maxLength: 30 }),
  ),
});

function refusalOf(run: () => unknown): KourierError & { status?: number } {
  try {
    run();
  } catch (error) {
    if (error instanceof KourierError) return error as KourierError & { status?: number };
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('Alertmanager webhook payloads (version 4)', () => {
  it('claims every alert by fingerprint and startsAt, and keeps what it shows within the limits', () => {
    fc.assert(
      fc.property(notificationArb, (body) => {
        const parsed = parse(trigger('alertmanager'), body);
        expect(parsed.groupKey).toBe(body.groupKey);
        expect(parsed.claims).toStrictEqual(
          body.alerts.map((a) => ({ identity: `${a.fingerprint}@${a.startsAt}`, status: a.status })),
        );
        const { view } = parsed;
        expect(view.alerts.length).toBe(Math.min(body.alerts.length, L.alertsDetailed));
        // Nothing dropped silently: what is not detailed is counted, Alertmanager's truncation too.
        expect(view.alerts.length + view.omittedAlerts).toBe(body.alerts.length + body.truncatedAlerts);
        view.alerts.forEach((alert, i) => {
          const source = body.alerts[i];
          if (source === undefined) throw new Error('no source alert');
          const kept = alert.labels.length + alert.annotations.length;
          expect(kept).toBeLessThanOrEqual(L.fieldsPerAlert);
          expect(kept + alert.omittedFields).toBe(
            Object.keys(source.labels).length + Object.keys(source.annotations).length,
          );
          for (const f of [...alert.labels, ...alert.annotations]) {
            expect(f.value.length).toBeLessThanOrEqual(L.valueChars);
            expect(f.value).not.toContain('\0');
          }
        });
      }),
      { numRuns: 60 },
    );
  });

  it('refuses anything that is not a version 4 notification with invalid_payload, never another error', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (body) => {
        const refusal = refusalOf(() => parse(trigger('alertmanager'), body));
        expect(refusal.code).toBe('invalid_payload');
        expect(refusal.status).toBe(400);
      }),
      { numRuns: 300 },
    );
  });

  it('names the field at fault: a missing fingerprint, an unreadable time, another version', () => {
    fc.assert(
      fc.property(
        notificationArb,
        fc.constantFrom('fingerprint', 'startsAt', 'version', 'status'),
        (body, broken) => {
          const copy = structuredClone(body) as Record<string, unknown> & {
            alerts: Array<Record<string, unknown>>;
          };
          const first = copy.alerts[0] ?? {};
          if (broken === 'fingerprint') delete first.fingerprint;
          if (broken === 'startsAt') first.startsAt = 'yesterday';
          if (broken === 'version') copy.version = '3';
          if (broken === 'status') copy.status = 'firing!';
          const refusal = refusalOf(() => parse(trigger('alertmanager'), copy));
          expect(refusal.code).toBe('invalid_payload');
          expect(refusal.message).toContain(
            broken === 'fingerprint' || broken === 'startsAt' ? `alerts.0.${broken}` : broken,
          );
        },
      ),
      { numRuns: 30 },
    );
  });

  it('reads the notification Alertmanager documents', () => {
    const parsed = parse(trigger('alertmanager'), {
      version: '4',
      groupKey: '{}/{severity="critical"}:{alertname="HighCPU"}',
      truncatedAlerts: 0,
      status: 'firing',
      receiver: 'kourier',
      groupLabels: { alertname: 'HighCPU' },
      commonLabels: { alertname: 'HighCPU', severity: 'critical', namespace: 'payments' },
      commonAnnotations: {},
      externalURL: 'http://alertmanager.example:9093',
      alerts: [
        {
          status: 'firing',
          labels: { alertname: 'HighCPU', severity: 'critical', namespace: 'payments', pod: 'web-1' },
          annotations: { summary: 'CPU above 90% for 10 minutes' },
          startsAt: '2026-11-30T10:00:00.123456789Z',
          endsAt: '0001-01-01T00:00:00Z',
          generatorURL: 'http://prometheus.example/graph?g0.expr=up',
          fingerprint: 'c0ffee0123456789',
        },
      ],
    });
    expect(parsed.view).toMatchObject({
      kind: 'alertmanager',
      title: 'HighCPU',
      status: 'firing',
      omittedAlerts: 0,
      alerts: [
        {
          identity: 'c0ffee0123456789@2026-11-30T10:00:00.123456789Z',
          name: 'HighCPU',
          severity: 'critical',
          source: 'http://prometheus.example/graph?g0.expr=up',
        },
      ],
    });
    // An alert that has not ended carries Go's zero time: no endsAt is kept.
    expect(parsed.view.alerts[0]?.endsAt).toBeUndefined();
    expect(parsed.view.alerts[0]?.labels.map((l) => l.name)).toStrictEqual([
      'alertname',
      'severity',
      'namespace',
      'pod',
    ]);
  });
});

describe('generic webhook payloads', () => {
  const webhookArb = fc.record(
    {
      title: fc.string({ minLength: 1, maxLength: 100 }),
      severity: fc.string({ minLength: 1, maxLength: 10 }),
      fields: fc.dictionary(labelName, fc.string({ maxLength: 50 }), { maxKeys: 10 }),
      link: fc.webUrl(),
      dedupeKey: fc.string({ minLength: 1, maxLength: 40 }),
    },
    { requiredKeys: ['title'] },
  );

  it('gives the same body, whatever the order of its fields, the same group and alert', () => {
    fc.assert(
      fc.property(webhookArb, (body) => {
        const reversed = { ...body, fields: Object.fromEntries(Object.entries(body.fields ?? {}).reverse()) };
        const a = parse(trigger('webhook'), body);
        const b = parse(trigger('webhook'), reversed);
        expect(b.groupKey).toBe(a.groupKey);
        expect(b.claims).toStrictEqual(a.claims);
        if (body.dedupeKey !== undefined) expect(a.groupKey).toBe(body.dedupeKey);
      }),
    );
  });

  it('takes a changed body in the same group as a new alert, and a resolution as resolving the group', () => {
    fc.assert(
      fc.property(webhookArb, fc.string({ minLength: 1, maxLength: 20 }), (body, extra) => {
        const first = parse(trigger('webhook'), { ...body, dedupeKey: 'disk-db-1' });
        const changed = parse(trigger('webhook'), {
          ...body,
          title: `${body.title}${extra}`,
          dedupeKey: 'disk-db-1',
        });
        expect(changed.groupKey).toBe(first.groupKey);
        expect(changed.claims[0]?.identity).not.toBe(first.claims[0]?.identity);
        const resolved = parse(trigger('webhook'), { ...body, status: 'resolved', dedupeKey: 'disk-db-1' });
        expect(resolved).toMatchObject({ groupKey: 'disk-db-1', claims: [], resolveAll: true });
      }),
    );
  });

  it('refuses unknown fields and wrong types with invalid_payload, naming them', () => {
    expect(refusalOf(() => parse(trigger('webhook'), { title: 'x', colour: 'red' })).message).toContain(
      'colour',
    );
    expect(refusalOf(() => parse(trigger('webhook'), { title: 'x', fields: { a: 1 } })).message).toContain(
      'fields.a',
    );
    expect(refusalOf(() => parse(trigger('webhook'), { fields: {} })).message).toContain('title');
    fc.assert(
      fc.property(fc.jsonValue(), (body) => {
        fc.pre(!(typeof body === 'object' && body !== null && 'title' in body));
        expect(refusalOf(() => parse(trigger('webhook'), body)).code).toBe('invalid_payload');
      }),
    );
  });
});
