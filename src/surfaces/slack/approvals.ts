import type { Logger } from 'pino';
import { z } from 'zod';
import { type Actor, actorIdOf } from '../../core/compose.js';
import { KourierError } from '../../core/errors.js';
import type {
  AnswerResult,
  ChatTarget,
  Clock,
  Notice,
  QuestionPrompt,
  StructuredAnswer,
} from '../../core/ports.js';
import type { ToolApprovalSettings } from '../../core/registry.js';
import { type SessionKey, type SessionStore, sessionIdOf } from '../../core/store.js';
import {
  type AskUserRequest,
  askUserResponse,
  type HitlRequest,
  type HitlTool,
  hitlRequestOf,
  type ToolDecision,
  toolApprovalResponse,
  visibleTools,
} from '../../dialects/kagent-v1/index.js';
import { type ApproverGroups, GROUP_ID } from './approvers.js';
import { SURFACE } from './inbound.js';
import type { People } from './people.js';
import { argumentsHash, type PromptAction, type PromptTokens } from './prompt-token.js';
import {
  ACTION_PREFIX,
  answerModal,
  approvalLayout,
  choiceButtons,
  decodePlace,
  denyModal,
  type Gate,
  type Mark,
  type ModalPlace,
  type PromptStatus,
  promptMessage,
  REASON_ACTION,
  REASON_BLOCK,
  readAnswerModal,
  readMarks,
} from './prompt-view.js';
import type { RenderedMessage } from './render.js';
import { retrying, type SlackApi } from './web-api.js';

/**
 * kagent's structured questions in Slack: the prompt with its buttons, the presses,
 * the modals, and the one answer each question gets.
 *
 * - A press is authorised on every press, from the payload's user: a tool approval only by a
 *   member of the Binding's approverGroups (read from Slack, cached; a failed read refuses).
 *   Approvals enabled with no approverGroups: nobody may approve in Slack (fail closed), and the
 *   prompt says so. An ask_user question is not an approval: anyone in the thread may answer.
 * - A button carries an opaque token (prompt-token.ts); the pending question itself is the
 *   engine's, durable in the store. A press is matched against the question pending now.
 * - Decisions per tool call are collected here until every call has one (or an "all" press
 *   decides the rest); then one `engine.answer` sends them. The store keeps the first answer
 *   per question, so a double click, two approvers racing, or two replicas produce one
 *   decision; the second is told who decided. Presses of one prompt run one at a time here.
 * - Collected per-tool decisions have no effect until the answer is sent, so they are kept in
 *   memory and on the prompt message itself: each decided call's block records who decided what
 *   (`readMarks`), and Slack sends the message's blocks with every press, in a payload it signs.
 *   A press reaching a process that did not see them (after a restart, on another replica)
 *   adopts them, so "Approve the rest" never overrides a denial the prompt shows. A denial's
 *   reason comes back as shown (cut to 500 characters). Two replicas updating one prompt at the
 *   same instant can drop one mark from the message: that call shows undecided and is pressed
 *   again; nothing is ever sent that the prompt did not show decided.
 * - Every decision sent is audited: a log line, a metric, and `onDecision` listeners (the
 *   cluster's controller records a Kubernetes Event on the Binding).
 */

/** What the desk needs of the rest of the broker, given when the app starts listening. */
export interface PromptDeskDeps {
  engine: { answer(input: StructuredAnswer): Promise<AnswerResult> };
  store: Pick<SessionStore, 'getSession' | 'getTurn'>;
  bindings: ApprovalBindings;
  people: People;
}

/** The tool-approval settings of a Binding. `LiveRegistry` is one. */
export interface ApprovalBindings {
  get(ref: string): { toolApprovals: ToolApprovalSettings } | undefined;
}

/** One decision on one tool call, as sent to the agent: the audit record. */
export interface ApprovalAudit {
  binding: string;
  sessionId: string;
  workspace: string;
  channel: string;
  threadTs: string;
  /** The prompt message. */
  promptTs: string;
  taskId: string;
  /** The answer turn that carried it to the agent. */
  turnId: string;
  approver: { id: string; name?: string; email?: string };
  /** When the person decided (ISO 8601). */
  decidedAt: string;
  tool: { id: string; callId: string; name: string };
  /** sha256 (hex) of the call's arguments as canonical JSON (sorted keys). */
  argumentsSha256: string;
  decision: 'approved' | 'denied';
  reason?: string;
  /** Decided with Approve all / Deny all. */
  allAtOnce: boolean;
}

