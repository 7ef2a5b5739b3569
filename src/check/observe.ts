import { randomUUID } from 'node:crypto';
import { identityHeaders, personHeaders } from '../a2a/identity.js';
import { type A2AClient, type AgentCardInfo, cardUrl, isTerminal, type Task } from '../a2a/index.js';
import { decodeResponse } from '../a2a/jsonrpc.js';
import type { PersonIdentity } from '../a2a/options.js';
import { v0_3 } from '../a2a/wire/v0_3/codec.js';
import { v1_0 } from '../a2a/wire/v1_0/codec.js';
import { untilAborted } from '../core/until-aborted.js';
import { MAX_TTL_SECONDS } from '../identity/assertions.js';
import { AssertionSigner, KeyRing, newKeyEntry } from '../identity/index.js';
import type { CheckOptions } from './args.js';
import { attempt, type Budget, RUN_BUDGET_CALLS } from './calls.js';
import { describeError } from './describe.js';
import type {
  CardObservation,
  HttpProbe,
  IdentityProbes,
  ListObservation,
  Observations,
  Outcome,
  SubscribeObservation,
  UnsupportedMethodProbe,
} from './observations.js';
import { probe } from './probe.js';
import { summarize, turnTask } from './summary.js';
import { followUp, sendPolledTurn, sendTurn as sendStreamedTurn } from './turn.js';

/**
 * The checker's calls, in a fixed order, each bounded, each recorded in Observations:
 *
 *   1. GET the card (raw, then through the client, which applies the broker's own checks)
 *   2. a JSON-RPC method no agent has (raw): transport, and which error code it answers
 *   3. send #1: a first turn, no context
 *   4. send #2: a second turn in the context the first one returned
 *   5. send #3: the first turn's messageId again, no context, as the broker resends
 *   6. GetTask, SubscribeToTask, CancelTask on the first turn's task (settled by then)
 *   7. ListTasks by the first turn's context (1.0 only)
 *
 * After each send, a task that did not end is read with GetTask (as the broker does) and then
 * cancelled if it still has not ended.
 *
 * With `--polling` and a card without streaming, each send is SendMessage (asking for an
 * immediate return) followed by GetTask reads until the task settles (P-2, P-3), and step 6
 * leaves SubscribeToTask out: the broker never calls it on such an agent (P-1).
 *
 * The order is part of the interface: tests script the contract agent call by call. Every send
 * is a clearly marked probe, and each task the checker starts ends settled or cancelled.
 */

export const PROBE_TEXT = 'agentkourier check: please reply briefly';
export const SECOND_TURN_TEXT =
  'agentkourier check: second turn in the same conversation, please reply briefly';
/** A method name no A2A agent has, so the only right answer is -32601 (method not found). */
export const UNSUPPORTED_METHOD = 'agentkourier/check-unsupported-method';

/** The Binding a checker's assertions name (their sub is broker:<it>: no person asks). */
export const CHECK_BINDING = 'agentkourier-check';

export interface CheckSession {
  options: CheckOptions;
  client: A2AClient;
  /** With --identity-keys: signs the assertions every call carries. */
  signer?: AssertionSigner;
  /** Reports clean-up problems (stderr); never part of the verdicts. */
  note(line: string): void;
}

