/**
 * The root of every error Agent Kourier raises on purpose. Callers branch on the class or on
 * `code` (stable, snake_case), never on `message`.
 *
 * `message` is ours and safe for logs. Text that came from a peer (an agent's JSON-RPC error
 * message, say) is kept apart in `peerMessage`: it is useful in logs but must never be shown
 * in a chat thread, because an agent does not get to write into a thread outside its answer.
 */
export class KourierError extends Error {
  readonly code: string;
  /** What the other side said, for logs only. Never shown to chat users. */
  readonly peerMessage: string | undefined;

  constructor(code: string, message: string, options: { cause?: unknown; peerMessage?: string } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.peerMessage = options.peerMessage === undefined ? undefined : truncate(options.peerMessage, 1024);
  }

  /** A log-friendly view: pino serialises this. */
  toJSON(): Record<string, unknown> {
    return { name: this.name, code: this.code, message: this.message, peerMessage: this.peerMessage };
  }
}

/** A setting or argument is invalid; raised at construction, before any I/O. */
export class InvalidConfigError extends KourierError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super('invalid_config', message, options);
  }
}

export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

/**
 * A person's reply does not fit the structured question it answers (a tool call left out or
 * decided twice, the wrong number of answers): refused before anything is sent. `message` names
 * ids and counts only, never agent text. A surface shows it to the person as a refusal.
 */
export class ReplyShapeError extends KourierError {}

/** A session changed between read and write (another driver wrote it): re-read and retry. */
export class StaleWriteError extends KourierError {
  constructor(sessionId: string) {
    super('stale_write', `session ${sessionId} changed since it was read`);
  }
}

/** The replica no longer holds the session's lease: it must stop driving the session. */
export class LeaseLostError extends KourierError {
  constructor(sessionId: string, owner: string) {
    super('lease_lost', `replica ${owner} no longer holds the lease of session ${sessionId}`);
  }
}

/** The store itself failed (I/O, a broken database): the engine retries later. */
export class StoreError extends KourierError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super('store_error', message, options);
  }
}
