/**
 * What the demo agent says and does, as data: the broker's every path can be seen in a minute.
 * Kept apart from the server so the texts and tool calls are easy to read and to change.
 */

export const HITL_URI = 'https://kagent.dev/extensions/hitl/v1';

export type Scenario = 'answer' | 'long' | 'question' | 'approval' | 'failure';

/**
 * What the person wrote: the text without the label line the broker sends in front of it
 * (`[Web chat: Local user (webchat-local)]`), which is the broker's, not the person's words.
 */
export function personWords(text: string): string {
  return text
    .split('\n')
    .slice(text.startsWith('[') ? 1 : 0)
    .join('\n')
    .trim();
}

/**
 * Picks the scenario from the person's words: the documented words only (`ask`, `approve`,
 * `fail`, `long`, as whole words), so ordinary text ("hello after restart") gets an answer.
 */
export function scenarioFor(text: string): Scenario {
  const words = personWords(text).toLowerCase();
  if (/\bfail\b/.test(words)) return 'failure';
  if (/\bapprove\b/.test(words)) return 'approval';
  if (/\bask\b/.test(words)) return 'question';
  if (/\blong\b/.test(words)) return 'long';
  return 'answer';
}

export interface DemoTool {
  id: string;
  callId: string;
  name: string;
  args: Record<string, unknown>;
}

/** The two-tool approval the demo asks for (kagent's hitl/v1 tool_approval_request). */
export const APPROVAL_TOOLS: DemoTool[] = [
  {
    id: 'demo-confirm-1',
    callId: 'call-restart',
    name: 'restart_deployment',
    args: { namespace: 'shop', name: 'checkout' },
  },
  {
    id: 'demo-confirm-2',
    callId: 'call-delete',
    name: 'delete_pod',
    args: { namespace: 'shop', name: 'checkout-7c9f-old' },
  },
];

export const QUESTION = 'Which environment should I look at: staging or production?';

/** The streamed answer, in the chunks an LLM would send (Markdown, as agents write it). */
export function answerChunks(prompt: string): string[] {
  const topic = prompt.trim().slice(0, 120) || 'your request';
  const text = [
    `**Agent Kourier demo agent** here. You said: _${topic}_\n\n`,
    'This answer streams in small artifact chunks, the way a real agent writes. ',
    'The broker keeps one message per turn and grows it as the text arrives.\n\n',
    'Try these words to see the other paths:\n',
    '- `ask` — the agent asks a question and waits for your reply\n',
    '- `approve` — the agent asks to run two tools; approve one, deny the other\n',
    '- `fail` — the task fails, and the broker says so in plain words\n',
    '- `long` — a long answer that takes a while: stop it with the Stop button\n\n',
    'Point `url` in the local manifest at your own agent to talk to it instead.',
  ].join('');
  return splitWords(text, 3);
}

/** A long answer (some seconds to stream): something to press Stop on. */
export function longAnswerChunks(): string[] {
  const paragraphs = Array.from(
    { length: 40 },
    (_, i) =>
      `${i + 1}. A long answer streams for a while, as a thorough agent would; press Stop to cancel its task.\n\n`,
  );
  return splitWords(`**A long answer.**\n\n${paragraphs.join('')}That is all.`, 3);
}

function splitWords(text: string, wordsPerChunk: number): string[] {
  const words = text.split(/(?<=\s)/);
  const chunks: string[] = [];
  for (let i = 0; i < words.length; i += wordsPerChunk)
    chunks.push(words.slice(i, i + wordsPerChunk).join(''));
  return chunks;
}
