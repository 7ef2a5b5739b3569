import type { Logger } from 'pino';
import type { EngineEvent } from '../core/events.js';
import type { EventSink } from '../core/ports.js';

/**
 * The engine's events as log lines of one stable shape: `binding`, `session`, `turn` and `task`
 * ids where they apply, and codes and outcomes — never a message's text (events carry none).
 *
 * - one line per settled turn: info "turn settled" with its outcome and duration, or, for a
 *   failure (failed, rejected, or a broker-side error), warn "turn failed" with its category
 *   (the failure category E-10 read, or the error code);
 * - warn lines for what an operator acts on: rejected credentials, cancels that did not take;
 * - the rest of a turn's life (received, accepted, streams lost, retries) at debug.
 */
export class TurnLog implements EventSink {
  readonly #log: Logger;

  constructor(logger: Logger) {
    this.#log = logger.child({ component: 'engine' });
  }

  emit(event: EngineEvent): void {
    const base = { binding: event.binding, session: event.sessionId };
    switch (event.type) {
      case 'turn.settled': {
        const failure = failureOf(event.outcome, event.category);
        const fields = {
          ...base,
          turn: event.turnId,
          task: event.taskId,
          outcome: event.outcome,
          durationMs: event.durationMs,
        };
        if (failure === undefined) this.#log.info(fields, 'turn settled');
        else this.#log.warn({ ...fields, category: failure }, 'turn failed');
        break;
      }
      case 'credentials.rejected':
        this.#log.warn({ ...base, status: event.status }, 'the agent rejected the credentials');
        break;
      case 'task.cancel':
        if (!event.ok)
          this.#log.warn(
            { ...base, task: event.taskId, reason: event.reason },
            'a task could not be canceled',
          );
        else this.#log.info({ ...base, task: event.taskId, reason: event.reason }, 'task canceled');
        break;
      case 'question.timeout':
        this.#log.info({ ...base, task: event.taskId, kind: event.kind }, 'question not answered in time');
        break;
      case 'session.gone':
        this.#log.info({ ...base, task: event.taskId }, 'the agent no longer knows the task');
        break;
      case 'turn.received':
        this.#log.debug(
          { ...base, turn: event.turnId, kind: event.kind, queued: event.queued },
          'turn received',
        );
        break;
      case 'turn.accepted':
        this.#log.debug(
          { ...base, turn: event.turnId, task: event.taskId, latencyMs: event.latencyMs },
          'turn accepted',
        );
        break;
      case 'stream.lost':
        // An event over the size bound cut the stream: the agent sent something it should not
        // have, worth an operator's look (a dropped connection is routine and followed up).
        if (event.code === 'size_limit')
          this.#log.warn(
            { ...base, turn: event.turnId, task: event.taskId, code: event.code },
            'the agent sent an event over the size limit; its stream was cut',
          );
        else
          this.#log.debug(
            { ...base, turn: event.turnId, task: event.taskId, code: event.code },
            'stream lost',
          );
        break;
      case 'turn.retry':
        this.#log.debug(
          { ...base, turn: event.turnId, reason: event.reason, delayMs: event.delayMs },
          'turn will be sent again',
        );
        break;
      case 'agent.error':
        this.#log.debug({ ...base, turn: event.turnId, code: event.code }, 'agent call failed');
        break;
      default:
        break;
    }
  }
}

/** The category of a failed turn, or undefined when it did not fail. */
export function failureOf(outcome: string, category: string | undefined): string | undefined {
  if (outcome.startsWith('error:')) return outcome.slice('error:'.length);
  if (outcome === 'failed') return category ?? 'uncategorized';
  if (outcome === 'rejected') return 'rejected';
  return undefined;
}
