import { z } from 'zod';
import type { TriggerPlace } from '../core/triggers.js';
import type { DeliveryView } from './payloads.js';
import type { ScheduleRun } from './summary.js';

/**
 * What a piece of trigger work carries in the store (JSON), written by the intake and the
 * scheduler, read back by the worker. It is our own data, but it comes back from a database:
 * checked on the way in, and a piece that does not read is given up rather than retried.
 */

export type WorkPayload =
  | { type: 'alerts'; place: TriggerPlace; view: DeliveryView }
  | { type: 'storm'; place: TriggerPlace; threadsPerMinute: number }
  | { type: 'schedule'; place: TriggerPlace; run: ScheduleRun };

const place = z.object({ surface: z.string(), workspaceId: z.string(), channelId: z.string() });
const field = z.object({ name: z.string(), value: z.string() });
const alert = z.object({
  identity: z.string(),
  status: z.enum(['firing', 'resolved']),
  name: z.string(),
  severity: z.string().optional(),
  labels: z.array(field),
  annotations: z.array(field),
  omittedFields: z.number(),
  startsAt: z.string().optional(),
  endsAt: z.string().optional(),
  source: z.string().optional(),
});
const view = z.object({
  kind: z.enum(['alertmanager', 'webhook']),
  title: z.string(),
  status: z.enum(['firing', 'resolved']),
  groupLabels: z.array(field),
  alerts: z.array(alert),
  omittedAlerts: z.number(),
  receiver: z.string().optional(),
  externalUrl: z.string().optional(),
});

const workPayload = z.discriminatedUnion('type', [
  z.object({ type: z.literal('alerts'), place, view }),
  z.object({ type: z.literal('storm'), place, threadsPerMinute: z.number() }),
  z.object({
    type: z.literal('schedule'),
    place,
    run: z.object({ scheduledFor: z.string(), cron: z.string(), timeZone: z.string() }),
  }),
]);

/** undefined: not a payload this version wrote (a damaged row). */
export function readWorkPayload(value: unknown): WorkPayload | undefined {
  const parsed = workPayload.safeParse(value);
  return parsed.success ? (parsed.data as WorkPayload) : undefined;
}
