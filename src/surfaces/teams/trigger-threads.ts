import type { SessionKey } from '../../core/store.js';
import { cutWithMark } from '../../core/text.js';
import {
  type PostRef,
  type TriggerChat,
  type TriggerConfig,
  type TriggerMessage,
  type TriggerPlace,
  TriggerPostRefusedError,
} from '../../core/triggers.js';
import { TEAMS_SURFACE } from './address.js';
import { TeamsConversationUnknownError } from './errors.js';
import type { TeamsSender } from './sender.js';

/**
 * Alerts and schedules that start their threads in a Teams channel (a Binding's trigger with
 * `teams.channel`): the root is a new post in the channel, sent through the SDK's proactive path
 * on the channel's stored address (written when the app was added to the team, or saw a message
 * there), and the thread's later messages are replies to it. A channel the app has no address
 * for refuses the post for good until the app is added to its team.
 *
 * Unlike Slack, a bot cannot read a channel's history back: a post made just before a crash,
 * and not yet recorded by the trigger's work, is posted again on the retry.
 */

const TEXT_MAX = 20_000;

export function renderTeamsTriggerMessage(message: TriggerMessage): string {
  const lines = message.lines.map((line) => {
    // Shown literally: a code span, so an id or a link reads as what it is.
    const value =
      line.verbatim === true ? `\`${line.text.replace(/`/g, "'")}\`` : line.text.replace(/\]\(/g, ']\u200b(');
    return `**${line.label}:** ${value}`;
  });
  return cutWithMark([`**${message.title}**`, ...lines].join('\n\n'), TEXT_MAX);
}

export class TeamsTriggerThreads implements TriggerChat {
  readonly #sender: TeamsSender;

  constructor(sender: TeamsSender) {
    this.#sender = sender;
  }

  place(trigger: TriggerConfig): TriggerPlace | undefined {
    const { surface, channel, workspaceId } = trigger.target;
    if (surface !== TEAMS_SURFACE || channel === undefined || workspaceId === undefined) return undefined;
    return { surface: TEAMS_SURFACE, workspaceId, channelId: channel };
  }

  async startThread(place: TriggerPlace, message: TriggerMessage, _ref: PostRef): Promise<SessionKey> {
    const id = await this.#refusedForGood(() =>
      this.#sender.postRoot(place.workspaceId, place.channelId, {
        type: 'message',
        text: renderTeamsTriggerMessage(message),
      }),
    );
    return {
      surface: TEAMS_SURFACE,
      workspaceId: place.workspaceId,
      channelId: place.channelId,
      threadId: id,
    };
  }

  async postInThread(key: SessionKey, message: TriggerMessage, _ref: PostRef): Promise<void> {
    await this.#refusedForGood(() =>
      this.#sender.post(key, { type: 'message', text: renderTeamsTriggerMessage(message) }),
    );
  }

  async #refusedForGood<T>(post: () => Promise<T>): Promise<T> {
    try {
      return await post();
    } catch (error) {
      if (error instanceof TeamsConversationUnknownError) {
        throw new TriggerPostRefusedError(
          'the Teams app has no address for this channel: add the app to its team',
          { cause: error },
        );
      }
      throw error;
    }
  }
}