export type DecisionListener = (audit: ApprovalAudit) => void;

/** Why a press was refused, for the log line and the refusal metric. */
export type RefusalReason = 'not-an-approver' | 'lookup-failed' | 'no-approver-groups' | 'approvals-disabled';

// ---- counters -----------------------------------------------------------------------------------

/**
 * Where decisions and refused presses are counted (observability's BrokerMetrics implements it,
 * as `agentkourier_approval_decisions_total` and `agentkourier_approval_refusals_total`).
 */
export interface ApprovalCounters {
  approvalDecided(binding: string, decision: 'approved' | 'denied', surface: string): void;
  approvalRefused(binding: string, reason: RefusalReason): void;
}

// ---- words --------------------------------------------------------------------------------------

export const WORDS = {
  stale: 'This prompt is no longer waiting for an answer.',
  alreadyDecided: (by: string | undefined) =>
    by === undefined ? 'This was already decided.' : `This was already decided by ${userRef(by)}.`,
  notApprover: (groups: readonly string[]) => {
    const named = groups.filter((g) => GROUP_ID.test(g)).map((g) => `<!subteam^${g}>`);
    return `Only members of ${named.join(', ')} can approve or deny these tool calls. Your press changed nothing.`;
  },
  lookupFailed:
    'Agent Kourier could not check who may approve just now, so your press was not taken. Please try again in a moment.',
  noGroups:
    'No approver groups are set for this agent, so nobody can approve tool calls in Slack. Your press changed nothing.',
  disabled: 'Tool approvals are not enabled for this agent. Your press changed nothing.',
  failed: 'Agent Kourier could not record your answer just now. Please press again in a moment.',
  timedOut: 'Not answered in time; the agent’s task was canceled.',
  rejected: 'The agent did not take the answer; its task was canceled.',
  superseded: 'No longer waiting: the agent asked something else.',
  gone: 'No longer waiting for an answer.',
};

function userRef(id: string): string {
  return /^[UW][A-Z0-9]{2,30}$/.test(id) ? `<@${id}>` : 'someone';
}

// ---- payloads -----------------------------------------------------------------------------------

const slackId = z.string().regex(/^[A-Z0-9]{2,40}$/);
const ts = z.string().regex(/^\d+\.\d+$/);

const pressSchema = z.object({
  type: z.literal('block_actions'),
  user: z.object({ id: slackId, team_id: slackId.optional() }),
  team: z.object({ id: slackId }).nullish(),
  trigger_id: z.string().optional(),
  container: z.object({ channel_id: slackId, message_ts: ts, thread_ts: ts.optional() }),
  message: z
    .object({ ts: ts.optional(), thread_ts: ts.optional(), blocks: z.array(z.unknown()).optional() })
    .optional(),
  actions: z.array(z.object({ action_id: z.string(), value: z.string().optional() })).min(1),
});

const submissionSchema = z.object({
  type: z.literal('view_submission'),
  user: z.object({ id: slackId, team_id: slackId.optional() }),
  view: z.object({
    callback_id: z.string(),
    private_metadata: z.string(),
    state: z.object({ values: z.record(z.string(), z.record(z.string(), z.unknown())) }).optional(),
  }),
});

// ---- state --------------------------------------------------------------------------------------

interface PromptState {
  sessionId: string;
  key: SessionKey;
  binding: string;
  questionKey: string;
  taskId: string;
  request: HitlRequest;
  channel: string;
  /** The prompt message; '' until it is posted. */
  ts: string;
  marks: Map<number, Mark & { allAtOnce?: boolean }>;
  status: PromptStatus;
  /** Who sent the answer (or, seen as a duplicate, who had). */
  decidedBy?: string;
  gate: Gate;
  queue: Promise<void>;
}

const MAX_PROMPTS = 10_000;

interface Place {
  team: string;
  channel: string;
  threadTs: string;
  messageTs: string;
  user: string;
}

export interface PromptDeskOptions {
  api: SlackApi;
  counters?: ApprovalCounters;
  clock: Clock;
  logger: Logger;
  tokens: PromptTokens;
  approvers: ApproverGroups;
}