export async function observe(session: CheckSession): Promise<Observations> {
  const { options, client } = session;
  const obs: Observations = {
    endpoint: options.endpoint,
    dialect: options.dialect,
    speaks: options.speaks,
    timeoutMs: options.timeoutMs,
    polling: options.polling,
    polled: false,
    headersLimitMs: Math.min(options.timeoutMs, 30_000),
    card: undefined,
    unsupported: undefined,
    identity: undefined,
    firstTurn: undefined,
    secondTurn: undefined,
    repeat: undefined,
    getTask: undefined,
    subscribe: undefined,
    cancel: undefined,
    listTasks: undefined,
    callErrors: [],
    stopped: undefined,
  };
  const run = AbortSignal.timeout((options.timeoutMs + 1000) * RUN_BUDGET_CALLS);
  const budget: Budget = { timeoutMs: options.timeoutMs, run };
  const record = <T>(call: string, outcome: Outcome<T>): Outcome<T> => {
    if (!outcome.ok) obs.callErrors.push({ call, error: outcome.error });
    return outcome;
  };

  obs.card = await observeCard(session, obs.headersLimitMs, budget);
  if (obs.card.probe.kind === 'unreachable') {
    obs.stopped = 'the agent could not be reached';
    return obs;
  }
  const card = obs.card.client;
  if (card === undefined || !card.ok) {
    obs.stopped = 'the broker refuses this card (see card.*)';
    return obs;
  }
  obs.unsupported = await probeUnsupported(session, card.value, obs.headersLimitMs);
  if (session.signer !== undefined && options.identity.kind === 'person')
    obs.identity = await probeIdentity(
      session,
      session.signer,
      options.identity,
      card.value,
      obs.headersLimitMs,
    );
  obs.polled = options.polling && !card.value.streaming;
  const sendTurn = obs.polled ? sendPolledTurn : sendStreamedTurn;

  const messageId = `agentkourier-check-${randomUUID()}`;
  obs.firstTurn = await sendTurn(client, { messageId, text: PROBE_TEXT }, budget);
  await settle(session, obs.firstTurn, budget, obs);
  const first = turnTask(obs.firstTurn);
  if (first === undefined) {
    obs.stopped = 'the first turn named no single task and context (see reply.task-events, reply.ids)';
    return obs;
  }

  obs.secondTurn = await sendTurn(
    client,
    { messageId: `agentkourier-check-${randomUUID()}`, text: SECOND_TURN_TEXT, contextId: first.contextId },
    budget,
  );
  await settle(session, obs.secondTurn, budget, obs);

  obs.repeat = await sendTurn(client, { messageId, text: PROBE_TEXT }, budget);
  await settle(session, obs.repeat, budget, obs);

  const { taskId, contextId } = first;
  obs.getTask = record('GetTask', await attempt(budget, (signal) => client.getTask(taskId, { signal })));
  if (!obs.polled)
    obs.subscribe = record(
      'SubscribeToTask',
      await attempt(budget, (signal) => firstEvent(client, taskId, signal)),
    );
  obs.cancel = record('CancelTask', await attempt(budget, (signal) => client.cancelTask(taskId, { signal })));
  obs.listTasks = (await client.canListTasks())
    ? record('ListTasks', await attempt(budget, (signal) => findTurn(client, contextId, messageId, signal)))
    : 'not-in-version';
  if (run.aborted) obs.stopped = 'the check ran out of time';
  return obs;
}

async function observeCard(
  session: CheckSession,
  headersLimitMs: number,
  budget: Budget,
): Promise<CardObservation> {
  const { options, client } = session;
  const url = cardUrl(options.endpoint);
  const http = await probe({
    url,
    method: 'GET',
    // As the client asks (DT-8): same identity, and A2A-Version so a dual server picks 1.0's layout.
    headers: {
      ...identityHeaders(options.identity, options.headers),
      ...v1_0.versionHeaders(),
      accept: 'application/json',
    },
    headersTimeoutMs: headersLimitMs,
    maxBodyBytes: 512 * 1024,
  });
  let json: unknown;
  if (http.kind === 'response' && http.status >= 200 && http.status < 300) {
    try {
      json = JSON.parse(http.body);
    } catch {
      json = undefined;
    }
  }
  const observation: CardObservation = { url, probe: http, json, client: undefined };
  if (http.kind !== 'unreachable') {
    // card() takes no signal; the race bounds a card that trickles in for ever.
    observation.client = await attempt(budget, (signal) => untilAborted(client.card(), signal));
  }
  return observation;
}

async function probeUnsupported(
  session: CheckSession,
  card: AgentCardInfo,
  headersLimitMs: number,
): Promise<UnsupportedMethodProbe> {
  const { options } = session;
  const codec = card.protocolVersion === '1.0' ? v1_0 : v0_3;
  const id = randomUUID();
  const http = await probe({
    url: options.endpoint,
    method: 'POST',
    headers: {
      ...identityHeaders(options.identity, options.headers),
      ...(session.signer !== undefined && options.identity.kind === 'person'
        ? await personHeaders(options.identity, session.signer.sourceFor(CHECK_BINDING), undefined)
        : {}),
      ...codec.versionHeaders(),
      'content-type': 'application/json',
      accept: 'application/json',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: UNSUPPORTED_METHOD, params: {} }),
    headersTimeoutMs: headersLimitMs,
    maxBodyBytes: 64 * 1024,
  });
  const out: UnsupportedMethodProbe = {
    method: UNSUPPORTED_METHOD,
    http,
    rpcCode: undefined,
    rpcMessage: '',
  };
  if (http.kind === 'response' && http.contentType.includes('json')) {
    try {
      const reply = decodeResponse(http.body, id);
      if (!reply.ok) {
        out.rpcCode = reply.error.code;
        out.rpcMessage = reply.error.message;
      }
    } catch {
      // Not a JSON-RPC envelope: the rule reports the HTTP status instead.
    }
  }
  return out;
}

