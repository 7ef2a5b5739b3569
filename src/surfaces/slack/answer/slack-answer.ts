// Longer than our ~400-line rule on purpose: one answer's life in Slack (native stream or
// edits, pages, the budget, the fall-back) is one state machine over shared fields. What can be
// pure already lives in plan.ts; this file walks the plan and does the I/O.
import type { Logger } from 'pino';
import type { AnswerView } from '../../../core/answer.js';
import { backoffDelay } from '../../../core/backoff.js';
import { type Clock, WAIT_OVER } from '../../../core/clock.js';
import type { AnswerEnd, AnswerSink } from '../../../core/ports.js';
import { settledPart } from '../../common/markdown-pages.js';
import { feedbackBlock } from '../agent-app/feedback.js';
import { BudgetClosedError } from '../web-api/budget.js';
import {
  type AnswerMetadata,
  type CallContext,
  type SlackApi,
  UNAVAILABLE_BACKOFF,
} from '../web-api/client.js';
import {
  SlackMalformedResponseError,
  SlackPlatformError,
  SlackRateLimitedError,
  SlackUnavailableError,
  STILL_STREAMING,
  STOPPED_BY_USER,
  STREAM_ENDED,
} from '../web-api/errors.js';
import { markdownForStream, markdownToMrkdwn } from './mrkdwn.js';
import { DEFAULT_PAGE_LIMITS, slackPages } from './pages.js';
import { nextStep, type ShownPage, type Step } from './plan.js';
import { decodeAnswerRef, encodeAnswerRef } from './ref.js';

/**
 * One turn's answer in a Slack thread: the messages that show it, kept in step with the text as
 * it grows. The engine calls `update` per agent event; this only records the latest view and
 * wakes a worker that makes at most one call per `intervalMs` (the latest text wins every time),
 * each call waiting its turn in the workspace's budget. `finish` shows exactly the full text.
 *
 * Where the workspace has native streams (chat.startStream/appendStream/stopStream) the open
 * end of the answer streams; otherwise, or when Slack ends a stream early
 * (`message_not_in_streaming_state`), the same message is edited with chat.update from the text
 * Slack already shows: nothing is lost and nothing shown twice. Pages past Slack's message size
 * go to follow-up messages in the thread (pages.ts).
 */

export const ANSWER_EVENT_TYPE = 'agentkourier_answer';

export interface AnswerPlace {
  team: string;
  channel: string;
  threadTs: string;
  turnId: string;
  /** The engine's session of the thread (the agent session's status is kept per session). */
  sessionId: string;
  /** The person the answer is for: a native stream outside a DM must name them. */
  recipient: string | undefined;
}

export interface AnswerSettings {
  limits: typeof DEFAULT_PAGE_LIMITS;
  /** Least time between two calls for one answer while it grows: updates coalesce within it. */
  intervalMs: number;
  /** Use native streams where the workspace has them. */
  streaming: boolean;
  /** Calls that fail without an answer from Slack are tried this many times before giving up. */
  maxFailures: number;
  /** Feedback buttons under a finished streamed answer (feedback.ts). */
  feedback: boolean;
}

export const DEFAULT_ANSWER_SETTINGS: AnswerSettings = {
  limits: DEFAULT_PAGE_LIMITS,
  intervalMs: 1_000,
  streaming: true,
  maxFailures: 5,
  feedback: true,
};

/** Whether a workspace has native streams; learnt from Slack's answer to the first try. */
export class StreamSupport {
  readonly #absent = new Set<string>();
  available(team: string): boolean {
    return !this.#absent.has(team);
  }
  markAbsent(team: string): void {
    this.#absent.add(team);
  }
}

/** chat.startStream errors that mean the workspace (or this token) has no native streams. */
const NO_STREAMS = new Set([
  'unknown_method',
  'not_allowed_token_type',
  'feature_not_enabled',
  'method_deprecated',
]);

/** The agent session's status, for a last stream stop that can set it too (session-status.ts). */
export interface StopStatus {
  mayRideOnStop(sessionId: string): boolean;
  rodeOnStop(sessionId: string): void;
}

