import type { TaskStatus } from '../core/agent/model.js';
import type { Dialect, PauseReading } from '../core/ports.js';
import { toolStepsOf } from './tool-steps.js';

/**
 * The generic dialect: plain A2A, no extension (DT-4: it speaks none). A question is an
 * input-required status whose message is made only of non-empty text parts and whose
 * messageId or timestamp differs from the last question's; anything else cannot be shown.
 */
export const a2aDialect: Dialect = {
  name: 'a2a',

  readPause(status: TaskStatus, lastQuestionKey: string | null): PauseReading {
    const message = status.message;
    if (message === undefined || message.parts.length === 0) {
      return { kind: 'unsupported', reason: 'the agent paused without a question' };
    }
    const texts: string[] = [];
    for (const part of message.parts) {
      if (part.kind !== 'text' || part.text.trim() === '') {
        return { kind: 'unsupported', reason: 'the question has parts other than text' };
      }
      texts.push(part.text);
    }
    const key = message.messageId !== '' ? `m:${message.messageId}` : `t:${status.timestamp ?? ''}`;
    if (key === lastQuestionKey) {
      return { kind: 'unsupported', reason: 'the agent asked the same question again' };
    }
    return { kind: 'question', question: { kind: 'text', text: texts.join('\n'), key } };
  },

  toolSteps: toolStepsOf,

  messageExtensions: () => [],
};
