import type { EngineEvent } from '../../src/core/events.js';
import { type Harness, type HarnessOptions, startHarness } from '../helpers/engine-harness.js';
import {
  answer,
  type Behaviour,
  type CardOptions,
  dropAfter,
  dropBeforeHeaders,
  type WireVersion,
} from '../peers/contract-agent/contract-agent.js';

/**
 * The fault matrix's stages: where in a turn's life a fault is injected, and how a scenario
 * reaches that point against the contract agent. Each stage arranges the agent so that its
 * next call of that kind misbehaves, then starts the turn that will meet it.
 */

export type Stage = 'card' | 'send' | 'stream' | 'get' | 'subscribe' | 'cancel' | 'list' | 'answer';

export const STAGES: readonly Stage[] = [
  'card',
  'send',
  'stream',
  'get',
  'subscribe',
  'cancel',
  'list',
  'answer',
];

/** Text agents put into their errors: it must never reach the thread (E-9). */
export const AGENT_TEXT = 'AGENT-SECRET-ERROR-TEXT';

export function methods(version: WireVersion) {
  return version === '1.0'
    ? {
        send: 'SendStreamingMessage',
        get: 'GetTask',
        subscribe: 'SubscribeToTask',
        cancel: 'CancelTask',
        list: 'ListTasks',
      }
    : {
        send: 'message/stream',
        get: 'tasks/get',
        subscribe: 'tasks/resubscribe',
        cancel: 'tasks/cancel',
        list: 'ListTasks (absent in 0.3)',
      };
}

/**
 * What a fault is, at a stage: agent behaviours for the stage's calls (and, to replace how the
 * stage reaches them, for the send before), or card options for the card.
 */
export type Fault = { call: Behaviour[]; send?: Behaviour[] } | { card: CardOptions };

export interface Run {
  h: Harness;
  sessionId: string;
  /** The turn the fault meets. */
  turnId: string;
  events: EngineEvent[];
}

const THREAD = 'fault-thread';

/**
 * Starts a harness, arranges the stage, injects the fault and starts the turn that meets it.
 * The stage 'list' first runs a clean turn so the thread has a context (ListTasks needs one);
 * 'cancel' and 'answer' pause on a question first.
 */
export async function arrange(
  version: WireVersion,
  stage: Stage,
  fault: Fault,
  options: Partial<HarnessOptions> = {},
): Promise<Run> {
  const questionTimeoutMs = stage === 'cancel' ? 150 : null;
  const h = await startHarness({
    version,
    settings: { questionTimeoutMs },
    client: { timeouts: { bodyIdleMs: 300, callTotalMs: 600, cardTotalMs: 600, streamTotalMs: 3_000 } },
    ...options,
  });
  const m = methods(version);
  const calls = 'call' in fault ? fault.call : [];
  if ('card' in fault) h.agent.setCard(fault.card);
  else await h.client.card();
  let ts = 1;
  const say = (text: string) => h.say(THREAD, `${ts++}.0`, text);
  switch (stage) {
    case 'card':
    case 'send': {
      h.agent.enqueueFor(m.send, ...calls);
      const { sessionId, turnId } = await say('the turn');
      return { h, sessionId, turnId, events: h.events };
    }
    case 'stream': {
      h.agent.enqueueFor(m.send, ...calls);
      const { sessionId, turnId } = await say('the turn');
      return { h, sessionId, turnId, events: h.events };
    }
    case 'get':
    case 'subscribe': {
      // The stream drops once the task is named and working: the engine follows it.
      h.agent.enqueueFor(
        m.send,
        ...('call' in fault && fault.send !== undefined ? fault.send : [dropAfter(2)]),
      );
      h.agent.enqueueFor(stage === 'get' ? m.get : m.subscribe, ...calls);
      const { sessionId, turnId } = await say('the turn');
      return { h, sessionId, turnId, events: h.events };
    }
    case 'cancel': {
      // A question nobody answers: it times out and the task is cancelled.
      h.agent.enqueueFor(m.send, answer({ state: 'input-required', statusText: 'which one?' }));
      h.agent.enqueueFor(m.cancel, ...calls);
      const { sessionId, turnId } = await say('the turn');
      return { h, sessionId, turnId, events: h.events };
    }
    case 'answer': {
      h.agent.enqueueFor(m.send, answer({ state: 'input-required', statusText: 'which one?' }));
      const first = await say('the turn');
      await h.surface.waitFor(
        () => h.surface.of(first.sessionId, 'question').length > 0,
        8_000,
        'the question to be asked',
      );
      h.agent.enqueueFor(m.send, ...calls);
      const reply = await say('the blue one');
      return { h, sessionId: reply.sessionId, turnId: reply.turnId, events: h.events };
    }
    case 'list': {
      const first = await say('a first turn, for a context');
      await settledTurn(h, first.turnId);
      // The next send's outcome is unknown: the engine looks for it with ListTasks.
      h.agent.enqueueFor(m.send, dropBeforeHeaders({ createTask: true }));
      h.agent.enqueueFor(m.list, ...calls);
      const { sessionId, turnId } = await say('the turn');
      return { h, sessionId, turnId, events: h.events };
    }
  }
}

export async function settledTurn(h: Harness, turnId: string, timeoutMs = 10_000): Promise<EngineEvent> {
  await h.surface.waitFor(
    () => h.events.some((e) => e.type === 'turn.settled' && e.turnId === turnId),
    timeoutMs,
    `turn ${turnId} to settle`,
  );
  return h.events.find((e) => e.type === 'turn.settled' && e.turnId === turnId) as EngineEvent;
}

/** The outcome the turn settled with ('completed', 'error:…', 'input-required', …). */
export function outcomeOf(run: Run): string | undefined {
  const e = run.events.find((x) => x.type === 'turn.settled' && x.turnId === run.turnId);
  return e?.type === 'turn.settled' ? e.outcome : undefined;
}

/** Everything the thread shows, as text. */
export function shownText(run: Run): string {
  return run.h.surface.messages.map((m) => m.text).join('\n');
}

/** The process is alive and serves: a new thread, with the agent healed, gets its answer. */
export async function stillServes(run: Run): Promise<void> {
  const { h } = run;
  h.agent.clear();
  h.agent.setCard({});
  const { sessionId, turnId } = await h.say('after-the-fault', '1.0', 'are you there?');
  await settledTurn(h, turnId, 10_000);
  const [shown] = h.surface.of(sessionId, 'answer');
  if (shown?.final !== true || !shown.text.includes('are you there?')) {
    throw new Error(`the broker did not answer after the fault: ${JSON.stringify(shown)}`);
  }
}
