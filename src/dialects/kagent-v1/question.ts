import type { Message } from '../../core/agent/model.js';
import type { Question } from '../../core/ports.js';
import { cut, visibleText } from './display.js';
import { type HitlRequest, visibleTools } from './hitl.js';

/**
 * A kagent pause as the engine's structured question. The text is our own plain summary:
 * kagent's hint text part is display-only and never parsed; a surface that renders approvals
 * reads the typed request from `payload`.
 */

const NAMES_SHOWN = 10;
const NAME_MAX = 80;

function name(raw: string): string {
  return cut(visibleText(raw), NAME_MAX);
}

function listOf(names: string[]): string {
  const shown = names.slice(0, NAMES_SHOWN).map(name);
  const more = names.length - shown.length;
  return more > 0 ? `${shown.join(', ')} and ${more} more` : shown.join(', ');
}

function summary(request: HitlRequest): string {
  const subagent = request.nested?.subagent_name;
  const who = subagent ? `The sub-agent ${name(subagent)}` : 'The agent';
  if (request.type === 'ask_user_request') {
    const asks = request.questions.map((q) => visibleText(q.question)).join('\n');
    return `${who} asks:\n${asks}`;
  }
  const tools = visibleTools(request);
  const calls = tools.length === 1 ? 'a tool call' : `${tools.length} tool calls`;
  return `${who} needs approval for ${calls}: ${listOf(tools.map((t) => t.name))}`;
}

/**
 * Stable per pause: kagent builds a new status message (a fresh messageId) for every pause, and
 * the same pause read again (GetTask after the stream) keeps it. Without a messageId, the
 * visible ids identify the pending calls.
 */
function keyOf(message: Message, request: HitlRequest): string {
  if (message.messageId !== '') return `hitl:m:${message.messageId}`;
  const ids = request.type === 'ask_user_request' ? [request.id] : visibleTools(request).map((t) => t.id);
  return `hitl:${request.type}:${ids.join(',')}`;
}

export function questionOf(message: Message, request: HitlRequest): Question {
  const question: Question = {
    kind: 'structured',
    text: summary(request),
    key: keyOf(message, request),
    payload: request,
  };
  if (request.type === 'tool_approval_request') question.approval = true;
  // One question with offered answers: its choices are the question's. Several questions keep
  // theirs per question in the payload.
  if (request.type === 'ask_user_request' && request.questions.length === 1) {
    const choices = request.questions[0]?.choices ?? [];
    if (choices.length > 0) question.choices = [...choices];
  }
  return question;
}