export class PromptDesk {
  readonly #counters: ApprovalCounters | undefined;
  readonly #api: SlackApi;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #tokens: PromptTokens;
  readonly #approvers: ApproverGroups;
  readonly #listeners = new Set<DecisionListener>();
  /** By `${sessionId}\n${questionKey}`. */
  readonly #prompts = new Map<string, PromptState>();
  /** The latest prompt of each session. */
  readonly #latest = new Map<string, string>();
  #deps: PromptDeskDeps | undefined;
  #wired: Promise<PromptDeskDeps>;
  readonly #closed = new AbortController();
  #wire: (deps: PromptDeskDeps) => void = () => undefined;

  constructor(options: PromptDeskOptions) {
    this.#api = options.api;
    this.#counters = options.counters;
    this.#clock = options.clock;
    this.#logger = options.logger.child({ component: 'slack-prompts' });
    this.#tokens = options.tokens;
    this.#approvers = options.approvers;
    this.#wired = new Promise((resolve) => {
      this.#wire = resolve;
    });
  }

  /** Connects the desk to the engine, store and Bindings (when the app starts listening). */
  wire(deps: PromptDeskDeps): void {
    this.#deps = deps;
    this.#wire(deps);
  }

  /** Stops waiting to be wired: prompts not shown yet fail (the engine records no ref). */
  close(): void {
    this.#closed.abort(new Error('the Slack connection stopped'));
  }

  /** Calls `listener` with every decision sent to an agent; returns an unsubscribe. */
  onDecision(listener: DecisionListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Whether a question is one this desk shows (kagent's structured payload). */
  static handles(prompt: QuestionPrompt): HitlRequest | undefined {
    return prompt.question.kind === 'structured' ? hitlRequestOf(prompt.question.payload) : undefined;
  }

  // ---- showing ------------------------------------------------------------------------------

  /** Posts the prompt of a structured question; returns its ref (`channel|ts`). */
  async show(
    target: ChatTarget,
    prompt: QuestionPrompt,
    request: HitlRequest,
    post: (message: RenderedMessage) => Promise<string>,
  ): Promise<string> {
    // Prompts are shown only once presses can be taken (the engine may resume a session
    // before the app listens).
    const closed = this.#closed.signal;
    const deps =
      this.#deps ??
      (await Promise.race([
        this.#wired,
        new Promise<never>((_resolve, reject) => {
          if (closed.aborted) reject(closed.reason);
          closed.addEventListener('abort', () => reject(closed.reason), { once: true });
        }),
      ]));
    const session = await deps.store.getSession(target.sessionId);
    const binding = session?.binding ?? '';
    const state: PromptState = {
      sessionId: target.sessionId,
      key: target.key,
      binding,
      questionKey: prompt.question.key,
      taskId: prompt.taskId,
      request,
      channel: target.key.channelId,
      ts: '',
      marks: new Map(),
      status: { kind: 'open' },
      gate: this.#gate(binding, request),
      queue: Promise.resolve(),
    };
    if (state.gate.kind !== 'open' && request.type === 'tool_approval_request')
      this.#logger.warn(
        { binding, sessionId: state.sessionId, gate: state.gate.kind },
        'a tool approval was shown without buttons: nobody may approve it in Slack',
      );
    const earlier = this.#prompts.get(this.#latest.get(state.sessionId) ?? '');
    state.ts = await post(this.#render(state));
    this.#remember(state);
    if (earlier !== undefined && earlier !== state && earlier.status.kind === 'open') {
      await this.#close(earlier, WORDS.superseded);
    }
    return `${state.channel}|${state.ts}`;
  }

  /** A notice in a session: a prompt whose question is gone shows that it no longer waits. */
  async noticed(target: ChatTarget, notice: Notice): Promise<void> {
    const state = this.#prompts.get(this.#latest.get(target.sessionId) ?? '');
    if (state === undefined || state.status.kind !== 'open' || this.#deps === undefined) return;
    if (notice.kind !== 'question-timeout') {
      const session = await this.#deps.store.getSession(target.sessionId).catch(() => undefined);
      if (session?.question?.questionKey === state.questionKey) return;
    }
    const text =
      notice.kind === 'question-timeout'
        ? WORDS.timedOut
        : notice.kind === 'answer-rejected'
          ? WORDS.rejected
          : WORDS.gone;
    await this.#run(state, () =>
      state.status.kind === 'open' ? this.#close(state, text) : Promise.resolve(),
    );
  }

  // ---- presses ------------------------------------------------------------------------------

  /** A block_actions payload for one of our buttons. Never throws. */
  async press(body: unknown): Promise<void> {
    const parsed = pressSchema.safeParse(body);
    if (!parsed.success) {
      this.#logger.debug('a press that is not one of ours was ignored');
      return;
    }
    const p = parsed.data;
    const action = p.actions[0];
    if (action === undefined || !action.action_id.startsWith(ACTION_PREFIX)) return;
    const threadTs = p.container.thread_ts ?? p.message?.thread_ts;
    const place: Place = {
      team: p.team?.id ?? p.user.team_id ?? '',
      channel: p.container.channel_id,
      threadTs: threadTs ?? p.container.message_ts,
      messageTs: p.container.message_ts,
      user: p.user.id,
    };
    try {
      const found = await this.#find(place, action.value ?? '');
      if (found === undefined) {
        await this.#ephemeral(place, WORDS.stale);
        await this.#stripStale(place, p.message?.blocks);
        return;
      }
      const { state, action: what } = found;
      const shown = p.message?.blocks;
      await this.#run(state, () => {
        if (shown !== undefined) adoptShownMarks(state, shown);
        return this.#pressed(state, what, place, p.trigger_id);
      });
    } catch (error) {
      this.#logger.error({ err: errorName(error) }, 'a press on a prompt failed');
      await this.#ephemeral(place, WORDS.failed);
    }
  }

  async #pressed(
    state: PromptState,
    action: PromptAction,
    place: Place,
    triggerId: string | undefined,
  ): Promise<void> {
    if (state.status.kind !== 'open') {
      await this.#ephemeral(
        place,
        state.status.kind === 'decided' ? WORDS.alreadyDecided(state.decidedBy) : WORDS.stale,
      );
      return;
    }
    if (!(await this.#authorised(state, place))) return;
    const now = this.#clock.now();
    const tools = visibleTools(state.request);
    switch (action.kind) {
      case 'approve': {
        const mark = state.marks.get(action.index);
        if (mark !== undefined) return this.#ephemeral(place, WORDS.alreadyDecided(mark.by));
        state.marks.set(action.index, { approved: true, by: place.user, at: now });
        return this.#progress(state, place, [action.index]);
      }
      case 'approve-all': {
        const rest = tools.map((_t, i) => i).filter((i) => !state.marks.has(i));
        if (rest.length === 0) return this.#ephemeral(place, WORDS.alreadyDecided(state.decidedBy));
        for (const i of rest)
          state.marks.set(i, { approved: true, by: place.user, at: now, allAtOnce: true });
        return this.#progress(state, place, rest);
      }
      case 'deny':
      case 'deny-all': {
        const picked =
          action.kind === 'deny'
            ? [action.index]
            : tools.map((_t, i) => i).filter((i) => !state.marks.has(i));
        const decided = picked.map((i) => state.marks.get(i)).find((m) => m !== undefined);
        if (decided !== undefined || picked.length === 0)
          return this.#ephemeral(place, WORDS.alreadyDecided(decided?.by ?? state.decidedBy));
        if (triggerId === undefined) return this.#ephemeral(place, WORDS.failed);
        const view = denyModal(
          picked.map((i) => tools[i]).filter((t): t is HitlTool => t !== undefined),
          { ...modalPlace(place), token: this.#tokens.token(state.sessionId, state.questionKey, action) },
        );
        await this.#api.openView({ team: place.team, urgent: true }, { trigger_id: triggerId, view });
        return;
      }
      case 'choice': {
        if (state.request.type !== 'ask_user_request') return;
        const mark = state.marks.get(action.question);
        if (mark !== undefined) return this.#ephemeral(place, WORDS.alreadyDecided(mark.by));
        const choice = state.request.questions[action.question]?.choices[action.choice];
        if (choice === undefined) return;
        state.marks.set(action.question, { answer: [choice], by: place.user, at: now });
        return this.#progress(state, place, [action.question]);
      }
      case 'answer': {
        if (state.request.type !== 'ask_user_request') return;
        if (triggerId === undefined) return this.#ephemeral(place, WORDS.failed);
        const view = answerModal(state.request, {
          ...modalPlace(place),
          token: this.#tokens.token(state.sessionId, state.questionKey, action),
        });
        await this.#api.openView({ team: place.team, urgent: true }, { trigger_id: triggerId, view });
        return;
      }
    }
  }

  // ---- modals -------------------------------------------------------------------------------

  /**
   * Checks a submitted answer modal before it closes: the errors to show in it, or undefined
   * (then `submitted` takes it).
   */
  async checkSubmission(body: unknown): Promise<Record<string, string> | undefined> {
    const parsed = submissionSchema.safeParse(body);
    if (!parsed.success) return undefined;
    const place = decodePlace(parsed.data.view.private_metadata);
    if (place === undefined || this.#deps === undefined) return undefined;
    const session = await this.#deps.store
      .getSession(sessionIdOf(keyOf(place.team, place.channel, place.threadTs)))
      .catch(() => undefined);
    const request = hitlRequestOf(session?.question?.payload);
    if (request?.type !== 'ask_user_request') return undefined;
    const read = readAnswerModal(request, parsed.data.view.state?.values ?? {});
    return 'errors' in read ? read.errors : undefined;
  }

  /** A submitted deny or answer modal. Never throws. */
  async submitted(body: unknown): Promise<void> {
    const parsed = submissionSchema.safeParse(body);
    if (!parsed.success) return;
    const view = parsed.data.view;
    const modal = decodePlace(view.private_metadata);
    if (modal === undefined) return;
    const place: Place = {
      team: modal.team,
      channel: modal.channel,
      threadTs: modal.threadTs,
      messageTs: modal.messageTs,
      user: parsed.data.user.id,
    };
    try {
      const found = await this.#find(place, modal.token);
      if (found === undefined) {
        await this.#ephemeral(place, WORDS.stale);
        return;
      }
      const { state, action } = found;
      const values = view.state?.values ?? {};
      await this.#run(state, async () => {
        if (state.status.kind !== 'open') {
          const text = state.status.kind === 'decided' ? WORDS.alreadyDecided(state.decidedBy) : WORDS.stale;
          return this.#ephemeral(place, text);
        }
        if (!(await this.#authorised(state, place))) return;
        const now = this.#clock.now();
        if (action.kind === 'deny' || action.kind === 'deny-all') {
          const raw = (values[REASON_BLOCK]?.[REASON_ACTION] as { value?: string | null } | undefined)?.value;
          const reason = typeof raw === 'string' ? raw.trim().slice(0, 500) : '';
          const tools = visibleTools(state.request);
          const picked =
            action.kind === 'deny'
              ? [action.index]
              : tools.map((_t, i) => i).filter((i) => !state.marks.has(i));
          const decided = picked.map((i) => state.marks.get(i)).find((m) => m !== undefined);
          if (decided !== undefined || picked.length === 0)
            return this.#ephemeral(place, WORDS.alreadyDecided(decided?.by ?? state.decidedBy));
          for (const i of picked)
            state.marks.set(i, {
              approved: false,
              by: place.user,
              at: now,
              ...(reason === '' ? {} : { reason }),
              ...(action.kind === 'deny-all' ? { allAtOnce: true } : {}),
            });
          return this.#progress(state, place, picked);
        }
        if (action.kind === 'answer' && state.request.type === 'ask_user_request') {
          const read = readAnswerModal(state.request, values);
          if ('errors' in read) return;
          const filled: number[] = [];
          read.answers.forEach((answer, i) => {
            if (state.marks.has(i)) return;
            state.marks.set(i, { answer, by: place.user, at: now });
            filled.push(i);
          });
          if (filled.length === 0) return this.#ephemeral(place, WORDS.alreadyDecided(state.decidedBy));
          return this.#progress(state, place, filled);
        }
      });
    } catch (error) {
      this.#logger.error({ err: errorName(error) }, 'a submitted modal failed');
      await this.#ephemeral(place, WORDS.failed);
    }
  }

  // ---- deciding -----------------------------------------------------------------------------

  /** After marks were added by one press: send the answer when every item has one. */
  async #progress(state: PromptState, place: Place, added: number[]): Promise<void> {
    const count =
      state.request.type === 'ask_user_request'
        ? state.request.questions.length
        : visibleTools(state.request).length;
    if (state.marks.size < count) {
      await this.#update(state);
      return;
    }
    const deps = this.#deps;
    if (deps === undefined) throw new Error('prompts are not wired');
    let reply: { text: string; metadata: Record<string, unknown> };
    if (state.request.type === 'tool_approval_request') {
      const decisions: ToolDecision[] = visibleTools(state.request).map((tool, i) => {
        const mark = state.marks.get(i);
        return {
          id: tool.id,
          approved: mark?.approved === true,
          ...(mark?.reason === undefined ? {} : { reason: mark.reason }),
        };
      });
      reply = toolApprovalResponse(state.request, decisions);
    } else {
      const request: AskUserRequest = state.request;
      reply = askUserResponse(
        request,
        request.questions.map((_q, i) => [...(state.marks.get(i)?.answer ?? [])]),
      );
    }
    const actor = await deps.people.actor(place.team, place.user);
    let result: AnswerResult;
    try {
      result = await deps.engine.answer({
        key: state.key,
        binding: state.binding,
        questionKey: state.questionKey,
        actor,
        text: reply.text,
        metadata: reply.metadata,
      });
    } catch (error) {
      // Nothing was recorded: this press's marks go, so it can be pressed again.
      for (const i of added) state.marks.delete(i);
      await this.#update(state).catch(() => undefined);
      throw error;
    }
    if (result.status === 'accepted') {
      state.status = { kind: 'decided' };
      state.decidedBy = place.user;
      if (state.request.type === 'tool_approval_request') await this.#audit(state, result.turnId);
      await this.#update(state);
      return;
    }
    for (const i of added) state.marks.delete(i);
    if (result.status === 'duplicate') {
      // Decided already, by another press this process did not see (another replica).
      const turn = await deps.store.getTurn(result.turnId).catch(() => undefined);
      const by = actorIdOf(turn?.metadata);
      state.status = { kind: 'decided' };
      if (by !== undefined) state.decidedBy = by;
      await this.#ephemeral(place, WORDS.alreadyDecided(by));
      return;
    }
    await this.#ephemeral(place, WORDS.stale);
    await this.#close(state, WORDS.gone);
  }

  async #audit(state: PromptState, turnId: string): Promise<void> {
    const tools = visibleTools(state.request);
    // Who decided, by name where Slack says (cached by People; a failed lookup is the bare id).
    const deciders = [...new Set([...state.marks.values()].map((m) => m.by))];
    const people = new Map<string, Actor>();
    await Promise.all(
      deciders.map(async (id) => {
        const actor = await this.#deps?.people.actor(state.key.workspaceId, id).catch(() => undefined);
        if (actor !== undefined) people.set(id, actor);
      }),
    );
    tools.forEach((tool, i) => {
      const mark = state.marks.get(i);
      if (mark === undefined) return;
      const approver: ApprovalAudit['approver'] = { id: mark.by };
      const known = people.get(mark.by);
      if (known?.name !== undefined) approver.name = known.name;
      if (known?.email !== undefined) approver.email = known.email;
      const decision = mark.approved === true ? 'approved' : 'denied';
      const audit: ApprovalAudit = {
        binding: state.binding,
        sessionId: state.sessionId,
        workspace: state.key.workspaceId,
        channel: state.channel,
        threadTs: state.key.threadId,
        promptTs: state.ts,
        taskId: state.taskId,
        turnId,
        approver,
        decidedAt: new Date(mark.at).toISOString(),
        tool: { id: tool.id, callId: tool.call_id, name: tool.name },
        argumentsSha256: argumentsHash(tool.args),
        decision,
        ...(mark.reason === undefined ? {} : { reason: mark.reason }),
        allAtOnce: mark.allAtOnce === true,
      };
      this.#logger.info({ audit: 'tool-approval', ...audit }, 'tool approval decision');
      this.#counters?.approvalDecided(state.binding, decision, 'slack');
      for (const listener of this.#listeners) {
        try {
          listener(audit);
        } catch (error) {
          this.#logger.warn({ err: errorName(error) }, 'an approval decision listener failed');
        }
      }
    });
  }

  // ---- authorisation ------------------------------------------------------------------------

  #gate(binding: string, request: HitlRequest): Gate {
    if (request.type === 'ask_user_request') return { kind: 'open', groups: [] };
    const settings = this.#deps?.bindings.get(binding)?.toolApprovals;
    if (settings === undefined) return { kind: 'unavailable' };
    if (!settings.enabled) return { kind: 'disabled' };
    const groups = settings.approverGroups.filter((g) => GROUP_ID.test(g));
    return groups.length === 0 ? { kind: 'no-groups' } : { kind: 'open', groups };
  }

  /** Whether the presser may decide; tells them ephemerally, and logs, when not. */
  async #authorised(state: PromptState, place: Place): Promise<boolean> {
    if (state.request.type === 'ask_user_request') return true;
    // The Binding is read on every press: a change of its groups applies at once.
    const gate = this.#gate(state.binding, state.request);
    let reason: RefusalReason | undefined;
    let text = '';
    if (gate.kind === 'disabled' || gate.kind === 'unavailable') {
      reason = 'approvals-disabled';
      text = WORDS.disabled;
    } else if (gate.kind === 'no-groups') {
      reason = 'no-approver-groups';
      text = WORDS.noGroups;
    } else {
      const membership = await this.#approvers.membership(place.team, gate.groups, place.user);
      if (membership.kind === 'member') return true;
      reason = membership.kind === 'unknown' ? 'lookup-failed' : 'not-an-approver';
      text = membership.kind === 'unknown' ? WORDS.lookupFailed : WORDS.notApprover(gate.groups);
    }
    this.#counters?.approvalRefused(state.binding, reason);
    this.#logger.warn(
      {
        audit: 'tool-approval-refused',
        binding: state.binding,
        sessionId: state.sessionId,
        taskId: state.taskId,
        user: place.user,
        reason,
        at: new Date(this.#clock.now()).toISOString(),
      },
      'a press on a tool approval was refused',
    );
    await this.#ephemeral(place, text);
    return false;
  }

  // ---- finding the prompt of a press ---------------------------------------------------------

  /**
   * The pending question a press belongs to, and what the press does: the thread's session
   * from the store, its question now, and the action whose token the press carries.
   */
  async #find(
    place: Place,
    token: string,
  ): Promise<{ state: PromptState; action: PromptAction } | undefined> {
    const deps = this.#deps;
    if (deps === undefined) return undefined;
    const key = keyOf(place.team, place.channel, place.threadTs);
    const sessionId = sessionIdOf(key);
    const session = await deps.store.getSession(sessionId);
    const question = session?.question;
    if (
      session === undefined ||
      question === null ||
      question === undefined ||
      question.kind !== 'structured'
    )
      return undefined;
    const request = hitlRequestOf(question.payload);
    if (request === undefined) return undefined;
    // A prompt is the message its ref names; before the ref is saved, any message of ours.
    if (question.promptRef !== null && question.promptRef !== `${place.channel}|${place.messageTs}`)
      return undefined;
    const action = this.#tokens.find(sessionId, question.questionKey, candidates(request), token);
    if (action === undefined) return undefined;
    const id = `${sessionId}\n${question.questionKey}`;
    let state = this.#prompts.get(id);
    if (state === undefined || (state.ts !== '' && state.ts !== place.messageTs)) {
      // Shown by another process, or before a restart: what was collected there is not here.
      state = {
        sessionId,
        key,
        binding: session.binding,
        questionKey: question.questionKey,
        taskId: question.taskId,
        request,
        channel: place.channel,
        ts: place.messageTs,
        marks: new Map(),
        status: { kind: 'open' },
        gate: this.#gate(session.binding, request),
        queue: Promise.resolve(),
      };
      this.#remember(state);
    }
    return { state, action };
  }

  #remember(state: PromptState): void {
    const id = `${state.sessionId}\n${state.questionKey}`;
    this.#prompts.delete(id);
    this.#prompts.set(id, state);
    this.#latest.set(state.sessionId, id);
    if (this.#prompts.size <= MAX_PROMPTS) return;
    for (const [k, s] of this.#prompts) {
      if (this.#prompts.size <= MAX_PROMPTS) break;
      if (s.status.kind !== 'open' || this.#prompts.size > MAX_PROMPTS * 1.1) {
        this.#prompts.delete(k);
        if (this.#latest.get(s.sessionId) === k) this.#latest.delete(s.sessionId);
      }
    }
  }

  /** Runs presses of one prompt one at a time. */
  #run(state: PromptState, task: () => Promise<void>): Promise<void> {
    const next = state.queue.then(task, task);
    state.queue = next.catch(() => undefined);
    return next;
  }

  // ---- messages -----------------------------------------------------------------------------

  #render(state: PromptState): RenderedMessage {
    return promptMessage({
      request: state.request,
      marks: state.marks,
      status: state.status,
      gate: state.status.kind === 'open' ? this.#gate(state.binding, state.request) : state.gate,
      token: (action) => this.#tokens.token(state.sessionId, state.questionKey, action),
    });
  }

  async #close(state: PromptState, text: string): Promise<void> {
    state.status = { kind: 'closed', text };
    await this.#update(state);
  }

  async #update(state: PromptState): Promise<void> {
    if (state.ts === '') return;
    const message = this.#render(state);
    try {
      await retrying(this.#clock, () =>
        this.#api.update(
          { team: state.key.workspaceId, urgent: true },
          { channel: state.channel, ts: state.ts, text: message.text, blocks: message.blocks ?? [] },
        ),
      );
    } catch (error) {
      this.#logger.warn({ channel: state.channel, err: errorName(error) }, 'could not update a prompt');
    }
  }

  /** A press on a prompt that no longer waits: its buttons go (best effort). */
  async #stripStale(place: Place, blocks: unknown[] | undefined): Promise<void> {
    if (blocks === undefined || blocks.length === 0) return;
    const kept = blocks.filter(
      (b) => !(typeof b === 'object' && b !== null && (b as { type?: unknown }).type === 'actions'),
    );
    if (kept.length === blocks.length) return;
    kept.push({ type: 'context', elements: [{ type: 'mrkdwn', text: `:lock: ${WORDS.gone}` }] });
    try {
      await this.#api.update(
        { team: place.team },
        { channel: place.channel, ts: place.messageTs, text: WORDS.gone, blocks: kept.slice(0, 50) },
      );
    } catch (error) {
      this.#logger.debug({ err: errorName(error) }, 'could not update a stale prompt');
    }
  }

  async #ephemeral(place: Place, text: string): Promise<void> {
    try {
      await retrying(this.#clock, () =>
        this.#api.postEphemeral(
          { team: place.team, urgent: true },
          { channel: place.channel, user: place.user, text, thread_ts: place.threadTs },
        ),
      );
    } catch (error) {
      this.#logger.warn({ channel: place.channel, err: errorName(error) }, 'could not answer a press');
    }
  }
}

