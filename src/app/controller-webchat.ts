import type { Logger } from 'pino';
import type { WebChatSettings } from '../config/webchat.js';
import type { LiveRegistry } from '../core/registry.js';
import type { TranscriptStore } from '../core/transcript-store.js';
import type { Observability } from '../observability/index.js';
import { createWebChat, type WebChat, WebChatSurface } from '../surfaces/webchat/index.js';
import type { BrokerCore, ComposeOptions } from './broker.js';

/**
 * The web chat in the controller (opt-in, AGENTKOURIER_WEBCHAT_PORT): the local web chat as it
 * is, so a platform engineer can try a Binding before wiring Slack, through kubectl
 * port-forward and behind a token. Three steps, each at its place in the controller's start:
 *
 *   const web = new ControllerWebChat(settings, store, logger);  // before compose: its surface
 *   broker.compose({ …, ...web.composeOptions() });
 *   await web.restore();       // once the store is migrated, before the engine serves
 *   await web.listen(core, …); // with the other ports, once the engine serves
 *
 * Its threads live in this process and in the store (transcripts), so it is meant for one
 * replica (the chart refuses more). Trigger threads stay Slack's: none starts here.
 *
 * Everyone who holds its token is the same anonymous person to it, so it decides no tool
 * approval of a Binding whose approvals name approvers (approverGroups, approvers): those are
 * decided in Slack, where the broker knows who presses. Its questions it answers.
 */
export class ControllerWebChat {
  readonly surface: WebChatSurface;
  readonly #settings: WebChatSettings;
  readonly #logger: Logger;

  constructor(
    settings: WebChatSettings,
    transcripts: TranscriptStore,
    registry: LiveRegistry,
    logger: Logger,
  ) {
    this.#settings = settings;
    this.#logger = logger;
    this.surface = new WebChatSurface({
      transcripts,
      logger,
      approvalRefusal: (binding) => approvalRefusal(registry, binding),
    });
  }

  /** What compose() takes: the surface by name, its activity, its last writes before the store closes. */
  composeOptions(): Pick<ComposeOptions, 'surfaces' | 'sinks' | 'beforeStoreCloses'> {
    return {
      surfaces: { webchat: this.surface },
      sinks: [this.surface.activity],
      beforeStoreCloses: () => this.surface.close(),
    };
  }

  /** The threads kept before a restart, read back before the engine resumes their sessions. */
  async restore(): Promise<void> {
    const restored = await this.surface.restore();
    if (restored > 0) this.#logger.info({ threads: restored }, 'web chat threads restored');
  }

  listen(
    core: BrokerCore,
    registry: LiveRegistry,
    observability: Observability,
    pageScript?: () => Promise<string>,
  ): Promise<WebChat> {
    return createWebChat({
      engine: core.engine,
      surface: this.surface,
      registry,
      audit: observability.approvals,
      host: this.#settings.host,
      port: this.#settings.port,
      token: this.#settings.token,
      logger: this.#logger,
      ...(pageScript === undefined ? {} : { pageScript }),
    });
  }
}

/** Why the in-cluster web chat may not decide this Binding's tool approvals, if it may not. */
export function approvalRefusal(registry: Pick<LiveRegistry, 'get'>, binding: string): string | undefined {
  const approvals = registry.get(binding)?.toolApprovals;
  if (approvals === undefined) return undefined;
  if (approvals.approverGroups.length === 0 && approvals.approvers.length === 0) return undefined;
  return (
    'The tool calls of this agent are approved in Slack by the people its Binding names: ' +
    'this web chat cannot tell who you are, so it cannot decide them.'
  );
}
