import type { StreamEvent, TaskStatus } from '../../core/agent/model.js';
import type { Dialect, PauseReading, StructuredForm, ToolStep } from '../../core/ports.js';
import { a2aDialect } from '../a2a.js';
import { toolStepsOf } from '../tool-steps.js';
import { hitlRequestOf, readHitl } from './hitl.js';
import { formOf, questionOf } from './question.js';
import { buildReply, messageExtensions } from './replies.js';

/**
 * ADK's own plumbing, not a tool the person asked for: the confirmation call behind a pause
 * (and its response after the answer), and the credential request behind auth-required.
 */
const PLUMBING: ReadonlySet<string> = new Set(['adk_request_confirmation', 'adk_request_credential']);

/**
 * The kagent-v1 dialect: a pause is kagent's HITL payload in the status message; a pause
 * without one is read as on the generic dialect (a text question), so a kagent agent that asks
 * in plain text still works. A HITL message that is malformed is `unsupported`: the engine
 * cancels the task and tells the thread.
 */
export const kagentV1Dialect: Dialect = {
  name: 'kagent-v1',

  readPause(status: TaskStatus, lastQuestionKey: string | null): PauseReading {
    const reading = readHitl(status.message);
    if (reading.kind === 'none' || status.message === undefined) {
      return a2aDialect.readPause(status, lastQuestionKey);
    }
    if (reading.kind === 'invalid') return { kind: 'unsupported', reason: reading.reason };
    const question = questionOf(status.message, reading.request);
    if (question.key === lastQuestionKey) {
      return { kind: 'unsupported', reason: 'the agent asked the same question again' };
    }
    return { kind: 'question', question };
  },

  toolSteps(event: StreamEvent): readonly ToolStep[] {
    const steps = toolStepsOf(event);
    return steps.length === 0 ? steps : steps.filter((step) => !PLUMBING.has(step.toolName));
  },

  messageExtensions,

  buildReply,

  formOf(reply: unknown): StructuredForm | undefined {
    const request = hitlRequestOf(reply);
    return request === undefined ? undefined : formOf(request);
  },
};
