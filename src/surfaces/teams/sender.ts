import { Activity } from '@microsoft/agents-activity';
import {
  type CloudAdapter,
  type ConnectorClient,
  HttpError,
  type TurnContext,
} from '@microsoft/agents-hosting';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { ChatAddressRows } from '../../core/chat-address-store.js';
import type { SessionKey } from '../../core/store.js';
import { conversationIdOf, referenceOf, TEAMS_SURFACE, type TeamsAddress, teamsAddress } from './address.js';
import type { ThreadBudget } from './budget.js';
import { TeamsConversationUnknownError } from './errors.js';

/**
 * Everything the surface sends to Teams, through the Agents SDK's proactive path: each call
 * opens a turn context on the session's conversation reference (`continueConversation`), which
 * the SDK gives a Bot Connector client with the app's token. Each call waits its place in the
 * conversation's budget first; one answered 429, 412, 502 or 504 (Teams' "retry" statuses) is
 * tried again after its `Retry-After` (or a backoff), with the conversation held meanwhile, for
 * up to `RETRY_FOR_MS`. The SDK itself does not retry.
 */

const member = z.object({
  name: z.string().max(256).optional(),
  email: z.string().max(320).optional(),
  userPrincipalName: z.string().max(320).optional(),
});

export type MemberInfo = z.infer<typeof member>;

const RETRY_STATUSES = new Set([412, 429, 502, 504]);
const RETRY_FOR_MS = 10 * 60_000;
const ADDRESS_CACHE = 10_000;

export class TeamsSender {
  readonly #adapter: CloudAdapter;
  readonly #appId: string;
  readonly #addresses: ChatAddressRows;
  readonly #budget: ThreadBudget;
  readonly #logger: Logger;
  readonly #known = new Map<string, TeamsAddress>();

  constructor(deps: {
    adapter: CloudAdapter;
    appId: string;
    addresses: ChatAddressRows;
    budget: ThreadBudget;
    logger: Logger;
  }) {
    this.#adapter = deps.adapter;
    this.#appId = deps.appId;
    this.#addresses = deps.addresses;
    this.#budget = deps.budget;
    this.#logger = deps.logger;
  }

  /** The stored address of a session's conversation (cached). */
  async address(key: SessionKey): Promise<TeamsAddress> {
    const cacheKey = `${key.workspaceId}\n${key.channelId}`;
    const known = this.#known.get(cacheKey);
    if (known !== undefined) return known;
    const row = await this.#addresses.get(TEAMS_SURFACE, key.workspaceId, key.channelId);
    if (row === undefined) throw new TeamsConversationUnknownError();
    const parsed = teamsAddress.safeParse(JSON.parse(row.address));
    if (!parsed.success) throw new TeamsConversationUnknownError();
    this.remember(key.workspaceId, key.channelId, parsed.data);
    return parsed.data;
  }

  /** What an inbound activity showed of its conversation (so the next send needs no read). */
  remember(workspaceId: string, conversationId: string, address: TeamsAddress): void {
    const cacheKey = `${workspaceId}\n${conversationId}`;
    this.#known.delete(cacheKey);
    if (this.#known.size >= ADDRESS_CACHE) {
      const oldest = this.#known.keys().next();
      if (oldest.done !== true) this.#known.delete(oldest.value);
    }
    this.#known.set(cacheKey, address);
  }

  forget(workspaceId: string, conversationId: string): void {
    this.#known.delete(`${workspaceId}\n${conversationId}`);
  }

  /** Posts a message; its id. */
  async post(key: SessionKey, activity: Partial<Activity>, signal?: AbortSignal): Promise<string> {
    const response = await this.call(key, (ctx) => ctx.sendActivity(Activity.fromObject(activity)), signal);
    return response?.id ?? '';
  }

  /**
   * Posts a new root in a channel (a new thread); its id. Only a channel the app has an address
   * for: refused (TeamsConversationUnknownError) otherwise.
   */
  async postRoot(workspaceId: string, channelId: string, activity: Partial<Activity>): Promise<string> {
    const key: SessionKey = { surface: TEAMS_SURFACE, workspaceId, channelId, threadId: '' };
    const address = await this.address(key);
    if (address.conversationType !== 'channel') throw new TeamsConversationUnknownError();
    await this.#budget.take(channelId);
    const response = await this.open(
      key,
      address,
      (ctx) => ctx.sendActivity(Activity.fromObject(activity)),
      channelId,
    );
    return response?.id ?? '';
  }

  /** Replaces a message the app posted. */
  async edit(key: SessionKey, id: string, activity: Partial<Activity>, signal?: AbortSignal): Promise<void> {
    await this.call(key, (ctx) => ctx.updateActivity(Activity.fromObject({ ...activity, id })), signal);
  }

  /**
   * Runs `fn` in a turn context on the session's conversation, after its place in the budget,
   * tried again on Teams' retry statuses.
   */
  async call<T>(key: SessionKey, fn: (ctx: TurnContext) => Promise<T>, signal?: AbortSignal): Promise<T> {
    const address = await this.address(key);
    const conversation = conversationIdOf(key, address);
    const started = Date.now();
    for (let attempt = 0; ; attempt++) {
      await this.#budget.take(conversation, signal);
      try {
        return await this.open(key, address, fn);
      } catch (error) {
        const wait = retryAfterOf(error, attempt);
        if (wait === undefined || Date.now() - started + wait > RETRY_FOR_MS) throw error;
        this.#logger.warn(
          { status: (error as HttpError).status, waitMs: wait },
          'Teams asked to wait; trying again',
        );
        // The hold makes this call's next turn in the budget, and every other call to the
        // conversation, wait the time Teams gave; the call keeps its place in the queue.
        this.#budget.hold(conversation, wait);
      }
    }
  }

  /**
   * A member of the session's conversation as Teams knows them (the Bot Connector's member
   * lookup, by their 29: id or Entra object id): undefined when Teams does not say in time.
   */
  async member(key: SessionKey, memberId: string, signal: AbortSignal): Promise<MemberInfo | undefined> {
    try {
      const address = await this.address(key);
      const lookup = this.open(key, address, async (ctx) => {
        const client = ctx.turnState.get(this.#adapter.ConnectorClientKey) as ConnectorClient;
        return member.safeParse(await client.getConversationMember(memberId, key.channelId));
      });
      const aborted = new Promise<undefined>((resolve) =>
        signal.addEventListener('abort', () => resolve(undefined)),
      );
      const found = await Promise.race([lookup, aborted]);
      return found?.success === true ? found.data : undefined;
    } catch {
      return undefined;
    }
  }

  /** A turn context on the conversation, with no budget: the streaming answer paces itself. */
  async open<T>(
    key: SessionKey,
    address: TeamsAddress,
    fn: (ctx: TurnContext) => Promise<T>,
    conversationId?: string,
  ): Promise<T> {
    let result: T | undefined;
    const reference = referenceOf(key, address, conversationId);
    await this.#adapter.continueConversation(this.#appId, reference, async (ctx) => {
      result = await fn(ctx);
    });
    return result as T;
  }
}

/** How long Teams asked to wait before trying `error`'s call again; undefined: not a retry status. */
export function retryAfterOf(error: unknown, attempt: number): number | undefined {
  if (!(error instanceof HttpError) || !RETRY_STATUSES.has(error.status)) return undefined;
  const header = error.response?.headers?.get?.('retry-after') ?? null;
  const seconds = header === null ? Number.NaN : Number(header);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds * 1000, RETRY_FOR_MS);
  return Math.min(1_000 * 2 ** attempt, 30_000);
}
