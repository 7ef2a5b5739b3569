import { MalformedResponseError, UnsupportedByVersionError } from '../core/agent/errors.js';
import type {
  MessageEvent,
  OutgoingMessage,
  StreamEvent,
  Task,
  TaskEvent,
  TaskPage,
} from '../core/agent/model.js';
import type { AgentDescription } from '../core/ports.js';
import { untilAborted } from '../core/until-aborted.js';
import type { AgentCardInfo } from './card.js';
import { fetchCard } from './card-fetch.js';
import type { CallKind } from './jsonrpc.js';
import { type A2AClientOptions, type ResolvedOptions, resolveOptions } from './options.js';
import { streamCall } from './streaming.js';
import type { ClientTelemetry } from './telemetry.js';
import { type CallOptions, Transport } from './transport.js';
import type { WireCodec } from './wire/codec.js';
import { v0_3 } from './wire/v0_3/codec.js';
import { v1_0 } from './wire/v1_0/codec.js';

// What the client's callers import with it.
export { type CallDiagnostic, type CallOptions, callChannel } from './transport.js';

/**
 * An A2A client for one endpoint and one identity, at 1.0 or 0.3 as the card says. Streams are
 * async generators of the internal model; failures are the typed errors of errors.ts. Its
 * parts: the card's fetch (card-fetch.ts), what every call is made with (transport.ts), the
 * streaming calls (streaming.ts) and the two wire versions (wire/).
 */
export class A2AClient {
  #options: ResolvedOptions;
  /** The card read in flight or done; `until` is when a pending read is given up on. */
  #card: { promise: Promise<AgentCardInfo>; pending: boolean; until: number } | undefined;
  readonly #telemetry: ClientTelemetry;
  #transport: Transport;

  /**
   * `telemetry` stays with the client across `reconfigure` (it is the process's, not the
   * Binding's settings): the tracer for call spans and a report of every finished call.
   */
  constructor(options: A2AClientOptions, telemetry: ClientTelemetry = {}) {
    this.#options = resolveOptions(options);
    this.#telemetry = telemetry;
    this.#transport = this.#transportFor(this.#options);
  }

  #transportFor(options: ResolvedOptions): Transport {
    return new Transport(options, this.#telemetry, () => this.card());
  }

  get endpoint(): string {
    return this.#options.endpoint;
  }

  /**
   * DT-8: the card is fetched on first use and cached. Changing the endpoint, the identity or
   * the static headers forgets it, so the next call fetches it again with the new credentials.
   */
  reconfigure(options: A2AClientOptions): void {
    const next = resolveOptions(options);
    const prev = this.#options;
    this.#options = next;
    this.#transport = this.#transportFor(next);
    if (
      prev.endpoint !== next.endpoint ||
      JSON.stringify(prev.identity) !== JSON.stringify(next.identity) ||
      JSON.stringify(prev.headers) !== JSON.stringify(next.headers) ||
      prev.extensions.join(' ') !== next.extensions.join(' ') ||
      prev.polling !== next.polling
    ) {
      this.invalidateCard();
    }
  }

  invalidateCard(): void {
    this.#card = undefined;
  }

  /**
   * The agent's card, checked against DT-1..DT-4. A failed fetch is not cached, and a pending one
   * is shared only until its deadline: the fetch is bounded by `timeouts.cardTotalMs`, and a
   * caller that finds it still pending later than that (timers held up) starts a fresh one, so
   * every call on a Binding never waits behind one stuck read.
   */
  /** The card's name and skills (a chat's suggested prompts); the card is read as for a call. */
  async describe(): Promise<AgentDescription> {
    const card = await this.card();
    return { name: card.name, skills: card.skills };
  }

