import type { AnswerResult } from '../core/ports.js';
import type { SessionEngine } from '../core/session/engine.js';
import {
  askUserResponse,
  HitlReplyError,
  hitlRequestOf,
  toolApprovalResponse,
} from '../dialects/kagent-v1/index.js';
import type { ApprovalCounters } from '../surfaces/slack/index.js';
import type { AnswerStructured, StructuredAnswerRequest } from '../surfaces/webchat/index.js';

/**
 * The web chat's structured answers, built as kagent-v1 replies (the one approval contract the
 * broker reads) and handed to the engine, which takes one decision per question.
 */
export function kagentAnswerer(
  engine: Pick<SessionEngine, 'answer'>,
  counters?: Pick<ApprovalCounters, 'approvalDecided'>,
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
        counters?.approvalDecided(request.binding, decision.approved ? 'approved' : 'denied', 'webchat');
    }
    return result;
  };
}
