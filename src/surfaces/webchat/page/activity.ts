import type { ActivityView } from '../view.js';
import { elapsed } from './time.js';

/**
 * The line that shows the agent working, from the thread's activity (what the engine is doing
 * for it). No DOM here, so it is checked outside a browser.
 */

export function activityText(activity: ActivityView, now: number = Date.now()): string {
  const running = elapsed(activity.startedAt, now);
  return `${stateText(activity, now)} · ${running}`;
}

function stateText(activity: ActivityView, now: number): string {
  switch (activity.state) {
    case 'queued':
      return 'Waiting to be sent';
    case 'sending':
      return 'Sending to the agent';
    case 'working':
      return 'The agent is working';
    case 'retrying': {
      const due = activity.retryAt === undefined ? Number.NaN : new Date(activity.retryAt).getTime();
      const left = Math.ceil((due - now) / 1000);
      const when = Number.isFinite(left) && left > 0 ? `in ${left} s` : 'now';
      return activity.busy === true
        ? `The agent is busy; sending again ${when}`
        : `The send did not go through; trying again ${when}`;
    }
    case 'checking':
      return 'Checking whether the agent got the message';
    case 'following':
      return "Reconnecting to the agent's task";
  }
}