  card(): Promise<AgentCardInfo> {
    const now = performance.now();
    const held = this.#card;
    if (held !== undefined && !(held.pending && now > held.until)) return held.promise;
    const entry = {
      promise: fetchCard(this.#transport),
      pending: true,
      until: now + this.#options.timeouts.cardTotalMs + 1000,
    };
    this.#card = entry;
    entry.promise.then(
      () => {
        entry.pending = false;
      },
      () => {
        entry.pending = false;
        if (this.#card === entry) this.#card = undefined;
      },
    );
    return entry.promise;
  }

  /** M-1: SendStreamingMessage (message/stream). An answer (taskId set) has its own errors (E-4). */
  sendStreamingMessage(message: OutgoingMessage, options: CallOptions = {}): AsyncGenerator<StreamEvent> {
    const kind: CallKind = message.taskId === undefined || message.taskId === '' ? 'send' : 'answer';
    return streamCall(
      this.#transport,
      (signal) => this.#wire(signal),
      (codec, card) => [codec.methods.sendStream, codec.sendParams(message, card.tenant)],
      kind,
      options,
    );
  }

  /**
   * P-2: the non-streaming SendMessage (message/send), for an agent that does not stream and a
   * backend that opted into polling. Asks for an immediate return (returnImmediately on 1.0,
   * blocking false on 0.3): the task is followed with GetTask. The answer is the agent's Task,
   * or a bare Message from an agent that replies without one.
   */
  async sendMessage(message: OutgoingMessage, options: CallOptions = {}): Promise<TaskEvent | MessageEvent> {
    const kind: CallKind = message.taskId === undefined || message.taskId === '' ? 'send' : 'answer';
    const { codec, card } = await this.#wire(options.signal);
    const result = await this.#transport.call(
      codec,
      codec.methods.send,
      codec.sendParams(message, card.tenant, { returnImmediately: true }),
      options,
      kind,
    );
    const event = codec.decodeEvent(result);
    if (event.kind === 'task' || event.kind === 'message') return event;
    throw new MalformedResponseError('the agent answered a send with neither a Task nor a Message');
  }

  /** Whether the agent's card advertises streaming (false only when polling let it in). */
  async streams(): Promise<boolean> {
    return (await this.card()).streaming;
  }

  /** M-3: SubscribeToTask (tasks/resubscribe). Starts with a snapshot of the task. */
  subscribeToTask(taskId: string, options: CallOptions = {}): AsyncGenerator<StreamEvent> {
    return streamCall(
      this.#transport,
      (signal) => this.#wire(signal),
      (codec, card) => [codec.methods.subscribe, codec.taskIdParams(taskId, card.tenant)],
      'other',
      options,
    );
  }

  /** M-2: GetTask (tasks/get). */
  async getTask(taskId: string, options: CallOptions & { historyLength?: number } = {}): Promise<Task> {
    const { codec, card } = await this.#wire(options.signal);
    const result = await this.#transport.call(
      codec,
      codec.methods.get,
      codec.taskIdParams(taskId, card.tenant, options.historyLength),
      options,
    );
    return codec.decodeTask(result);
  }

  /** M-4: CancelTask (tasks/cancel). Returns the task as the agent reports it after the cancel. */
  async cancelTask(taskId: string, options: CallOptions = {}): Promise<Task> {
    const { codec, card } = await this.#wire(options.signal);
    const result = await this.#transport.call(
      codec,
      codec.methods.cancel,
      codec.taskIdParams(taskId, card.tenant),
      options,
    );
    return codec.decodeTask(result);
  }

  /** Whether ListTasks exists for this agent (1.0 only, M-6). */
  async canListTasks(): Promise<boolean> {
    const { codec } = await this.#wire();
    return codec.methods.list !== undefined;
  }

  /**
   * M-5/M-6: the tasks of a context, page by page, following nextPageToken for at most
   * `listTasks.maxPages` pages, each task with history so a turn's messageId can be looked for.
   */
  async *listTasks(contextId: string, options: CallOptions = {}): AsyncGenerator<Task> {
    const { codec, card } = await this.#wire(options.signal);
    const method = codec.methods.list;
    if (method === undefined) throw new UnsupportedByVersionError('ListTasks', codec.version);
    const { pageSize, maxPages, historyLength } = this.#options.listTasks;
    let pageToken = '';
    const seenTokens = new Set<string>();
    for (let page = 0; page < maxPages; page++) {
      const params = codec.listParams({ contextId, pageSize, pageToken, historyLength }, card.tenant);
      const result: TaskPage = codec.decodeTaskPage(
        await this.#transport.call(codec, method, params, options),
      );
      yield* result.tasks;
      pageToken = result.nextPageToken;
      // A token we have followed already would loop for ever; stop as if the list ended.
      if (pageToken === '' || seenTokens.has(pageToken)) return;
      seenTokens.add(pageToken);
    }
  }

  /**
   * M-6: the task of `contextId` whose history holds `messageId`, if any. A task counts only by
   * its history: an agent that lists tasks without history makes every turn look absent.
   */
  async findTaskByMessageId(
    contextId: string,
    messageId: string,
    options: CallOptions = {},
  ): Promise<Task | undefined> {
    for await (const task of this.listTasks(contextId, options)) {
      if (task.history.some((m) => m.messageId === messageId)) return task;
    }
    return undefined;
  }

  /** The card and codec for a call; a call whose signal aborts stops waiting for the card. */
  async #wire(signal?: AbortSignal): Promise<{ codec: WireCodec; card: AgentCardInfo }> {
    // A card already read is not waited for: no abort listener, added and removed, per call.
    const held = this.#card;
    let card: AgentCardInfo;
    if (held !== undefined && !held.pending) {
      if (signal?.aborted) throw signal.reason;
      card = await held.promise;
    } else card = await untilAborted(this.card(), signal);
    return { codec: card.protocolVersion === '1.0' ? v1_0 : v0_3, card };
  }
}
