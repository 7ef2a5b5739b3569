import { GROUP_ID } from './payloads.js';

/** What a prompt tells people, in the broker's own words (never an agent's). */
export const WORDS = {
  stale: 'This prompt is no longer waiting for an answer.',
  alreadyDecided: (by: string | undefined) =>
    by === undefined ? 'This was already decided.' : `This was already decided by ${userRef(by)}.`,
  notApprover: (groups: readonly string[]) => {
    const named = groups.filter((g) => GROUP_ID.test(g)).map((g) => `<!subteam^${g}>`);
    return `Only members of ${named.join(', ')} can approve or deny these tool calls. Your press changed nothing.`;
  },
  lookupFailed:
    'Agent Kourier could not check who may approve just now, so your press was not taken. Please try again in a moment.',
  noGroups:
    'No approver groups are set for this agent, so nobody can approve tool calls in Slack. Your press changed nothing.',
  disabled: 'Tool approvals are not enabled for this agent. Your press changed nothing.',
  failed: 'Agent Kourier could not record your answer just now. Please press again in a moment.',
  timedOut: 'Not answered in time; the agent’s task was canceled.',
  rejected: 'The agent did not take the answer; its task was canceled.',
  superseded: 'No longer waiting: the agent asked something else.',
  gone: 'No longer waiting for an answer.',
};

function userRef(id: string): string {
  return /^[UW][A-Z0-9]{2,30}$/.test(id) ? `<@${id}>` : 'someone';
}
