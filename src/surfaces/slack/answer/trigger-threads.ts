import type { Logger } from 'pino';
import type { Clock } from '../../../core/clock.js';
import type { SessionKey } from '../../../core/store.js';
import {
  type PostRef,
  type TriggerChat,
  type TriggerConfig,
  type TriggerMessage,
  type TriggerPlace,
  TriggerPostRefusedError,
} from '../../../core/triggers.js';
import { SURFACE } from '../inbound/keys.js';
import { type RepliesPage, retrying, type SlackApi } from '../web-api/client.js';
import { SlackPlatformError } from '../web-api/errors.js';
import { escapeSlack } from './mrkdwn.js';

/**
 * Threads a trigger starts in Slack: the root is a message of the app in the trigger's channel
 * (a summary of the alert), and the thread it opens is an ordinary one from then on — people
 * reply, the agent answers and asks there.
 *
 * Every post carries message metadata naming the work it belongs to. The worker counts an
 * attempt before it posts; an attempt after a crash (PostRef.recover) first looks for that
 * metadata — the root in the channel's history since the work was written, an entry in the
 * thread's replies — and takes the message it finds instead of posting a second one.
 *
 * Alert text is shown as text: Slack's control characters are escaped (no `<!channel>`, no
 * `<url|disguise>`), and links from the payload are code spans, readable but not clickable.
 */

export const TRIGGER_EVENT_TYPE = 'agentkourier_trigger';

/** How far before the work's time the root is looked for (clocks of replicas differ a little). */
const LOOK_BACK_MS = 5 * 60_000;
const LOOK_PAGES = 10;
const SECTION_MAX = 2_900;

export function renderTriggerMessage(message: TriggerMessage): { text: string; blocks: unknown[] } {
  const title = escapeSlack(message.title);
  const lines = message.lines.map((line) => {
    const value =
      line.verbatim === true ? `\`${escapeSlack(line.text.replace(/`/g, "'"))}\`` : escapeSlack(line.text);
    return `*${escapeSlack(line.label)}:* ${value}`;
  });
  let body = [`*${title}*`, ...lines].join('\n');
  if (body.length > SECTION_MAX) body = `${body.slice(0, SECTION_MAX - 1)}…`;
  return { text: title, blocks: [{ type: 'section', text: { type: 'mrkdwn', text: body } }] };
}

export interface SlackTriggerThreadsOptions {
  api: SlackApi;
  clock: Clock;
  logger: Logger;
  /**
   * The workspace of the bot token: where a Binding that names no team has its threads. Unset
   * in OAuth mode: a trigger's Binding must then name its workspace (spec.slack.teamId).
   */
  teamId?: string;
}

export class SlackTriggerThreads implements TriggerChat {
  readonly #o: SlackTriggerThreadsOptions;

  constructor(options: SlackTriggerThreadsOptions) {
    this.#o = options;
  }

  place(trigger: TriggerConfig): TriggerPlace | undefined {
    if (trigger.target.surface !== SURFACE) return undefined;
    const channel = trigger.target.channel;
    const workspaceId = trigger.target.workspaceId ?? this.#o.teamId;
    if (channel === undefined || workspaceId === undefined) return undefined;
    return {
      surface: SURFACE,
      workspaceId,
      channelId: channel,
    };
  }

  async startThread(place: TriggerPlace, message: TriggerMessage, ref: PostRef): Promise<SessionKey> {
    const team = place.workspaceId;
    const channel = place.channelId;
    const key = (threadId: string): SessionKey => ({
      surface: SURFACE,
      workspaceId: team,
      channelId: channel,
      threadId,
    });
    if (ref.recover) {
      const found = await this.#look(ref, (cursor) =>
        this.#o.api.history(
          { team },
          {
            channel,
            oldest: slackTs(ref.since - LOOK_BACK_MS),
            limit: 200,
            ...(cursor === undefined ? {} : { cursor }),
          },
        ),
      );
      if (found !== undefined) return key(found);
    }
    const ts = await this.#post(team, channel, undefined, message, ref);
    return key(ts);
  }

  async postInThread(thread: SessionKey, message: TriggerMessage, ref: PostRef): Promise<void> {
    const team = thread.workspaceId;
    const channel = thread.channelId;
    if (ref.recover) {
      const found = await this.#look(ref, (cursor) =>
        this.#o.api.replies(
          { team },
          { channel, ts: thread.threadId, limit: 200, ...(cursor === undefined ? {} : { cursor }) },
        ),
      );
      if (found !== undefined) return;
    }
    await this.#post(team, channel, thread.threadId, message, ref);
  }

  async #post(
    team: string,
    channel: string,
    threadTs: string | undefined,
    message: TriggerMessage,
    ref: PostRef,
  ): Promise<string> {
    const rendered = renderTriggerMessage(message);
    try {
      // Only a 429 is tried again here (Slack posted nothing). A post without an answer may have
      // landed: the worker tries again later, looking for it first.
      const { ts } = await retrying(
        this.#o.clock,
        () =>
          this.#o.api.postMessage(
            { team },
            {
              channel,
              ...(threadTs === undefined ? {} : { thread_ts: threadTs }),
              text: rendered.text,
              blocks: rendered.blocks,
              metadata: { event_type: TRIGGER_EVENT_TYPE, event_payload: { post: ref.id } },
            },
          ),
        { only: 'rate-limited' },
      );
      return ts;
    } catch (error) {
      // channel_not_found, not_in_channel, is_archived, …: posting again will not help.
      if (error instanceof SlackPlatformError)
        throw new TriggerPostRefusedError(`Slack refused the post in ${channel}: ${error.slackError}`, {
          cause: error,
        });
      throw error;
    }
  }

  /** The ts of the message stamped with this post's id, if a page of the listing has it. */
  async #look(
    ref: PostRef,
    page: (cursor: string | undefined) => Promise<RepliesPage>,
  ): Promise<string | undefined> {
    let cursor: string | undefined;
    try {
      for (let round = 0; round < LOOK_PAGES; round++) {
        const listed = await page(cursor);
        const mine = listed.messages.find(
          (m) => m.metadata?.event_type === TRIGGER_EVENT_TYPE && m.metadata.event_payload?.post === ref.id,
        );
        if (mine !== undefined) return mine.ts;
        cursor = listed.response_metadata?.next_cursor;
        if (listed.has_more !== true || cursor === undefined || cursor === '') return undefined;
      }
    } catch (error) {
      // A failed look means a second post at worst; not looking would mean the same.
      this.#o.logger.warn(
        { post: ref.id, err: error instanceof Error ? error.name : 'error' },
        'could not look for an earlier trigger post',
      );
    }
    return undefined;
  }
}

/** A Slack timestamp ("seconds.micros") for a time in ms. */
function slackTs(ms: number): string {
  const clamped = Math.max(0, ms);
  return `${Math.floor(clamped / 1000)}.${String((clamped % 1000) * 1000).padStart(6, '0')}`;
}
