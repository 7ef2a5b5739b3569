import type { TaskStatus } from './agent/model.js';

/**
 * E-10: a failed task's category, read only from the status message's text (at most 32 parts
 * and 4096 characters) and the metadata keys code, error_code and kagent_error_code. The text
 * is read to classify, never shown (E-9).
 */
export type FailureCategory = 'context limit' | 'rate limit' | 'authentication' | 'timeout' | 'permission';

const MAX_PARTS = 32;
const MAX_CHARS = 4096;
const CODE_KEYS = ['code', 'error_code', 'kagent_error_code', 'adk_error_code'] as const;

const RULES: ReadonlyArray<[FailureCategory, RegExp]> = [
  [
    'context limit',
    /context[ _-]?(length|window|limit)|token[ _-]?limit|too many tokens|maximum context|prompt is too long/i,
  ],
  ['rate limit', /rate[ _-]?limit|too many requests|quota|resource[ _-]?exhausted|\b429\b/i],
  ['authentication', /unauthori[sz]ed|unauthenticated|authentication|invalid api[ _-]?key|\b401\b/i],
  ['timeout', /time[ _-]?out|timed out|deadline[ _-]?exceeded/i],
  ['permission', /permission|forbidden|access[ _-]?denied|not allowed|\b403\b/i],
];

function boundedText(status: TaskStatus): string {
  const parts = status.message?.parts ?? [];
  let out = '';
  for (const part of parts.slice(0, MAX_PARTS)) {
    if (part.kind !== 'text') continue;
    out += `${part.text}\n`;
    if (out.length >= MAX_CHARS) return out.slice(0, MAX_CHARS);
  }
  return out;
}

function codes(status: TaskStatus): string {
  const metadata = status.message?.metadata ?? {};
  return CODE_KEYS.map((k) => metadata[k])
    .filter((v): v is string | number => typeof v === 'string' || typeof v === 'number')
    .map((v) => String(v).slice(0, 200))
    .join(' ');
}

export function failureCategory(status: TaskStatus): FailureCategory | undefined {
  // Codes are the agent's own classification: they win over free text.
  for (const source of [codes(status), boundedText(status)]) {
    if (source === '') continue;
    for (const [category, pattern] of RULES) if (pattern.test(source)) return category;
  }
  return undefined;
}
