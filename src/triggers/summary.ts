import type { TriggerConfig, TriggerLine, TriggerMessage } from '../core/triggers.js';
import { cut, TRIGGER_LIMITS as L } from './limits.js';
import type { AlertView, DeliveryView, FieldView } from './payloads.js';

/**
 * What people and the agent are shown of a delivery. People get a short summary as plain text
 * lines (the surface decides how: Slack escapes it and shows links literally); the agent gets
 * every kept field, as data blocks the engine marks untrusted (composeTriggerText, S-7).
 */

/** Labels already in the title, not repeated among "the few that matter". */
const IN_TITLE = new Set(['alertname', 'severity']);
const SUMMARY_LABELS = 4;

export function formatTime(iso: string | undefined): string | undefined {
  if (iso === undefined) return undefined;
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return undefined;
  return `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

function labelList(fields: readonly FieldView[], max = SUMMARY_LABELS): string {
  const shown = fields.filter((f) => !IN_TITLE.has(f.name)).slice(0, max);
  return shown.map((f) => `${f.name}=${cut(f.value, 80)}`).join(', ');
}

function headline(view: DeliveryView, alerts: readonly AlertView[], omitted: number, what: string): string {
  const first = alerts[0];
  const severity = first?.severity === undefined ? '' : ` (${first.severity})`;
  const count = alerts.length + omitted;
  return `${what}: ${view.title}${severity}${count > 1 ? ` — ${count} alerts` : ''}`;
}

/** One alert in a few words: its name and the labels that tell it apart. */
function alertLine(alert: AlertView): string {
  const labels = labelList(alert.labels, 3);
  return `${alert.name}${alert.severity === undefined ? '' : ` (${alert.severity})`}${labels === '' ? '' : ` ${labels}`}`;
}

function annotation(alert: AlertView | undefined, names: readonly string[]): string | undefined {
  for (const name of names) {
    const found = alert?.annotations.find((a) => a.name === name);
    if (found !== undefined && found.value.trim() !== '') return cut(found.value.trim(), 300);
  }
  return undefined;
}

function detailLines(view: DeliveryView, alerts: readonly AlertView[], omitted: number): TriggerLine[] {
  const first = alerts[0];
  const lines: TriggerLine[] = [];
  const labels = labelList(first?.labels ?? view.groupLabels);
  if (labels !== '') lines.push({ label: 'Labels', text: labels });
  const summary = annotation(first, ['summary', 'description', 'message']);
  if (summary !== undefined) lines.push({ label: 'Summary', text: summary });
  const started = formatTime(first?.startsAt);
  if (started !== undefined) lines.push({ label: 'Started', text: started });
  if (first?.source !== undefined)
    lines.push({ label: 'Source', text: cut(first.source, 300), verbatim: true });
  const others = alerts.slice(1, L.alertsInSummary);
  if (others.length > 0) lines.push({ label: 'Also', text: others.map(alertLine).join('; ') });
  const more = alerts.length - 1 - others.length + omitted;
  if (more > 0) lines.push({ label: 'More', text: `and ${more} more alert${more === 1 ? '' : 's'}` });
  return lines;
}

/** The alerts of a delivery a piece of work is about, and how many of them have no detail kept. */
export function selectAlerts(
  view: DeliveryView,
  identities: readonly string[],
): { alerts: AlertView[]; omitted: number } {
  if (identities.length === 0) return { alerts: view.alerts, omitted: view.omittedAlerts };
  const wanted = new Set(identities);
  const alerts = view.alerts.filter((a) => wanted.has(a.identity));
  return { alerts, omitted: identities.length - alerts.length };
}

/** A new thread's root: what fired, the few labels that matter, when, and where it came from. */
export function rootMessage(view: DeliveryView, identities: readonly string[]): TriggerMessage {
  const { alerts, omitted } = selectAlerts(view, identities);
  return { title: headline(view, alerts, omitted, 'Firing'), lines: detailLines(view, alerts, omitted) };
}

/** More alerts in a group with a thread (posted there before their turn). */
export function moreMessage(view: DeliveryView, identities: readonly string[]): TriggerMessage {
  const { alerts, omitted } = selectAlerts(view, identities);
  const n = alerts.length + omitted;
  return {
    title: `${n} more alert${n === 1 ? '' : 's'} firing in this group: ${view.title}`,
    lines: detailLines(view, alerts, omitted),
  };
}

export function resolvedMessage(
  view: DeliveryView,
  identities: readonly string[],
  allResolved: boolean,
): TriggerMessage {
  const { alerts, omitted } = selectAlerts(view, identities);
  const n = alerts.length + omitted;
  const title = allResolved
    ? `Resolved: ${view.title} — every alert of this group has resolved`
    : `Resolved: ${n} alert${n === 1 ? '' : 's'} of ${view.title}`;
  const lines: TriggerLine[] = [];
  const shown = alerts.slice(0, L.alertsInSummary);
  if (shown.length > 0) lines.push({ label: 'Alerts', text: shown.map(alertLine).join('; ') });
  const more = n - shown.length;
  if (more > 0) lines.push({ label: 'More', text: `and ${more} more` });
  const ended = formatTime(alerts[0]?.endsAt);
  if (ended !== undefined) lines.push({ label: 'Ended', text: ended });
  return { title, lines };
}

/** The root of a storm thread: why these groups have no thread of their own. */
export function stormMessage(
  trigger: Pick<TriggerConfig, 'binding' | 'name'>,
  threadsPerMinute: number,
): TriggerMessage {
  return {
    title: `Alert storm: more alert groups than ${trigger.binding} opens threads for`,
    lines: [
      {
        label: 'Why',
        text: `trigger ${trigger.name} opened ${threadsPerMinute} thread${threadsPerMinute === 1 ? '' : 's'} in the last minute, its limit`,
      },
      {
        label: 'Here',
        text: 'further alert groups are listed in this thread, without an agent run each; mention the agent here to ask about them',
      },
    ],
  };
}

/** A throttled group's entry in the storm thread. */
export function noteMessage(
  view: DeliveryView,
  identities: readonly string[],
  allResolved: boolean,
): TriggerMessage {
  const { alerts, omitted } = selectAlerts(view, identities);
  const resolving = alerts.length > 0 && alerts.every((a) => a.status === 'resolved');
  if (resolving) return resolvedMessage(view, identities, allResolved);
  return { title: headline(view, alerts, omitted, 'Firing'), lines: detailLines(view, alerts, omitted) };
}

export interface ScheduleRun {
  /** The tick, ISO 8601 UTC. */
  scheduledFor: string;
  cron: string;
  timeZone: string;
}

export function scheduleMessage(trigger: Pick<TriggerConfig, 'name'>, run: ScheduleRun): TriggerMessage {
  return {
    title: `Scheduled: ${trigger.name}`,
    lines: [
      { label: 'Run of', text: `${formatTime(run.scheduledFor) ?? run.scheduledFor} (${run.timeZone})` },
      { label: 'Schedule', text: run.cron, verbatim: true },
    ],
  };
}

// ---- what the agent is sent ---------------------------------------------------------------------

/**
 * The fields of a turn, flattened to `alerts[i].labels.name: value` lines within a total budget;
 * what does not fit is counted ("and N more"), never dropped silently.
 */
export function alertFields(view: DeliveryView, identities: readonly string[]): Record<string, string> {
  const { alerts, omitted } = selectAlerts(view, identities);
  const out: Record<string, string> = {
    source: view.kind === 'alertmanager' ? 'Alertmanager' : 'webhook',
    group: view.title,
    status: view.status,
    alerts: String(alerts.length + omitted),
  };
  for (const f of view.groupLabels) out[`groupLabels.${f.name}`] = f.value;
  if (view.externalUrl !== undefined) out.externalURL = view.externalUrl;
  let used = Object.entries(out).reduce((n, [k, v]) => n + k.length + v.length + 3, 0);
  let left = 0;
  alerts.forEach((alert, i) => {
    const entries: Array<[string, string]> = [[`alerts[${i}].status`, alert.status]];
    for (const f of alert.labels) entries.push([`alerts[${i}].labels.${f.name}`, f.value]);
    for (const f of alert.annotations) entries.push([`alerts[${i}].annotations.${f.name}`, f.value]);
    if (alert.startsAt !== undefined) entries.push([`alerts[${i}].startsAt`, alert.startsAt]);
    if (alert.endsAt !== undefined) entries.push([`alerts[${i}].endsAt`, alert.endsAt]);
    if (alert.source !== undefined) entries.push([`alerts[${i}].source`, alert.source]);
    if (alert.omittedFields > 0)
      entries.push([`alerts[${i}].omitted`, `and ${alert.omittedFields} more fields`]);
    const size = entries.reduce((n, [k, v]) => n + k.length + v.length + 3, 0);
    if (left > 0 || used + size > L.turnFieldChars) {
      left += 1;
      return;
    }
    used += size;
    for (const [k, v] of entries) out[k] = v;
  });
  const more = left + omitted;
  if (more > 0) out.omitted = `and ${more} more alert${more === 1 ? '' : 's'} not shown`;
  return out;
}

export function scheduleFields(
  trigger: Pick<TriggerConfig, 'name'>,
  run: ScheduleRun,
): Record<string, string> {
  return {
    source: 'schedule',
    trigger: trigger.name,
    scheduledFor: run.scheduledFor,
    schedule: run.cron,
    timeZone: run.timeZone,
  };
}