/**
 * Decisions this process did not take (before a restart, on another replica) are on the prompt
 * message Slack sends with a press: they count, so "Approve the rest" never overrides a denial
 * the message shows.
 */
function adoptShownMarks(state: PromptState, shown: readonly unknown[]): void {
  if (state.request.type !== 'tool_approval_request' || state.status.kind !== 'open') return;
  const count = visibleTools(state.request).length;
  for (const [i, mark] of readMarks(shown)) if (i < count && !state.marks.has(i)) state.marks.set(i, mark);
}

/** Every action a question's buttons and modals can carry. */
export function candidates(request: HitlRequest): PromptAction[] {
  if (request.type === 'ask_user_request') {
    const out: PromptAction[] = [{ kind: 'answer' }];
    request.questions.forEach((q, i) => {
      if (!choiceButtons(request, i)) return;
      for (let j = 0; j < q.choices.length; j++) out.push({ kind: 'choice', question: i, choice: j });
    });
    return out;
  }
  const count = visibleTools(request).length;
  const out: PromptAction[] = [{ kind: 'approve-all' }, { kind: 'deny-all' }];
  if (approvalLayout(count) === 'per-tool')
    for (let i = 0; i < count; i++) out.push({ kind: 'approve', index: i }, { kind: 'deny', index: i });
  return approvalLayout(count) === 'too-many' ? [] : out;
}

function keyOf(team: string, channel: string, threadTs: string): SessionKey {
  return { surface: SURFACE, workspaceId: team, channelId: channel, threadId: threadTs };
}

function modalPlace(place: Place): Omit<ModalPlace, 'token'> {
  return { team: place.team, channel: place.channel, threadTs: place.threadTs, messageTs: place.messageTs };
}

function errorName(error: unknown): Record<string, unknown> {
  if (error instanceof KourierError) return { name: error.name, code: error.code };
  if (error instanceof Error) return { name: error.name };
  return { name: typeof error };
}
