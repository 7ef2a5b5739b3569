/**
 * A question an agent paused on, in the one shape every chat surface draws and reads (Q-1, Q-3,
 * the dialect that reads an agent's pause writes it (Dialect.readPause), the engine keeps
 * it with the session, a surface shows it and collects a person's reply in the same shape, and
 * the dialect turns that reply into the agent's message (Dialect.buildReply). No surface reads a
 * dialect's own payload, so a new surface needs no dialect to draw a card.
 *
 * Everything in a form is the agent's text, untrusted: plain text, disguising characters made
 * visible, bounded; a surface shows it as plain text (or escapes it for its own markup).
 */

/** A tool call the agent wants to run, as a person decides on it. */
export interface ToolCallToDecide {
  /** What a decision names: the dialect's id for the call, unique within its question. */
  id: string;
  /** The call's id in the agent's own records, for the audit; absent when the agent gave none. */
  callId?: string;
  /** The tool's name, as the agent wrote it. */
  name: string;
  /** The arguments as display text (pretty JSON), cut at a bound. */
  args: string;
  /** Whether `args` was cut. */
  argsCut: boolean;
  /** sha256 (hex) of the arguments as canonical JSON: what the audit records of them. */
  argsSha256: string;
}

/** One question of several asked at once: answered with choices and/or words. */
export interface AskItem {
  question: string;
  /** Offered answers; none: the answer is in words. */
  choices: string[];
  /** Several choices may be picked. */
  multiple: boolean;
}

/** What a structured question asks. */
export type StructuredForm =
  /** Tool calls to approve or deny, each on its own. */
  | { kind: 'approval'; hint: string; subagent?: string; calls: ToolCallToDecide[] }
  /** Questions to answer, one answer (a list of strings) each, in order. */
  | { kind: 'ask'; subagent?: string; items: AskItem[] };

/** A question the dialect found in a paused task. */
export interface Question {
  /** text: the next reply in the thread answers it. structured: its form, answered in the chat's own controls. */
  kind: 'text' | 'structured';
  /** The question as a sentence, plain text (the agent's words, or the dialect's summary of a form). */
  text: string;
  /** Stable per question, so the same question is never asked twice. */
  key: string;
  /** Offered answers of a text question, when the agent listed some. */
  choices?: string[];
  /** A structured question's form. */
  form?: StructuredForm;
  /** What the dialect needs, beside the form, to build the reply (opaque outside it; JSON). */
  reply?: unknown;
}

/** Whether a question asks to approve tool calls (a Binding may not allow those). */
export function isApproval(question: Pick<Question, 'form'>): boolean {
  return question.form?.kind === 'approval';
}

/** One decision on one tool call shown for approval. */
export interface ToolDecision {
  /** The call's `id`, as shown. */
  id: string;
  approved: boolean;
  /** Why it was denied; only on a denial. */
  reason?: string;
}

/** A person's reply to a structured question, as a surface collected it from its own controls. */
export type StructuredReply =
  /** One decision per tool call shown. */
  | { type: 'tool_approval'; decisions: ToolDecision[] }
  /** One list of strings per question asked, in order. */
  | { type: 'ask_user'; answers: string[][] };

/** The message a dialect built from a reply: its one text part and its metadata. */
export interface BuiltReply {
  /** Shown and logged: a plain summary of the decisions, with no label line (S-6). */
  text: string;
  metadata: Record<string, unknown>;
}
