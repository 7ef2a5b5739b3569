import type { Message } from '../../core/agent/model.js';
import { argumentsHash } from '../../core/approval-audit.js';
import type { Question, StructuredForm } from '../../core/question.js';
import { cut, prettyJson, visibleText } from './display.js';
import { type HitlRequest, visibleTools } from './hitl.js';

/**
 * A kagent pause as the engine's structured question. The text is our own plain summary:
 * kagent's hint text part is display-only and never parsed; a surface draws the neutral form
 * (core/question.ts), and the request is kept as the question's reply data.
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
  // The request itself is what a reply is built from (replies.ts), and what formOf reads back.
  return {
    kind: 'structured',
    text: summary(request),
    key: keyOf(message, request),
    form: formOf(request),
    reply: request,
  };
}

/** Pretty arguments longer than this are cut for display (the audit keeps their digest). */
export const ARGS_MAX_CHARS = 4_000;

/**
 * The neutral form of a kagent request: the visible tool calls (the sub-agent's own when it
 * paused) with their arguments as pretty JSON, or the ask_user questions. Texts are the agent's
 * as they are (choices go back verbatim in the answer); surfaces make them visible and cut them.
 */
export function formOf(request: HitlRequest): StructuredForm {
  const subagent = request.nested?.subagent_name;
  const from = typeof subagent === 'string' && subagent !== '' ? { subagent } : {};
  if (request.type === 'ask_user_request') {
    return {
      kind: 'ask',
      ...from,
      items: request.questions.map((q) => ({
        question: q.question,
        choices: [...q.choices],
        multiple: q.multiple,
      })),
    };
  }
  return {
    kind: 'approval',
    hint: request.hint ?? '',
    ...from,
    calls: visibleTools(request).map((tool) => {
      const args = prettyJson(tool.args);
      return {
        id: tool.id,
        callId: tool.call_id,
        name: tool.name,
        args: cut(args, ARGS_MAX_CHARS),
        argsCut: args.length > ARGS_MAX_CHARS,
        argsSha256: argumentsHash(tool.args),
      };
    }),
  };
}
