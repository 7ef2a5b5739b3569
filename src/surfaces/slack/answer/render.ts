import type { Notice, Question, ToolStep } from '../../../core/ports.js';
import { cutWithMark } from '../../../core/text.js';
import { LINK_ACTION_ID } from '../inbound/keys.js';
import { escapeSlack } from './mrkdwn.js';

/**
 * The broker's own messages in a thread: notices, questions and tool-step cards. Everything
 * that came from an agent is escaped (shown as text), and long agent text is cut so a message
 * stays within Slack's limits.
 */

export interface RenderedMessage {
  text: string;
  blocks?: unknown[];
}

const QUESTION_MAX = 3_000;
const STEP_MAX = 300;

function cut(text: string, max: number): string {
  return cutWithMark(text, max);
}

/** A notice in plain words (its text is ours, never an agent's, E-9). */
export function noticeMessage(notice: Notice): RenderedMessage {
  const text = escapeSlack(notice.text);
  if (notice.link === undefined) return { text };
  // A link button opens the page in the browser; Slack still sends the click, acknowledged as
  // LINK_ACTION_ID (inbound/keys.ts).
  return {
    text,
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text } },
      {
        type: 'actions',
        elements: [
          {
            type: 'button',
            action_id: LINK_ACTION_ID,
            text: { type: 'plain_text', text: cut(notice.link.label, 75) },
            url: notice.link.url,
            style: 'primary',
          },
        ],
      },
    ],
  };
}

/** A question from the agent; the next reply in the thread answers it. */
export function questionMessage(question: Question): RenderedMessage {
  const lines = [`*The agent asks:*`, escapeSlack(cut(question.text, QUESTION_MAX))];
  if (question.choices !== undefined && question.choices.length > 0) {
    lines.push(`Options: ${question.choices.map((c) => escapeSlack(cut(c, 200))).join(' · ')}`);
  }
  lines.push('_Reply in this thread to answer._');
  return { text: lines.join('\n') };
}

/** A compact card for a tool call or result: one context block. */
export function toolStepMessage(step: ToolStep): RenderedMessage {
  const name = escapeSlack(cut(step.toolName, 100));
  // In a code span nothing the agent wrote is formatted; backticks would end it early.
  const summary = escapeSlack(cut(step.summary, STEP_MAX).replace(/`/g, "'"));
  const head =
    step.kind === 'call' ? `:hammer_and_wrench: *${name}*` : `:white_check_mark: *${name}* returned`;
  const line = summary === '' ? head : `${head} \`${summary}\``;
  return {
    text: step.kind === 'call' ? `Tool call: ${name}` : `Tool result: ${name}`,
    blocks: [{ type: 'context', elements: [{ type: 'mrkdwn', text: line }] }],
  };
}
