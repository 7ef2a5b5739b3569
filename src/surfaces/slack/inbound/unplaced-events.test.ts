import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../../core/clock.js';
import type { AgentApi } from '../agent-app/agent-api.js';
import { FEEDBACK_ACTION, FeedbackDesk } from '../agent-app/feedback.js';
import { AgentStops } from '../agent-app/stop.js';
import { SuggestedPrompts } from '../agent-app/suggested-prompts.js';
import type { SlackSurface } from '../answer/surface.js';
import type { SlackApi } from '../web-api/client.js';

/**
 * In OAuth mode (no single bot-token team) every envelope must name its workspace: an event
 * that does not cannot be placed, so each agent-app desk ignores it — and says so in the log,
 * touching no engine and no Slack method. The same event naming its team is handled.
 */

const clock = systemClock;

function recordingLogger(): { logger: Logger; messages: string[] } {
  const messages: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) messages.push(JSON.parse(line).msg);
      done();
    },
  });
  return { logger: pino({ level: 'info' }, sink), messages };
}

/** Counts what a desk asked of its ports; every call answers "nothing here". */
function ports() {
  const calls: string[] = [];
  const inbound = {
    claimEvent: async () => {
      calls.push('claimEvent');
      return false;
    },
    findSession: async () => {
      calls.push('findSession');
      return undefined;
    },
    findTurn: async () => {
      calls.push('findTurn');
      return undefined;
    },
    cancel: async () => {
      calls.push('cancel');
      return { status: 'nothing-running' as const, sessionId: 'unused' };
    },
  };
  const bindings = {
    forDirectMessages: () => {
      calls.push('forDirectMessages');
      return undefined;
    },
  };
  return { calls, inbound, bindings };
}

const stopEvent = {
  event_id: 'Ev1',
  event: { type: 'agent_session_stopped', channel: 'C1', user: 'U1', thread_ts: '1.2' },
};
const homeOpened = {
  event_id: 'Ev2',
  event: { type: 'app_home_opened', user: 'U1', channel: 'D1', tab: 'messages' },
};
const feedbackPress = {
  user: { id: 'U1' },
  channel: { id: 'C1' },
  actions: [{ action_id: FEEDBACK_ACTION, value: 'positive:turn-1' }],
};

describe('agent-app events in OAuth mode that name no workspace', () => {
  it('a stop press is ignored with a warning; with its team it is claimed', async () => {
    const p = ports();
    const { logger, messages } = recordingLogger();
    const desk = new AgentStops({
      inbound: p.inbound,
      surface: {} as SlackSurface,
      api: {} as SlackApi,
      clock,
      logger,
    });
    await desk.handle(stopEvent);
    expect(p.calls).toEqual([]);
    expect(messages).toContain('an agent_session_stopped event that names no workspace was ignored');
    await desk.handle({ ...stopEvent, team_id: 'T1' });
    expect(p.calls).toEqual(['claimEvent']);
  });

  it('opening the Messages tab is ignored with a warning; with its team the DM binding is looked up', async () => {
    const p = ports();
    const { logger, messages } = recordingLogger();
    const desk = new SuggestedPrompts({
      agents: {} as AgentApi,
      bindings: p.bindings as never,
      describe: async () => undefined,
      clock,
      logger,
    });
    await desk.opened(homeOpened);
    expect(p.calls).toEqual([]);
    expect(messages).toContain('an app_home_opened event that names no workspace was ignored');
    await desk.opened({ ...homeOpened, team_id: 'T1' });
    expect(p.calls).toEqual(['forDirectMessages']);
  });

  it('a feedback press is ignored with a warning; with its team the answer is looked up', async () => {
    const p = ports();
    const { logger, messages } = recordingLogger();
    const desk = new FeedbackDesk({ inbound: p.inbound, clock, logger });
    await desk.press(feedbackPress);
    expect(p.calls).toEqual([]);
    expect(messages).toContain('a feedback press that names no workspace was ignored');
    await desk.press({ ...feedbackPress, team: { id: 'T1' } });
    expect(p.calls).toEqual(['findTurn']);
  });
});
