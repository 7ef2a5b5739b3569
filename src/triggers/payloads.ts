import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { AlertClaim, AlertState } from '../core/trigger-store.js';
import { cut, TRIGGER_LIMITS as L } from './limits.js';

/**
 * The two webhook payloads a trigger takes, validated at the edge, and the one shape both become
 * (a DeliveryView: what the thread and the agent are shown, bounded) with the claims that make a
 * repeat recognisable.
 *
 * Alertmanager's webhook, version 4 (notify/webhook/webhook.go and template/template.go in
 * prometheus/alertmanager): `{version: "4", groupKey, truncatedAlerts, status, receiver,
 * groupLabels, commonLabels, commonAnnotations, externalURL, alerts: [{status, labels,
 * annotations, startsAt, endsAt, generatorURL, fingerprint}]}`. Every alert of the group is in
 * every notification, firing and (with send_resolved) resolved ones; a repeat (repeat_interval,
 * or a retry) carries the same alerts again. An alert is identified by its fingerprint and
 * startsAt: the same alert firing again after it resolved has a new startsAt, so it is new.
 *
 * The generic webhook (docs/triggers.md): `{title, status?, severity?, fields?, link?,
 * dedupeKey?}`. Its group is the dedupeKey (or, without one, the content); its one alert is its
 * content, so the same body again is a repeat and a changed one is news.
 */

export interface FieldView {
  name: string;
  value: string;
}

export interface AlertView {
  identity: string;
  status: AlertState;
  /** alertname, or the webhook's title. */
  name: string;
  severity?: string;
  labels: FieldView[];
  annotations: FieldView[];
  /** Labels and annotations beyond the limit, not kept. */
  omittedFields: number;
  startsAt?: string;
  endsAt?: string;
  /** The generator's URL or the webhook's link: shown as literal text, never as a link. */
  source?: string;
}

/** A delivery as every later step sees it (stored with its work: JSON, bounded). */
export interface DeliveryView {
  kind: 'alertmanager' | 'webhook';
  title: string;
  status: AlertState;
  groupLabels: FieldView[];
  /** The first alerts, with their fields. */
  alerts: AlertView[];
  /** Alerts of the delivery not detailed here (beyond the limit, or truncated by Alertmanager). */
  omittedAlerts: number;
  receiver?: string;
  externalUrl?: string;
}

export interface ParsedDelivery {
  groupKey: string;
  claims: AlertClaim[];
  resolveAll: boolean;
  view: DeliveryView;
}

const key = z.string().min(1).max(L.keyChars);
/** Values are not bounded here: the body is, and they are cut below with a mark instead. */
const labels = z.record(key, z.string());

const timestamp = z
  .string()
  .max(64)
  .refine((s) => !Number.isNaN(Date.parse(s)), 'must be an RFC 3339 time');

const alertmanagerAlert = z.object({
  status: z.enum(['firing', 'resolved']),
  labels,
  annotations: labels.default({}),
  startsAt: timestamp,
  endsAt: timestamp.optional(),
  generatorURL: z.string().max(8192).default(''),
  fingerprint: z.string().min(1).max(64),
});

export const alertmanagerPayload = z.object({
  version: z.literal('4', { error: 'must be "4" (the webhook payload version this broker reads)' }),
  groupKey: z.string().min(1).max(L.groupKeyChars),
  truncatedAlerts: z.number().int().nonnegative().default(0),
  status: z.enum(['firing', 'resolved']),
  receiver: z.string().max(1024).default(''),
  groupLabels: labels.default({}),
  commonLabels: labels.default({}),
  commonAnnotations: labels.default({}),
  externalURL: z.string().max(8192).default(''),
  alerts: z.array(alertmanagerAlert).min(1).max(L.alertsPerDelivery),
});

export type AlertmanagerPayload = z.output<typeof alertmanagerPayload>;

export const webhookPayload = z.strictObject({
  title: z.string().min(1).max(300),
  status: z.enum(['firing', 'resolved']).default('firing'),
  severity: z.string().min(1).max(64).optional(),
  fields: z
    .record(key, z.string())
    .refine((f) => Object.keys(f).length <= 64, 'must have at most 64 fields')
    .default({}),
  link: z.string().max(8192).optional(),
  dedupeKey: z.string().min(1).max(L.groupKeyChars).optional(),
});

export type WebhookPayload = z.output<typeof webhookPayload>;

/** Labels that say most about an alert, shown first (then the rest, by name). */
const TELLING = ['alertname', 'severity', 'namespace', 'service', 'job', 'pod', 'instance', 'cluster'];
/** Annotations people write for people, shown first. */
const TELLING_ANNOTATIONS = ['summary', 'description', 'message', 'runbook_url'];

function ordered(record: Readonly<Record<string, string>>, first: readonly string[]): FieldView[] {
  const names = Object.keys(record).sort((a, b) => {
    const ia = first.indexOf(a);
    const ib = first.indexOf(b);
    if (ia !== ib) return (ia === -1 ? first.length : ia) - (ib === -1 ? first.length : ib);
    return a < b ? -1 : a > b ? 1 : 0;
  });
  return names.map((name) => ({ name, value: cleanText(record[name] ?? '', L.valueChars) }));
}

