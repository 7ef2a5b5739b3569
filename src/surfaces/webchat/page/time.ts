/**
 * Times as the page shows them, in the reader's locale and time zone: the time of day for
 * today, with the date before that. No DOM here, so it is checked outside a browser.
 */

const TIME: Intl.DateTimeFormatOptions = { hour: '2-digit', minute: '2-digit' };
const DATE: Intl.DateTimeFormatOptions = { day: 'numeric', month: 'short' };

export function shortTime(iso: string, now: Date = new Date()): string {
  const at = new Date(iso);
  if (Number.isNaN(at.getTime())) return '';
  const time = at.toLocaleTimeString(undefined, TIME);
  if (at.toDateString() === now.toDateString()) return time;
  const date = at.toLocaleDateString(
    undefined,
    at.getFullYear() === now.getFullYear() ? DATE : { ...DATE, year: 'numeric' },
  );
  return `${date}, ${time}`;
}

export function fullTime(iso: string): string {
  const at = new Date(iso);
  return Number.isNaN(at.getTime())
    ? ''
    : at.toLocaleString(undefined, { dateStyle: 'full', timeStyle: 'medium' });
}

/** How long something has run, in whole seconds: "4 s", "2 min 5 s", "1 h 3 min". */
export function elapsed(fromIso: string, now: number = Date.now()): string {
  const seconds = Math.max(0, Math.floor((now - new Date(fromIso).getTime()) / 1000));
  if (!Number.isFinite(seconds)) return '';
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${seconds % 60} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}
