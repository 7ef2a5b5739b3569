import type { AnswerResult, AnswerStructured, StructuredAnswerRequest } from '../core/ports.js';
import type { SessionEngine } from '../core/session/engine.js';
import {
  askUserResponse,
  HitlReplyError,
  hitlRequestOf,
  toolApprovalResponse,
} from '../dialects/kagent-v1/index.js';

/** Where decisions taken are counted (observability's BrokerMetrics). */
export interface DecisionCounter {
  approvalDecided(binding: string, decision: 'approved' | 'denied', surface: string): void;
}

/**
 * Structured answers, built as kagent-v1 replies (the one approval contract the broker reads)
 * and handed to the engine, which takes one decision per question. Every surface that shows
 * structured questions (Slack, the web chat) is given this one; each decision the engine took
 * is counted here, by the surface it came from.
 */
export function kagentAnswerer(
  engine: Pick<SessionEngine, 'answer'>,
  counter?: DecisionCounter,
): AnswerStructured {
  return async (request: StructuredAnswerRequest): Promise<AnswerResult> => {
    const hitl = hitlRequestOf(request.payload);
    if (hitl === undefined)
      throw new HitlReplyError('hitl_wrong_request', 'the question is not a kagent request');
    const reply =
      request.reply.type === 'tool_approval'
        ? toolApprovalResponse(hitl, request.reply.decisions)
        : askUserResponse(hitl, request.reply.answers);
    const result = await engine.answer({
      key: request.key,
      binding: request.binding,
      questionKey: request.questionKey,
      actor: request.actor,
      text: reply.text,
      metadata: reply.metadata,
    });
    // Counted once the engine took the decision (a second press is a duplicate, not counted).
    if (result.status === 'accepted' && request.reply.type === 'tool_approval') {
      for (const decision of request.reply.decisions)
        counter?.approvalDecided(
          request.binding,
          decision.approved ? 'approved' : 'denied',
          request.key.surface,
        );
    }
    return result;
  };
}