/**
 * Text from a payload, kept as text: NUL and lone surrogates (which a store or a chat cannot
 * hold) replaced, cut at `max` with a mark.
 */
export function cleanText(text: string, max: number): string {
  return cut(text.replaceAll('\0', '\uFFFD').toWellFormed(), max);
}

/** Labels and annotations of one alert within the per-alert limit. */
function fieldsOf(
  rawLabels: Readonly<Record<string, string>>,
  rawAnnotations: Readonly<Record<string, string>>,
): Pick<AlertView, 'labels' | 'annotations' | 'omittedFields'> {
  const all = ordered(rawLabels, TELLING);
  const notes = ordered(rawAnnotations, TELLING_ANNOTATIONS);
  const labelRoom = Math.min(all.length, Math.max(L.fieldsPerAlert - notes.length, L.fieldsPerAlert / 2));
  const kept = all.slice(0, labelRoom);
  const keptNotes = notes.slice(0, L.fieldsPerAlert - kept.length);
  return {
    labels: kept,
    annotations: keptNotes,
    omittedFields: all.length - kept.length + notes.length - keptNotes.length,
  };
}

function zeroTime(time: string | undefined): boolean {
  // Go's zero time: Alertmanager's endsAt of an alert that has not ended.
  return time === undefined || time.startsWith('0001-01-01');
}

export function fromAlertmanager(payload: AlertmanagerPayload): ParsedDelivery {
  const claims = payload.alerts.map((a) => ({
    identity: `${a.fingerprint}@${a.startsAt}`,
    status: a.status,
  }));
  const detailed = payload.alerts.slice(0, L.alertsDetailed).map((a): AlertView => {
    const severity = a.labels.severity;
    const view: AlertView = {
      identity: `${a.fingerprint}@${a.startsAt}`,
      status: a.status,
      name: cleanText(a.labels.alertname ?? 'alert', 200),
      ...fieldsOf(a.labels, a.annotations),
      startsAt: a.startsAt,
    };
    if (severity !== undefined) view.severity = cleanText(severity, 64);
    if (!zeroTime(a.endsAt) && a.status === 'resolved' && a.endsAt !== undefined) view.endsAt = a.endsAt;
    if (a.generatorURL !== '') view.source = cleanText(a.generatorURL, 2000);
    return view;
  });
  const title =
    payload.commonLabels.alertname ?? payload.groupLabels.alertname ?? detailed[0]?.name ?? 'Alert group';
  const view: DeliveryView = {
    kind: 'alertmanager',
    title: cleanText(title, 200),
    status: payload.status,
    groupLabels: ordered(payload.groupLabels, TELLING).slice(0, L.fieldsPerAlert),
    alerts: detailed,
    omittedAlerts: payload.alerts.length - detailed.length + payload.truncatedAlerts,
  };
  if (payload.receiver !== '') view.receiver = cleanText(payload.receiver, 200);
  if (payload.externalURL !== '') view.externalUrl = cleanText(payload.externalURL, 2000);
  return { groupKey: payload.groupKey, claims, resolveAll: false, view };
}

function contentHash(parts: readonly unknown[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex').slice(0, 32);
}

export function fromWebhook(payload: WebhookPayload): ParsedDelivery {
  const fields = Object.fromEntries(Object.entries(payload.fields).sort(([a], [b]) => (a < b ? -1 : 1)));
  const content = [payload.title, payload.severity ?? null, fields, payload.link ?? null];
  const identity = `v:${contentHash(content)}`;
  const groupKey = payload.dedupeKey ?? `content:${contentHash(content)}`;
  const alert: AlertView = {
    identity,
    status: payload.status,
    name: cleanText(payload.title, 300),
    ...fieldsOf(fields, {}),
  };
  if (payload.severity !== undefined) alert.severity = cleanText(payload.severity, 64);
  if (payload.link !== undefined && payload.link !== '') alert.source = cleanText(payload.link, 2000);
  const view: DeliveryView = {
    kind: 'webhook',
    title: alert.name,
    status: payload.status,
    groupLabels: [],
    alerts: [alert],
    omittedAlerts: 0,
  };
  // A resolution says the group is over, whatever content it carries.
  return payload.status === 'firing'
    ? { groupKey, claims: [{ identity, status: 'firing' }], resolveAll: false, view }
    : { groupKey, claims: [], resolveAll: true, view };
}

/** Why a payload was refused, for the 400's body: field paths and messages, bounded. */
export function describeIssues(error: z.ZodError): string {
  const parts = error.issues.slice(0, 5).map((issue) => {
    const path = issue.path.map(String).join('.');
    return `${path === '' ? 'the body' : path}: ${issue.message}`;
  });
  if (error.issues.length > 5) parts.push(`and ${error.issues.length - 5} more`);
  return cut(parts.join('; '), 1000);
}