export interface AnswerDeps {
  api: SlackApi;
  clock: Clock;
  logger: Logger;
  settings: AnswerSettings;
  streams: StreamSupport;
  statuses?: StopStatus;
}

interface Deferred {
  promise: Promise<void>;
  resolve: () => void;
}

function deferred(): Deferred {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

export class SlackAnswer {
  readonly place: AnswerPlace;
  readonly #deps: AnswerDeps;
  #pages: ShownPage[] = [];
  #view: AnswerView | undefined;
  #final = false;
  /** The engine said the task is over (not paused): the last stop may set the status `active`. */
  #taskEnded = false;
  #done = false;
  #running = false;
  #lastCallAt = Number.NEGATIVE_INFINITY;
  #failures = 0;
  #noStream = false;
  /** The ref was lost but messages of this turn may exist: look for them before posting. */
  #lookup: boolean;
  #wake: AbortController | undefined;
  readonly #finished = deferred();
  #onRef: ((ref: string) => void) | undefined;
  #lastRef: string | undefined;
  /** A person stopped the task: nothing more is shown, open streams are closed as they are. */
  #halted = false;
  /** The last text split into pages (`#desired`). */
  #split: { text: string; final: boolean; pages: string[] } | undefined;

  /**
   * @param ref the reference the engine persisted (null: none)
   * @param mayExist without a ref, whether a message of this turn may have been posted before
   *   (by a process that died before the ref was persisted)
   */
  constructor(place: AnswerPlace, deps: AnswerDeps, ref: string | null, mayExist: boolean) {
    this.place = place;
    this.#deps = deps;
    const known = ref === null ? undefined : decodeAnswerRef(ref);
    if (known !== undefined && known.channel === place.channel) {
      // What those messages show is unknown now: the first step rewrites them with the text.
      this.#pages = known.pages.map((p) => ({
        ts: p.ts,
        state: p.streaming ? 'streaming' : 'posted',
        shown: null,
      }));
      this.#lastRef = ref ?? undefined;
    }
    this.#lookup = known === undefined && mayExist;
  }

  /** Whether the final text is shown (or the answer gave up). */
  get done(): boolean {
    return this.#done;
  }

  /** Whether one of its messages is `ts` (a stream Slack stopped names its message). */
  shows(ts: string): boolean {
    return this.#pages.some((p) => p.ts === ts);
  }

  /**
   * A person stopped the task: the answer stays as shown. `stoppedTs` are the streams Slack
   * already stopped; any other stream of it is closed without more text. Resolves when done.
   */
  halt(stoppedTs: ReadonlySet<string>): Promise<void> {
    if (this.#done) return Promise.resolve();
    for (const page of this.#pages) if (stoppedTs.has(page.ts)) page.state = 'stopped';
    this.#halted = true;
    this.#kick();
    this.#wake?.abort(WAIT_OVER);
    return this.#finished.promise;
  }

  /** The reference of the messages that show it, once there are any. */
  get ref(): string | undefined {
    return this.#lastRef;
  }

  /** A sink for the engine; several sinks (one per run of the turn) may share one answer. */
  sink(onRef: (ref: string) => void): AnswerSink {
    this.#onRef = onRef;
    return {
      update: (view) => {
        this.#view = view;
        this.#kick();
      },
      finish: (view, end?: AnswerEnd) => {
        this.#view = view;
        this.#final = true;
        this.#taskEnded = end === 'task-ended';
        // A take waiting for an interim edit now carries the final one: let it go first.
        this.#deps.api.promote(this.place.turnId);
        this.#kick();
        this.#wake?.abort(WAIT_OVER);
        return this.#finished.promise;
      },
    };
  }

  #kick(): void {
    if (this.#done || this.#running) return;
    this.#running = true;
    this.#loop().catch((error: unknown) => {
      this.#running = false;
      this.#giveUp(error);
    });
  }

  async #loop(): Promise<void> {
    for (;;) {
      if (this.#halted && !this.#done) {
        await this.#closeAsShown();
        this.#running = false;
        return;
      }
      const view = this.#view;
      if (this.#done || view === undefined) {
        this.#running = false;
        return;
      }
      if (!this.#final) {
        const wait = this.#lastCallAt + this.#deps.settings.intervalMs - this.#deps.clock.now();
        if (wait > 0) {
          await this.#sleep(wait);
          continue;
        }
      }
      let step = this.#plan(view);
      if (step === null) {
        if (this.#final) this.#complete();
        // Cleared here, not a tick later when the promise settles: an update that comes after
        // this last look at the text starts a new loop instead of being dropped.
        this.#running = false;
        return;
      }
      if (step.kind === 'create' && step.index === 0 && this.#lookup) {
        this.#lookup = false;
        await this.#recover();
        continue;
      }
      const method = budgetedMethod(step);
      try {
        if (method !== undefined) {
          const channel = method === 'chat.postMessage' ? this.place.channel : undefined;
          await this.#deps.api.acquire(method, { ...this.#ctx(), ...(channel ? { channel } : {}) });
          // The wait for the token may have been long: the call carries the latest text.
          const latest = this.#plan(this.#view ?? view);
          if (latest === null || budgetedMethod(latest) !== method) {
            this.#deps.api.refund(method, this.place.team, channel);
            continue;
          }
          step = latest;
        }
        await this.#perform(step, method !== undefined);
        this.#failures = 0;
        this.#lastCallAt = this.#deps.clock.now();
      } catch (error) {
        this.#lastCallAt = this.#deps.clock.now();
        await this.#failed(step, error);
      }
    }
  }

  /** After a stop: each stream still open is stopped with no more text; then it is done. */
  async #closeAsShown(): Promise<void> {
    for (const [index, page] of this.#pages.entries()) {
      if (page.state !== 'streaming') continue;
      try {
        await this.#deps.api.stopStream(
          { ...this.#ctx(), urgent: true },
          { channel: this.place.channel, ts: page.ts, metadata: this.#metadata(index) },
        );
      } catch (error) {
        // Slack ended it already (or cannot be reached): it shows what it showed.
        this.#deps.logger.debug(
          { turnId: this.place.turnId, err: describe(error) },
          'a stopped stream did not close',
        );
      }
      page.state = 'stopped';
    }
    this.#emitRef();
    this.#complete();
  }

  #plan(view: AnswerView): Step | null {
    return nextStep(this.#desired(view), this.#pages, this.#final, this.#canStream());
  }

  /** The pages to show: the whole text when final, else what may be shown before it settles. */
  #desired(view: AnswerView): string[] {
    // A call plans, plans again after its budget wait and asks for the last page: one split of a
    // text serves them all (the pages depend only on the text and whether it is final).
    const text = view.text();
    const known = this.#split;
    if (known !== undefined && known.text === text && known.final === this.#final) return known.pages;
    const pages = slackPages(text, this.#deps.settings.limits);
    const out = pages.map((page, i) => {
      const body = page.replace(/^\n+/, '');
      return this.#final || i < pages.length - 1 ? body.trimEnd() : settledPart(body);
    });
    while (out.length > 0 && out[out.length - 1] === '') out.pop();
    this.#split = { text, final: this.#final, pages: out };
    return out;
  }

  #canStream(): boolean {
    const { settings, streams } = this.#deps;
    if (!settings.streaming || this.#noStream || !streams.available(this.place.team)) return false;
    // Outside a DM, Slack needs the recipient, which a restarted process no longer knows.
    return this.place.channel.startsWith('D') || this.place.recipient !== undefined;
  }

  #ctx(): CallContext {
    return { team: this.place.team, requester: this.place.turnId, urgent: this.#final };
  }

  #metadata(index: number): AnswerMetadata {
    return { event_type: ANSWER_EVENT_TYPE, event_payload: { turn_id: this.place.turnId, page: index } };
  }

  async #perform(step: Step, prepaid: boolean): Promise<void> {
    const { api } = this.#deps;
    const { channel, threadTs, team } = this.place;
    const ctx = { ...this.#ctx(), prepaid };
    switch (step.kind) {
      case 'create': {
        // A stream that would have to wait for Slack's small startStream budget is posted instead.
        if (step.stream && api.reserve('chat.startStream', team)) {
          try {
            const { ts } = await api.startStream(
              { ...ctx, prepaid: true },
              {
                channel,
                thread_ts: threadTs,
                markdown_text: markdownForStream(step.text),
                ...(channel.startsWith('D') || this.place.recipient === undefined
                  ? {}
                  : { recipient_user_id: this.place.recipient, recipient_team_id: team }),
              },
            );
            this.#pages[step.index] = { ts, state: 'streaming', shown: step.text };
            this.#emitRef();
            return;
          } catch (error) {
            if (!(error instanceof SlackPlatformError)) throw error;
            // No stream for this answer (and none for the workspace, if it has none at all):
            // the page is posted and edited instead, right away.
            this.#noStream = true;
            if (NO_STREAMS.has(error.slackError)) this.#deps.streams.markAbsent(team);
            this.#deps.logger.info(
              { turnId: this.place.turnId, slackError: error.slackError },
              'native streaming unavailable; answering by edits',
            );
          }
        }
        const { ts } = await api.postMessage(ctx, {
          channel,
          thread_ts: threadTs,
          text: markdownToMrkdwn(step.text),
          metadata: this.#metadata(step.index),
        });
        this.#pages[step.index] = { ts, state: 'posted', shown: step.text };
        this.#emitRef();
        return;
      }
      case 'append': {
        const page = this.#page(step.index);
        await api.appendStream(ctx, { channel, ts: page.ts, markdown_text: step.delta });
        page.shown = step.text;
        return;
      }
      case 'stop': {
        const page = this.#page(step.index);
        const last = this.#isLastPage(step.index);
        const { statuses } = this.#deps;
        // The turn is over with this call: it sets the session's `active` too, one call fewer.
        const status = last && this.#taskEnded && statuses?.mayRideOnStop(this.place.sessionId) === true;
        await api.stopStream(ctx, {
          channel,
          ts: page.ts,
          ...(step.delta === undefined ? {} : { markdown_text: step.delta }),
          metadata: this.#metadata(step.index),
          ...(last && this.#deps.settings.feedback ? { blocks: [feedbackBlock(this.place.turnId)] } : {}),
          ...(status ? { session_status: 'active' } : {}),
        });
        if (status) statuses?.rodeOnStop(this.place.sessionId);
        // Slack refused nothing, so the last words are shown too; on a refusal (the stream
        // ended early) `shown` stays as it was and the next step edits from there.
        if (step.text !== undefined) page.shown = step.text;
        page.state = 'stopped';
        this.#emitRef();
        return;
      }
      case 'edit': {
        const page = this.#page(step.index);
        // The metadata again: a stream Slack ended early never got it from chat.stopStream.
        await api.update(ctx, {
          channel,
          ts: page.ts,
          text: markdownToMrkdwn(step.text),
          metadata: this.#metadata(step.index),
        });
        page.shown = step.text;
        return;
      }
      case 'delete': {
        const page = this.#page(step.index);
        await api.delete(ctx, { channel, ts: page.ts });
        this.#pages.splice(step.index, 1);
        this.#emitRef();
        return;
      }
    }
  }

  /** The answer's last page, once it is final: its stop gets the feedback buttons and the status. */
  #isLastPage(index: number): boolean {
    if (!this.#final || this.#view === undefined) return false;
    return index === this.#desired(this.#view).length - 1;
  }

  #page(index: number): ShownPage {
    const page = this.#pages[index];
    if (page === undefined) throw new RangeError(`no page ${index}`);
    return page;
  }

  async #failed(step: Step, error: unknown): Promise<void> {
    const page = this.#pages[step.index];
    if (error instanceof SlackRateLimitedError) return; // the budget waits out Retry-After
    if (error instanceof BudgetClosedError) {
      this.#complete();
      return;
    }
    if (error instanceof SlackPlatformError) {
      if ((error.slackError === STREAM_ENDED || error.slackError === STOPPED_BY_USER) && page !== undefined) {
        // Slack closed the stream itself (its time ran out, or a person pressed stop and the
        // stop was not for this task). It shows what was appended before: edit from there.
        page.state = 'stopped';
        this.#emitRef();
        return;
      }
      if (error.slackError === STILL_STREAMING && page !== undefined) {
        page.state = 'streaming';
        page.shown = null;
        return;
      }
      if (error.slackError === 'message_not_found' && page !== undefined) {
        // Someone deleted it: the rest of the answer is posted again from there.
        this.#pages.splice(step.index);
        this.#emitRef();
        if (++this.#failures > this.#deps.settings.maxFailures) this.#giveUp(error);
        return;
      }
      // channel_not_found, not_in_channel, is_archived, …: retrying will not help.
      this.#giveUp(error);
      return;
    }
    if (error instanceof SlackUnavailableError || error instanceof SlackMalformedResponseError) {
      if (++this.#failures > this.#deps.settings.maxFailures) {
        this.#giveUp(error);
        return;
      }
      await this.#sleep(backoffDelay(this.#failures, UNAVAILABLE_BACKOFF));
      return;
    }
    this.#giveUp(error);
  }

  async #recover(): Promise<void> {
    const { api, logger } = this.#deps;
    const found: Array<{ index: number; page: ShownPage }> = [];
    try {
      let cursor: string | undefined;
      for (let round = 0; round < 10; round++) {
        const page = await api.replies(
          { team: this.place.team, requester: this.place.turnId },
          { channel: this.place.channel, ts: this.place.threadTs, limit: 200, ...(cursor ? { cursor } : {}) },
        );
        for (const m of page.messages) {
          const payload = m.metadata?.event_payload;
          if (m.metadata?.event_type !== ANSWER_EVENT_TYPE || payload?.turn_id !== this.place.turnId)
            continue;
          const index = typeof payload.page === 'number' ? payload.page : Number(payload.page ?? 0);
          found.push({
            index: Number.isInteger(index) ? index : 0,
            page: {
              ts: m.ts,
              state: m.streaming_state === 'in_progress' ? 'streaming' : 'posted',
              shown: null,
            },
          });
        }
        cursor = page.response_metadata?.next_cursor;
        if (page.has_more !== true || cursor === undefined || cursor === '') break;
      }
    } catch (error) {
      // Not found is the usual case; a failed look means a second message at worst.
      logger.warn(
        { turnId: this.place.turnId, err: describe(error) },
        'could not look for an earlier answer',
      );
      return;
    }
    if (found.length === 0) return;
    found.sort((a, b) => a.index - b.index);
    this.#pages = found.map((f) => f.page);
    this.#emitRef();
  }

  #emitRef(): void {
    if (this.#pages.length === 0) return;
    const ref = encodeAnswerRef({
      channel: this.place.channel,
      pages: this.#pages.map((p) => ({ ts: p.ts, streaming: p.state === 'streaming' })),
    });
    if (ref === this.#lastRef) return;
    this.#lastRef = ref;
    this.#onRef?.(ref);
  }

  #giveUp(error: unknown): void {
    this.#deps.logger.error(
      { turnId: this.place.turnId, channel: this.place.channel, err: describe(error) },
      'gave up showing an answer in Slack',
    );
    this.#complete();
  }

  #complete(): void {
    this.#done = true;
    this.#finished.resolve();
  }

  async #sleep(ms: number): Promise<void> {
    const wake = new AbortController();
    this.#wake = wake;
    try {
      await this.#deps.clock.sleep(ms, wake.signal);
    } catch {
      // Woken early: the answer finished and the worker goes on at once.
    } finally {
      if (this.#wake === wake) this.#wake = undefined;
    }
  }
}

/** The method a step's call spends, when its token is taken before the call; a stream start tries its own. */
function budgetedMethod(step: Step): string | undefined {
  switch (step.kind) {
    case 'create':
      return step.stream ? undefined : 'chat.postMessage';
    case 'append':
      return 'chat.appendStream';
    case 'stop':
      return 'chat.stopStream';
    case 'edit':
      return 'chat.update';
    case 'delete':
      return 'chat.delete';
  }
}

function describe(error: unknown): Record<string, unknown> {
  if (error instanceof SlackPlatformError)
    return { code: error.code, method: error.method, slackError: error.slackError };
  if (error instanceof Error && 'code' in error) return { name: error.name, code: String(error.code) };
  return { name: error instanceof Error ? error.name : typeof error };
}
