import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { z } from 'zod';
import { KourierError } from '../core/errors.js';
import {
  TRIGGER_PATH_PREFIX,
  type TriggerConfig,
  type TriggerDirectory,
  type TriggerObserver,
  type TriggerPlace,
  tokenMatches,
} from '../core/triggers.js';
import { readJsonBody } from '../http/json-body.js';
import { TRIGGER_LIMITS } from './limits.js';
import {
  alertmanagerPayload,
  describeIssues,
  fromAlertmanager,
  fromWebhook,
  type ParsedDelivery,
  webhookPayload,
} from './payloads.js';

/**
 * POST /triggers/<namespace>/<binding>/<name>: one webhook delivery, checked in this order so
 * that nothing partial is kept and every refusal says why:
 *
 *   401 no or wrong bearer token (constant-time compare), and the same 401 for a path that
 *   names no webhook trigger (a schedule takes no deliveries) or one without a token to check:
 *   this port is the one Slack reaches, so without a trigger's token nothing tells which
 *   namespaces, Bindings and triggers exist · 405 not a POST · 503 + Retry-After while the
 *   Binding or the trigger is not ready, no chat surface can take its threads, the process is
 *   draining, or the store failed (Alertmanager retries 5xx) · 415 not JSON · 413 over the
 *   body limit · 400 not JSON, or not the trigger's payload (with the fields at fault) ·
 *   200 recorded (opened, continued, resolved, throttled, duplicate or ignored).
 *
 * Alertmanager retries 5xx and drops 4xx, so only what can never succeed is a 4xx.
 */

export interface DeliveryOutcome {
  outcome: string;
  group: string;
  newAlerts: number;
  resolvedAlerts: number;
}

export interface TriggerHttpDeps {
  directory: TriggerDirectory;
  /** Where the trigger's threads go now (undefined: 503). */
  place(trigger: TriggerConfig): TriggerPlace | undefined;
  /** Records the delivery (claims, work) and wakes the worker. */
  deliver(trigger: TriggerConfig, place: TriggerPlace, parsed: ParsedDelivery): Promise<DeliveryOutcome>;
  /** A refused payload's activity, for status (its failure is logged, not returned). */
  refused(trigger: TriggerConfig, result: string): void;
  draining?: () => boolean;
  observer?: TriggerObserver;
  logger: Logger;
}

/** Retry-After while a Binding is not ready: Alertmanager has its own backoff; this is a hint. */
const NOT_READY_RETRY_S = 30;
const SEGMENT = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

class Refusal extends KourierError {
  constructor(
    readonly status: number,
    code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(code, message);
  }
}

/**
 * The request listener of the trigger routes: returns false for any other path (the caller
 * serves it), true when it took the request (and answers it, asynchronously).
 */
export function triggerRoutes(deps: TriggerHttpDeps): (req: IncomingMessage, res: ServerResponse) => boolean {
  const log = deps.logger.child({ component: 'triggers' });
  return (req, res) => {
    const path = (req.url ?? '').split('?')[0] ?? '';
    if (!path.startsWith(TRIGGER_PATH_PREFIX)) return false;
    let trigger: TriggerConfig | undefined;
    const served = (async () => {
      const found = lookup(deps.directory, path);
      // The token before anything that depends on the trigger existing, the method included.
      const authenticated = authenticate(req, found);
      if (authenticated === undefined) {
        if (found?.tokenDigest === undefined && found !== undefined)
          log.warn(
            { binding: found.binding, trigger: found.name, problem: problemText(found) },
            'a delivery was refused: the trigger has no token to check it against',
          );
        trigger = found;
        throw new Refusal(401, 'unauthorized', UNAUTHORIZED);
      }
      trigger = authenticated;
      if (req.method !== 'POST')
        throw new Refusal(405, 'method_not_allowed', 'deliveries are POSTed', { Allow: 'POST' });
      if (deps.draining?.() === true)
        throw new Refusal(503, 'shutting_down', 'this replica is shutting down', { 'Retry-After': '5' });
      const problem = problemText(authenticated);
      if (problem !== undefined) throw notReady(problem);
      const place = deps.place(authenticated);
      if (place === undefined)
        throw notReady('no chat surface that can take this trigger’s threads is running');
      const parsed = parse(authenticated, await readBody(req));
      let outcome: DeliveryOutcome;
      try {
        outcome = await deps.deliver(authenticated, place, parsed);
      } catch (error) {
        log.error(
          { binding: authenticated.binding, trigger: authenticated.name, err: describeError(error) },
          'could not record a delivery',
        );
        throw new Refusal(503, 'not_stored', 'the delivery could not be stored; send it again', {
          'Retry-After': '5',
        });
      }
      send(res, 200, outcome);
    })();
    served.catch((error: unknown) => {
      const refusal =
        error instanceof Refusal
          ? error
          : new Refusal(500, 'internal_error', 'the trigger failed to handle this request');
      if (!(error instanceof Refusal)) log.error({ err: describeError(error) }, 'a trigger request failed');
      const binding = trigger?.binding ?? '';
      deps.observer?.triggerDelivery(binding, trigger?.kind ?? 'unknown', resultOf(refusal));
      if (trigger !== undefined && (refusal.code === 'invalid_payload' || refusal.code === 'invalid_json'))
        deps.refused(trigger, 'invalid');
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const headers = { ...refusal.headers };
      if (refusal.status === 401) headers['WWW-Authenticate'] = 'Bearer realm="agentkourier-triggers"';
      // The rest of an oversized body is not read: close the connection rather than drain it.
      if (refusal.status === 413) headers.Connection = 'close';
      send(res, refusal.status, { error: { code: refusal.code, message: refusal.message } }, headers);
    });
    return true;
  };
}