/**
 * Follows a turn whose stream ended early, then cancels its task unless it ended: a probe leaves
 * nothing running, and the next turn in the context must not overlap it.
 */
async function settle(
  session: CheckSession,
  turn: NonNullable<Observations['firstTurn']>,
  budget: Budget,
  obs: Observations,
): Promise<void> {
  if (turn.failure !== undefined)
    obs.callErrors.push({
      call: obs.polled ? 'SendMessage' : 'SendStreamingMessage',
      error: turn.failure.error,
    });
  await followUp(session.client, turn, budget);
  if (turn.followUp?.ok === false) obs.callErrors.push({ call: 'GetTask', error: turn.followUp.error });
  const s = summarize(turn);
  if (s.settledState !== undefined && isTerminal(s.settledState)) return;
  for (const taskId of s.taskIds) {
    // Its own bound: clean-up must run even when the run's budget is spent.
    const own: Budget = { timeoutMs: budget.timeoutMs, run: new AbortController().signal };
    const outcome: Outcome<Task> = await attempt(own, (signal) =>
      session.client.cancelTask(taskId, { signal }),
    );
    if (!outcome.ok)
      session.note(`could not cancel the checker's task ${taskId}: ${describeError(outcome.error)}`);
  }
}

/** A subscription's first event: enough to see the method works, then the stream is closed. */
async function firstEvent(
  client: A2AClient,
  taskId: string,
  signal: AbortSignal,
): Promise<SubscribeObservation> {
  for await (const event of client.subscribeToTask(taskId, { signal })) return { first: event };
  return { first: undefined };
}

async function findTurn(
  client: A2AClient,
  contextId: string,
  messageId: string,
  signal: AbortSignal,
): Promise<ListObservation> {
  const out: ListObservation = { found: undefined, listed: 0, withHistory: 0 };
  for await (const task of client.listTasks(contextId, { signal })) {
    out.listed++;
    if (task.history.length > 0) out.withHistory++;
    if (out.found === undefined && task.history.some((m) => m.messageId === messageId)) out.found = task;
  }
  return out;
}

/**
 * Step 2b, with --identity-keys: GetTask for a task that does not exist, four times, each with
 * one assertion: a good one (the agent answers, typically task not found), and three it must
 * refuse with 401 or 403 — signed by another key under the good key's id, expired five minutes
 * ago, and for another audience.
 */
async function probeIdentity(
  session: CheckSession,
  signer: AssertionSigner,
  identity: PersonIdentity,
  card: AgentCardInfo,
  headersLimitMs: number,
): Promise<IdentityProbes> {
  const { options } = session;
  const codec = card.protocolVersion === '1.0' ? v1_0 : v0_3;
  const header = identity.header.toLowerCase();
  const send = async (token: string): Promise<HttpProbe> => {
    const id = randomUUID();
    return probe({
      url: options.endpoint,
      method: 'POST',
      headers: {
        ...options.headers,
        [header]: header === 'authorization' ? `Bearer ${token}` : token,
        ...codec.versionHeaders(),
        'content-type': 'application/json',
        accept: 'application/json',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id,
        method: codec.methods.get,
        params: { id: `agentkourier-check-${id}` },
      }),
      headersTimeoutMs: headersLimitMs,
      maxBodyBytes: 64 * 1024,
    });
  };
  const { audience } = identity;
  const kid = signer.signingKid();
  const forged = new AssertionSigner({
    issuer: signer.issuer,
    keys: await KeyRing.of([{ ...(await newKeyEntry('ES256', new Date(0))), kid }]),
  });
  const late = new AssertionSigner({
    issuer: signer.issuer,
    keys: signer.keyRing,
    now: () => Date.now() - 2 * MAX_TTL_SECONDS * 1000,
  });
  return {
    good: await send((await signer.sign(undefined, audience, CHECK_BINDING)).token),
    badSignature: await send((await forged.sign(undefined, audience, CHECK_BINDING)).token),
    expired: await send((await late.sign(undefined, audience, CHECK_BINDING)).token),
    otherAudience: await send(
      (await signer.sign(undefined, `${audience}#another-agent`, CHECK_BINDING)).token,
    ),
  };
}
