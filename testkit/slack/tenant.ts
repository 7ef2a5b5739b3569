import type { FakeMessage, FakeSlackOptions, FakeWorkspace, RecordedCall } from './api.js';
import { agentMethods } from './methods/agents.js';
import { conversationMethods } from './methods/conversations.js';
import { directoryMethods } from './methods/directory.js';
import { messageMethods } from './methods/messages.js';
import { streamMethods } from './methods/streams.js';
import { viewMethods } from './methods/views.js';
import { RateLimits } from './rate-limits.js';
import { type Handler, Workspace } from './workspace.js';

/**
 * One workspace the fake serves, with what Slack keeps per workspace and app: its state, its
 * bot token, and its own rate windows (Slack limits per method, per workspace, per app — so one
 * workspace's burst never throttles another's). An OAuth install (./oauth.ts) turns its token on;
 * an uninstall revokes it.
 */
export class Tenant {
  readonly ws: Workspace;
  readonly handlers: Record<string, Handler>;
  readonly rateLimits: RateLimits;
  readonly token: string;
  /** 'installed': the token works; 'new': never installed (invalid_auth); 'revoked': token_revoked. */
  state: 'installed' | 'new' | 'revoked';
  /** With token rotation: each access token handed out, and when it expires (ms). */
  readonly rotated = new Map<string, number>();
  /** With token rotation: the refresh tokens not used yet (each works once). */
  readonly refreshTokens = new Set<string>();

  constructor(options: FakeSlackOptions, state: Tenant['state']) {
    this.ws = new Workspace(options);
    this.token = options.botToken ?? 'xoxb-test';
    this.rateLimits = new RateLimits(options);
    this.state = state;
    this.handlers = {
      ...directoryMethods(this.ws),
      ...messageMethods(this.ws),
      ...streamMethods(this.ws),
      ...viewMethods(this.ws),
      ...conversationMethods(this.ws),
      ...agentMethods(this.ws),
    };
  }
}

/** What a test reads and arranges in one workspace of a fake that serves several. */
export class TeamView implements FakeWorkspace {
  readonly #tenant: Tenant;
  readonly #calls: () => readonly RecordedCall[];

  constructor(tenant: Tenant, calls: () => readonly RecordedCall[]) {
    this.#tenant = tenant;
    this.#calls = calls;
  }

  get teamId(): string {
    return this.#tenant.ws.teamId;
  }

  get botUserId(): string {
    return this.#tenant.ws.botUserId;
  }

  get botToken(): string {
    return this.#tenant.token;
  }

  get installed(): boolean {
    return this.#tenant.state === 'installed';
  }

  callsOf(method: string): RecordedCall[] {
    return this.#calls().filter((c) => c.method === method && c.team === this.teamId);
  }

  messages(channel: string, threadTs?: string): FakeMessage[] {
    return this.#tenant.ws.messages(channel, threadTs);
  }

  addUser(u: Parameters<FakeWorkspace['addUser']>[0]): void {
    this.#tenant.ws.addUser(u);
  }

  postUserMessage(m: { channel: string; user: string; text: string; threadTs?: string }): FakeMessage {
    return this.#tenant.ws.postUserMessage(m);
  }
}
