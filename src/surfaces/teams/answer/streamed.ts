import { Activity } from '@microsoft/agents-activity';
import { StreamingResponse, type TurnContext } from '@microsoft/agents-hosting';
import type { Logger } from 'pino';
import type { AnswerView } from '../../../core/answer.js';
import type { AnswerSink } from '../../../core/ports.js';
import type { SessionKey } from '../../../core/store.js';
import type { TeamsAddress } from '../address.js';
import type { TeamsSender } from '../sender.js';
import { EditedAnswer } from './edited.js';

/**
 * An answer in a personal chat, streamed with Teams' own streaming through the SDK's
 * StreamingResponse: informative updates while the agent works with tools, the text as it grows
 * (the SDK paces updates a second apart), then the final message, exactly the answer's text.
 *
 * - **Stop**: the person's Stop makes Teams answer the next update 403 `ContentStreamNotAllowed`
 *   ("cancelled by user"). The SDK then drops the stream; the turn context's send hook sees the
 *   refusal first and calls `onStop`, which cancels the agent's task. What was streamed stays.
 * - **Two minutes**: past Teams' limit the SDK turns the streamed message into a plain one (it
 *   adds a line saying the answer goes on). From then the answer is edited in that message at a
 *   paced rate, and the final edit shows exactly the answer. Reaching the limit is not a Stop.
 * - The stream opens at the first text or tool step, not before: an answer with neither shows
 *   only the engine's notice.
 */

export interface StreamedAnswerOptions {
  sender: TeamsSender;
  key: SessionKey;
  address: TeamsAddress;
  onRef: (ref: string) => void;
  /** The person pressed Stop on this answer. */
  onStop: () => void;
  editPaceMs: number;
  logger: Logger;
}

/** The words Teams answers a stopped stream with contain this; a timed-out one also the next. */
const NOT_ALLOWED = 'contentstreamnotallowed';
const TIMED_OUT = 'exceeded streaming time';

export class StreamedAnswer implements AnswerSink {
  readonly #o: StreamedAnswerOptions;
  #stream: StreamingResponse | undefined;
  #opening: Promise<void> | undefined;
  /** Ends the proactive turn that holds the context. */
  #release: () => void = () => undefined;
  #held: Promise<void> | undefined;
  /** The text handed to the stream so far (the SDK takes additions only). */
  #queued = '';
  #stopped = false;
  /** Past two minutes: the streamed message edited from here on. */
  #edited: EditedAnswer | undefined;
  #refTold = false;

  constructor(options: StreamedAnswerOptions) {
    this.#o = options;
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  update(view: AnswerView): void {
    if (this.#stopped || view.length === 0) return;
    void this.#open().then(() => this.#push(view));
  }

  /** A tool step while the answer is on its way: an informative update. */
  inform(text: string): void {
    if (this.#stopped) return;
    void this.#open().then(() => {
      if (this.#stream?.isStreamingChannel === true && this.#queued === '')
        this.#stream.queueInformativeUpdate(text);
    });
  }

  async finish(view: AnswerView): Promise<void> {
    try {
      if (this.#stream === undefined && this.#opening === undefined && view.length === 0) return;
      await this.#open();
      const stream = this.#stream;
      if (stream === undefined || this.#stopped) return;
      this.#push(view);
      if (this.#edited !== undefined) {
        await this.#edited.finish(view);
        return;
      }
      stream.setFinalMessage(Activity.fromObject({ type: 'message', text: view.text() }));
      await stream.endStream();
      // The final send itself may have met the limit: the SDK then edits the message with it.
    } finally {
      this.#release();
      await this.#held?.catch(() => undefined);
    }
  }

  #open(): Promise<void> {
    this.#opening ??= new Promise<void>((ready, failed) => {
      const done = new Promise<void>((resolve) => {
        this.#release = resolve;
      });
      this.#held = this.#o.sender
        .open(this.#o.key, this.#o.address, async (ctx) => {
          this.#watch(ctx);
          this.#stream = new StreamingResponse(ctx);
          ready();
          await done;
        })
        .catch((error: unknown) => {
          failed(error);
          throw error;
        });
    });
    return this.#opening;
  }

  /** Sees a refused update before the SDK swallows it: a Stop, or the time limit. */
  #watch(ctx: TurnContext): void {
    ctx.onSendActivities(async (_ctx, _activities, next) => {
      try {
        return await next();
      } catch (error) {
        const words = error instanceof Error ? error.message.toLowerCase() : '';
        if (words.includes(NOT_ALLOWED) && !words.includes(TIMED_OUT) && !this.#stopped) {
          this.#stopped = true;
          this.#o.onStop();
        }
        throw error;
      }
    });
  }

  #push(view: AnswerView): void {
    const stream = this.#stream;
    if (stream === undefined || this.#stopped) return;
    const text = view.text();
    if (text.startsWith(this.#queued) && text.length > this.#queued.length) {
      // After the limit the SDK only keeps the text for its last edit; ours show it meanwhile.
      stream.queueTextChunk(text.slice(this.#queued.length));
      this.#queued = text;
    }
    if (!stream.isStreamingChannel && stream.streamId !== undefined) {
      this.#edited ??= new EditedAnswer({
        sender: this.#o.sender,
        key: this.#o.key,
        pages: [stream.streamId],
        onRef: this.#o.onRef,
        paceMs: this.#o.editPaceMs,
        logger: this.#o.logger,
      });
      this.#edited.update(view);
    } else if (stream.streamId !== undefined && !this.#refTold) {
      this.#refTold = true;
      this.#o.onRef(stream.streamId);
    }
  }
}
