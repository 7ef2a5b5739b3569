import {
  type AuthConfiguration,
  CloudAdapter,
  ConnectionManager,
  OutboundHostValidator,
} from '@microsoft/agents-hosting';
import type { Logger } from 'pino';
import type { TeamsConfig } from '../../config/teams.js';
import type { ApprovalAuditSink } from '../../core/approval-audit.js';
import type { ChatAddressRows } from '../../core/chat-address-store.js';
import type { ChatInbound } from '../../core/inbound.js';
import type { SignOut } from '../../core/ports.js';
import type { ChannelDirectory, LiveBinding } from '../../core/registry.js';
import { appCredential, readCertificate } from './app-credential.js';
import { AppTokens } from './app-token.js';
import { ThreadBudget } from './budget.js';
import { TeamsApprovers } from './cards/approvers.js';
import { type RefusalCounter, TeamsDecisions } from './cards/decisions.js';
import { TeamsTokenError } from './errors.js';
import { listenTeams, type TeamsEndpoint } from './http.js';
import { TeamsInbound } from './inbound.js';
import { TeamsPeople } from './people.js';
import { TeamsSender } from './sender.js';
import { TeamsSurface } from './surface.js';
import { TeamsTriggerThreads } from './trigger-threads.js';

/**
 * Microsoft Teams, wired: the Agents SDK's CloudAdapter with the app's connection (its client
 * id as the audience inbound tokens must name, its tenant and authority as the issuer and keys
 * they must come from, issuer checks on), the app's own tokens for outbound calls (./app-token.ts),
 * the service URLs it may send to (Microsoft's and any named in TEAMS_SERVICE_URL_HOSTS), the
 * engine's chat port (./surface.ts) and, once `listen` runs, the messaging endpoint feeding the
 * engine (./http.ts, ./inbound.ts). docs/teams.md says how to register the app.
 */

export interface TeamsConnectOptions {
  config: TeamsConfig;
  logger: Logger;
  bindings: ChannelDirectory & { get(ref: string): LiveBinding | undefined };
  addresses: ChatAddressRows;
  /** Where each tool approval decided in Teams is recorded. */
  audit?: ApprovalAuditSink;
  /** Where refused approval presses are counted. */
  counters?: RefusalCounter;
  /** Edits of a growing answer, at most one per this long (tests shorten it). */
  editPaceMs?: number;
}

/** The Bot Connector's token audience, as the SDK picks it: the US government cloud's, or the public one. */
function botConnectorScope(authority: string): string {
  return /login\.microsoftonline\.us/i.test(authority)
    ? 'https://api.botframework.us'
    : 'https://api.botframework.com';
}

const errorName = (error: unknown): string => (error instanceof Error ? error.name : typeof error);

/** A certificate this close to its end is logged as a warning at start. */
const CERTIFICATE_WARN_DAYS = 14;

export class TeamsConnection {
  readonly surface: TeamsSurface;
  /** Alerts' and schedules' threads in Teams channels. */
  readonly triggers: TeamsTriggerThreads;
  readonly #o: TeamsConnectOptions;
  readonly #adapter: CloudAdapter;
  readonly #sender: TeamsSender;
  #inbound: Pick<ChatInbound, 'cancel'> | undefined;
  readonly #tokens: AppTokens;
  readonly #people: TeamsPeople;
  #endpoint: TeamsEndpoint | undefined;

