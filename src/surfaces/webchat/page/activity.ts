import type { ActivityView } from '../view.js';
import { elapsed } from './time.js';

/**
 * The line that shows the agent working, from the thread's activity (what the engine is doing
 * for it). No DOM here, so it is checked outside a browser.
 */

/** Whether Stop is offered: the agent has a task to cancel, or a message waits behind one's prompt. */
export function offersStop(activity: ActivityView | null): boolean {
  if (activity === null) return false;
  return activity.state === 'working' || activity.state === 'following' || activity.behind !== undefined;
}

export function activityText(activity: ActivityView, now: number = Date.now()): string {
  const running = elapsed(activity.startedAt, now);
  return `${stateText(activity, now)} · ${running}`;
}

function stateText(activity: ActivityView, now: number): string {
  switch (activity.state) {
    case 'queued':
      if (activity.behind === 'approval')
        return 'Waiting to be sent: the agent waits for the tool approval above to be decided (or Stop)';
      if (activity.behind === 'question')
        return 'Waiting to be sent: the agent waits for the question above to be answered (or Stop)';
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
