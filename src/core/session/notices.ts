import type { FailureCategory } from '../failure.js';
import type { Notice, NoticeKind } from '../ports.js';

/** Notices whose words carry a detail (made by their own functions below). */
type DynamicKind =
  | 'task-failed'
  | 'agent-refused'
  | 'identity-exchange-refused'
  | 'sign-in-required'
  | 'sign-in-timeout';

/** The broker's own words in a thread. Never an agent's error message (E-9). */
const TEXT: Record<Exclude<NoticeKind, DynamicKind>, string> = {
  'no-output': 'The agent finished without any output.',
  'task-rejected': 'The agent rejected the task.',
  'task-canceled': "The agent's task was canceled.",
  'context-changed': 'The agent no longer has this conversation. It continues in a new one.',
  'session-gone': 'The agent no longer has this session. Your next message starts a new conversation.',
  'session-gone-carried':
    'The agent no longer has this session (it may have restarted and forgotten it), so your message starts a new conversation.',
  'thread-forgotten':
    'This thread was idle longer than conversations are kept here, so it was forgotten: your message starts a new conversation with the agent.',
  'agent-busy': 'The agent is busy. Your message will be sent as soon as it accepts it.',
  'agent-unreachable': 'Your message was not delivered: the agent could not be reached.',
  'credentials-rejected':
    "The agent rejected Agent Kourier's credentials. Ask the operator to check this channel's Binding.",
  'identity-refused': 'The agent refused the identity of this conversation.',
  'identity-provider-unavailable':
    'The identity provider that vouches for you to this agent is not answering. Your message is kept and will be sent as soon as it answers.',
  'question-unsupported': 'The agent asked for input that cannot be shown here, so its task was canceled.',
  'question-timeout': 'The question was not answered in time, so the agent’s task was canceled.',
  'answer-rejected': 'The agent rejected the answer, so its task was canceled.',
  'cancel-failed': "Agent Kourier could not cancel the agent's task; it may still be running.",
  'decision-not-sent':
    "An answer to the agent's question was not sent: the task that asked it had ended (stopped or timed out) first.",
  'binding-removed': 'This channel is no longer connected to an agent.',
  'approval-not-allowed':
    'The agent asked for approval to run a tool, but tool approvals are not enabled for this agent, so its task was canceled.',
  'poll-timeout': 'The agent did not finish within the time its polling allows, so its task was canceled.',
};

export function notice(kind: Exclude<NoticeKind, DynamicKind>, turnId?: string): Notice {
  return turnId === undefined ? { kind, text: TEXT[kind] } : { kind, text: TEXT[kind], turnId };
}

/** T-3: "The agent's task failed." with a category when one is recognised (E-10). */
export function taskFailed(category: FailureCategory | undefined, turnId?: string): Notice {
  const text = category === undefined ? "The agent's task failed." : `The agent's task failed (${category}).`;
  return turnId === undefined ? { kind: 'task-failed', text } : { kind: 'task-failed', text, turnId };
}

/** DT-1, DT-3, DT-4: the agent's card makes it unusable; `reason` is our own error message. */
export function agentRefused(reason: string, turnId?: string): Notice {
  const text = `The agent cannot be used: ${reason}.`;
  return turnId === undefined ? { kind: 'agent-refused', text } : { kind: 'agent-refused', text, turnId };
}

/**
 * A per-person identity's exchange was refused at the identity provider: `providerError` is its
 * error code (a short token the exchanger checked), `agent` the AgentBackend's name.
 */
export function identityExchangeRefused(agent: string, providerError: string, turnId?: string): Notice {
  const text =
    `Your message was not sent to ${agent}: the identity provider refused to vouch for you to it (${providerError}). ` +
    'Nothing was sent under another identity. Write again to try again, or ask the operator to check your access.';
  return turnId === undefined
    ? { kind: 'identity-exchange-refused', text }
    : { kind: 'identity-exchange-refused', text, turnId };
}

/** The person must sign in at the identity provider before their message goes to `agent`. */
export function signInRequired(agent: string, url: string, turnId?: string): Notice {
  const text =
    `To send your message to ${agent}, sign in once at your organisation's identity provider with the same email as here. ` +
    'Your message is held until you do, for up to 15 minutes.';
  const link = { label: 'Sign in', url };
  return turnId === undefined
    ? { kind: 'sign-in-required', text, link }
    : { kind: 'sign-in-required', text, link, turnId };
}

/** Nobody signed in in time: the held message was not sent. */
export function signInTimeout(agent: string, turnId?: string): Notice {
  const text = `Your message was not sent to ${agent}: no sign-in came in time. Write again for a new sign-in link.`;
  return turnId === undefined ? { kind: 'sign-in-timeout', text } : { kind: 'sign-in-timeout', text, turnId };
}