  constructor(options: TeamsConnectOptions) {
    this.#o = options;
    const { config, logger } = options;
    const connection: AuthConfiguration = {
      clientId: config.appId,
      tenantId: config.appTenantId,
      authorityEndpoint: config.authority,
      validateIssuer: true,
    };
    const connections = new Map([['serviceConnection', connection]]);
    const connectionsMap = [{ serviceUrl: '*', connection: 'serviceConnection' }];
    const auth: AuthConfiguration = { ...connection, connections, connectionsMap };
    const hosts = new OutboundHostValidator({
      enabled: true,
      includeDefaultMicrosoftHosts: true,
      hosts: config.serviceUrlHosts,
    });
    this.#adapter = new CloudAdapter(auth, undefined, undefined, { validateServiceUrl: true }, hosts);
    const tokens = new AppTokens({
      clientId: config.appId,
      credential: appCredential(config.appId, config.credential),
      tenantId: config.appTenantId,
      authority: config.authority,
    });
    this.#tokens = tokens;
    this.#adapter.connectionManager = new ConnectionManager(() => tokens, connections, connectionsMap, auth);
    // The SDK's default tells the person "the agent encountered an error": an activity the broker
    // could not take is answered 500 instead, so Teams delivers it again.
    this.#adapter.onTurnError = async (_ctx, error) => {
      throw error;
    };
    this.#sender = new TeamsSender({
      adapter: this.#adapter,
      appId: config.appId,
      addresses: options.addresses,
      budget: new ThreadBudget(),
      logger,
    });
    this.triggers = new TeamsTriggerThreads(this.#sender);
    const sender = this.#sender;
    this.#people = new TeamsPeople((key, memberId, signal) => sender.member(key, memberId, signal));
    this.surface = new TeamsSurface({
      sender: this.#sender,
      people: (key, actorId) => this.#people.member(key, actorId),
      logger,
      ...(options.editPaceMs === undefined ? {} : { editPaceMs: options.editPaceMs }),
      stop: (key, turnId, actorId) => {
        const inbound = this.#inbound;
        if (inbound === undefined) return;
        inbound.cancel(key, { actor: { id: actorId ?? 'teams' }, turnId }).then(
          (result) => logger.info({ turnId, status: result.status }, 'a person stopped an answer in Teams'),
          (error: unknown) =>
            logger.error(
              { err: error instanceof Error ? error.name : typeof error },
              'a Teams stop did not cancel',
            ),
        );
      },
    });
  }

  /** The messaging endpoint's URL, once listening. */
  get url(): string | undefined {
    return this.#endpoint?.url;
  }

  /** Listens on TEAMS_PORT (or `port`), feeding the engine. */
  async listen(o: {
    inbound: Pick<ChatInbound, 'receive' | 'cancel' | 'answer' | 'findSession' | 'claimEvent'>;
    /** The "sign out" command (src/identity/sign-in/). */
    signOut?: SignOut;
    port?: number;
  }): Promise<void> {
    this.#inbound = o.inbound;
    const { config, logger } = this.#o;
    if (config.credential.kind === 'certificate') {
      // A certificate that cannot be used stops the start, rather than every answer later.
      const { notAfter } = await readCertificate(
        config.credential.certificateFile,
        config.credential.keyFile,
      );
      const daysLeft = (notAfter.getTime() - Date.now()) / 86_400_000;
      if (daysLeft < CERTIFICATE_WARN_DAYS)
        logger.warn({ notAfter: notAfter.toISOString() }, 'the Teams app certificate expires soon: renew it');
      else logger.info({ notAfter: notAfter.toISOString() }, 'Teams app authenticates with its certificate');
    }
    await this.#checkCredentials();
    const decisions = new TeamsDecisions({
      inbound: o.inbound,
      approvers: new TeamsApprovers({
        graphUrl: config.graphUrl,
        token: () => this.#tokens.getAccessToken(config.graphUrl),
        logger,
      }),
      sender: this.#sender,
      ...(this.#o.audit === undefined ? {} : { audit: this.#o.audit }),
      ...(this.#o.counters === undefined ? {} : { counters: this.#o.counters }),
      logger,
    });
    const inbound = new TeamsInbound({
      tenants: this.#o.config.tenants,
      bindings: this.#o.bindings,
      decisions,
      people: this.#people,
      addresses: this.#o.addresses,
      sender: this.#sender,
      inbound: o.inbound,
      ...(o.signOut === undefined ? {} : { signOut: o.signOut }),
      logger: this.#o.logger,
    });
    this.#endpoint = await listenTeams({
      adapter: this.#adapter,
      handle: (ctx) => inbound.handle(ctx),
      host: this.#o.config.host,
      port: o.port ?? this.#o.config.port,
      logger: this.#o.logger,
    });
    this.#o.logger.info({ url: this.#endpoint.url }, 'Teams messaging endpoint listening');
  }

  /**
   * Asks Entra for the Bot Connector token at start (kept for the first sends): credentials
   * Entra refuses stop the start with its error code, rather than every answer later; an Entra
   * that cannot be reached is logged, and asked again when a send needs the token.
   */
  async #checkCredentials(): Promise<void> {
    const { config, logger } = this.#o;
    try {
      await this.#tokens.getAccessToken(botConnectorScope(config.authority));
    } catch (error) {
      if (error instanceof TeamsTokenError && error.status !== undefined && error.status < 500) throw error;
      logger.warn(
        { err: error instanceof TeamsTokenError ? error.entraError : errorName(error) },
        'Microsoft Entra did not answer at start: the Teams app token is asked for again when needed',
      );
    }
  }

  async stop(): Promise<void> {
    this.surface.close();
    await this.#endpoint?.close();
  }
}