/** The trigger a path names; undefined for anything that is not /triggers/<ns>/<binding>/<name>. */
function lookup(directory: TriggerDirectory, path: string): TriggerConfig | undefined {
  const parts = path.slice(TRIGGER_PATH_PREFIX.length).split('/');
  if (parts.length !== 3 || !parts.every((p) => p.length <= 253 && SEGMENT.test(p))) return undefined;
  const [namespace, binding, name] = parts as [string, string, string];
  const trigger = directory.get(`${namespace}/${binding}`, name);
  return trigger === undefined || trigger.kind === 'schedule' ? undefined : trigger;
}

const UNAUTHORIZED = 'send the webhook trigger’s token as Authorization: Bearer <token>';
/** Compared against when the path names no trigger, so that case takes as long as a wrong token. */
const NO_TRIGGER_DIGEST = Buffer.alloc(32);

/**
 * The trigger, when the request carries its token; undefined for no token, a wrong one, a path
 * naming no webhook trigger, or a trigger whose token Secret is missing (it takes nothing).
 */
function authenticate(req: IncomingMessage, trigger: TriggerConfig | undefined): TriggerConfig | undefined {
  const header = req.headers.authorization ?? '';
  const presented = /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1] ?? '';
  const digest = trigger?.tokenDigest;
  const matches = tokenMatches(presented, digest ?? NO_TRIGGER_DIGEST);
  return matches && digest !== undefined && presented !== '' ? trigger : undefined;
}

function problemText(trigger: TriggerConfig): string | undefined {
  const p = trigger.problem;
  return p === undefined ? undefined : `the trigger is not ready (${p.reason}): ${p.message}`;
}

function notReady(message: string): Refusal {
  return new Refusal(503, 'not_ready', message, { 'Retry-After': String(NOT_READY_RETRY_S) });
}

function readBody(req: IncomingMessage): Promise<unknown> {
  return readJsonBody(req, TRIGGER_LIMITS.bodyBytes, (r) => new Refusal(r.status, r.code, r.message));
}

export function parse(trigger: TriggerConfig, body: unknown): ParsedDelivery {
  if (trigger.kind === 'alertmanager') {
    const result = alertmanagerPayload.safeParse(body);
    if (!result.success) throw invalid(result.error, 'an Alertmanager webhook payload (version 4)');
    return fromAlertmanager(result.data);
  }
  const result = webhookPayload.safeParse(body);
  if (!result.success) throw invalid(result.error, 'a webhook payload');
  return fromWebhook(result.data);
}

function invalid(error: z.ZodError, what: string): Refusal {
  return new Refusal(400, 'invalid_payload', `not ${what}: ${describeIssues(error)}`);
}

function resultOf(refusal: Refusal): string {
  switch (refusal.code) {
    case 'invalid_json':
    case 'invalid_payload':
      return 'invalid';
    case 'body_too_large':
      return 'too_large';
    case 'unsupported_media_type':
    case 'method_not_allowed':
      return 'refused';
    case 'shutting_down':
    case 'not_stored':
      return 'unavailable';
    default:
      return refusal.code;
  }
}

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const payload = JSON.stringify(body);
  res.writeHead(status, {
    'Cache-Control': 'no-store',
    'X-Content-Type-Options': 'nosniff',
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(payload),
    ...headers,
  });
  res.end(payload);
}

function describeError(error: unknown): Record<string, unknown> {
  if (error instanceof KourierError) return { name: error.name, code: error.code };
  if (error instanceof Error) return { name: error.name };
  return { name: typeof error };
}
