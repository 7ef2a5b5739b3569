import type { FeedbackValue } from './feedback-store.js';
import type { StructuredForm } from './question.js';
/**
 * The durable state of the session engine (docs/architecture.md, "Durable state") and the port that
 * keeps it. Two implementations pass one shared suite: SQLite (default, one replica) and
 * PostgreSQL (several replicas, one driver per session through a lease).
 *
 * Rule of use: every write that guards an effect happens before the effect (record that a turn
 * is being sent, then send it), so a crash between the two leaves a state recovery can read.
 */

import type { TraceContext } from './trace.js';

/** Where a session lives. The workspace id is part of every key: one install serves several. */
export interface SessionKey {
  /** 'slack', 'webchat', … */
  surface: string;
  /** Slack team id; 'local' for the web chat. */
  workspaceId: string;
  channelId: string;
  /** The thread's root message id (Slack ts). */
  threadId: string;
}

export function sessionIdOf(key: SessionKey): string {
  return [key.surface, key.workspaceId, key.channelId, key.threadId].map(encodeURIComponent).join(':');
}

/** The task the session is waiting on: while one is recorded, no new turn is sent. */
export interface RecordedTask {
  taskId: string;
  /** The turn that created it. */
  turnId: string;
  state: string;
  /** Last time the agent showed any sign of life on this task (ms since epoch). */
  lastActivityAt: number;
  /** When the stream to it was lost, if it was and has not been re-established. */
  streamLostAt: number | null;
}

/** A question the agent asked, waiting for the person's reply (Q rows). */
export interface PendingQuestion {
  taskId: string;
  contextId: string;
  /** 'text' (a2a), 'structured' (kagent-v1), or 'auth' (auth-required: no prompt, no timeout). */
  kind: 'text' | 'structured' | 'auth';
  /** Identifies the question (status messageId or timestamp) so a repeat is not asked twice. */
  questionKey: string;
  askedAt: number;
  expiresAt: number | null;
  /** The surface's reference to the prompt it showed, to update it when answered. */
  promptRef: string | null;
  /** What the question's dialect needs to build the reply (Question.reply); opaque; JSON. */
  payload: unknown;
  /**
   * A structured question's form, what every surface draws and reads (Question.form). Unset in
   * rows written before it was kept: the engine asks the dialect for it (Dialect.formOf).
   */
  form?: StructuredForm;
  /** A request to approve tool calls rather than a question; unset in older rows. */
  approval?: boolean;
  /**
   * When a person's stop began cancelling the paused task: from then on the question takes no
   * answer (a decision would answer a task being stopped), and the stop either drops it (the
   * agent cancelled the task) or opens it again (the agent refused). Unset while it is open.
   */
  closingAt?: number;
}

export interface SessionRecord {
  id: string;
  key: SessionKey;
  /** The Binding that owns the channel, 'namespace/name'. */
  binding: string;
  /** The agent's context for this thread; null until the first turn is accepted (S-3). */
  contextId: string | null;
  task: RecordedTask | null;
  question: PendingQuestion | null;
  /** The key of the last question shown, so the same question is not asked twice. */
  lastQuestionKey: string | null;
  /** Bumped by every write; a write with a stale version fails (optimistic concurrency). */
  version: number;
  createdAt: number;
  updatedAt: number;
}

/** context: a reply that did not address the broker, carried into the next turn (S-7). */
export type TurnKind = 'message' | 'answer' | 'trigger' | 'context';

/**
 * queued: stored, not sent yet. sending: written before the send, so after a crash its outcome
 * is unknown. accepted: the agent named the task. settled: nothing more will happen.
 */
export type TurnState = 'queued' | 'sending' | 'accepted' | 'settled';

export interface TurnRecord {
  /** The A2A messageId: fixed for the chat message, derived from its identity (S-2). */
  id: string;
  sessionId: string;
  /** Order within the session, assigned by the store at insert. */
  seq: number;
  kind: TurnKind;
  /** The surface's id of the chat message (Slack ts); unique within a session. */
  chatMessageId: string;
  /**
   * What the turn says: a person's own text (from its first send on, with the replies carried
   * into it, S-7), a trigger's instruction and fields, a structured answer's summary.
   */
  text: string;
  /**
   * The person's label line (S-6), sent in front of the text; null when the turn has none (a
   * trigger's, a structured answer) or was stored with the line already in its text.
   */
  label: string | null;
  /** `message.metadata` (the actor, S-5); JSON. */
  metadata: Record<string, unknown> | null;
  /** An answer's paused task (S-4); the accepted task otherwise. */
  taskId: string | null;
  state: TurnState;
  /** How it settled: a task state ('completed', …) or 'error:<code>'. */
  outcome: string | null;
  attempts: number;
  /** When it was first sent: the start of the 15-minute windows (R-1, E-6). */
  firstSentAt: number | null;
  /** When the thread was told the agent is busy (E-3), so it is told once. */
  busyNoticeAt: number | null;
  /** The surface's reference to the message that shows the answer. */
  answerRef: string | null;
  /**
   * The trace context of the turn's span, written once when the turn is added, so that a
   * replica that takes the turn over after a restart links its span to the first one.
   */
  traceContext: TraceContext | null;
  createdAt: number;
  updatedAt: number;
}

export interface NewSession {
  key: SessionKey;
  binding: string;
  now: number;
}

export type NewTurn = Omit<TurnRecord, 'seq' | 'createdAt' | 'updatedAt'> & { now: number };

/** A write of a session and/or turns, applied atomically. */
export interface Commit {
  session?: SessionRecord;
  turns?: TurnRecord[];
  now: number;
  /**
   * Fencing for several replicas: the write applies only while `owner` holds the session's
   * lease, so a replica that lost it (paused, partitioned) cannot overwrite its successor.
   */
  fence?: { owner: string };
}

export interface AddTurnOptions {
  /**
   * The inbound event the turn comes from (Slack's event id, with the workspace), claimed as
   * claimInboundEvent does, in the turn's own transaction: a crash leaves both or neither, so a
   * redelivery of an event whose turn was never stored is not taken for a duplicate. Whether
   * the turn is new is still decided by the turn itself (its id, its chat message).
   */
  inboundEvent?: string;
  /**
   * The feedback presses the turn's note tells the agent (its metadata carries them): marked
   * told in this turn, in the turn's own write on SQLite (right after it on PostgreSQL), and only
   * when the turn is new. A press changed since is told again later.
   */
  feedbackTold?: ReadonlyArray<FeedbackTold>;
}

/** A press a turn tells, as the feedback store keys it. */
export interface FeedbackTold {
  turnId: string;
  actorId: string;
  value: FeedbackValue;
}

/** A session with work, as the scan reads it (SessionStore.workToScan). */
export interface WorkMark {
  id: string;
  /** Changes with every write to the session: its version and turn counter. */
  mark: string;
}

/** A lease owner at a time: whose leases count as its own, and when the others' are live. */
export interface LeaseHolder {
  owner: string;
  now: number;
}

/**
 * What a lease take got: refused (`false`: another owner holds it live), or taken. 'first': taken,
 * and no owner had ever held this session's lease, so nothing but the write that opened the
 * session and what adds turns (which needs no lease, and which the release reports) has written
 * it. 'taken': held before, by this owner or another, or held now by this owner (renewed).
 */
export type LeaseTake = false | 'taken' | 'first';

export interface SessionStore {
  /**
   * Whether several broker processes may share this store (PostgreSQL). When not (SQLite, one
   * process), the engine drives sessions without leases or fencing: there is nobody to fence.
   */
  readonly sharedByReplicas: boolean;
  /** Applies the versioned migrations. Idempotent. */
  migrate(): Promise<void>;
  close(): Promise<void>;
  /**
   * A write that changes nothing, for readiness: resolves once the store has taken it durably,
   * rejects with why the store refuses writes now (a failed fsync, a read-only or corrupt file,
   * a database that cannot commit).
   */
  probeWrite(): Promise<void>;

  /** Gets the session for a key, creating it (with the binding) if it does not exist. */
  openSession(init: NewSession): Promise<SessionRecord>;
  getSession(id: string): Promise<SessionRecord | undefined>;

  /**
   * Adds a turn, idempotently: a turn with the same id (or the same chat message in the same
   * session) is not added twice; `created` says which happened. With `inboundEvent`, the event
   * the turn came from is claimed in the same transaction (see AddTurnOptions).
   */
  addTurn(turn: NewTurn, options?: AddTurnOptions): Promise<{ turn: TurnRecord; created: boolean }>;
  getTurn(id: string): Promise<TurnRecord | undefined>;
  /**
   * openSession and addTurn as one write, all or nothing: the session for the key is got or
   * created (a known thread keeps its binding), then the turn `build` makes from it is added,
   * idempotently, as addTurn adds it. One transaction instead of two, so a new thread's first
   * message waits for one durable commit before it is acknowledged, not two. `build` is called
   * once, synchronously, with the session as stored and whether this call created it (then the
   * session has no other turn, and none can be added to it before this one is), before the turn
   * is written; it must not do I/O (a store may call it inside its transaction). A store that
   * learns whether the session is new from a read before its write (PostgreSQL) may find it
   * opened by another replica in between: the turn is then added as to a known thread, after
   * the turns there and `queued` even if `build` made it `sending`.
   */
  openSessionAndAddTurn(
    init: NewSession,
    build: (session: SessionRecord, opened: boolean) => NewTurn,
    options?: AddTurnOptions,
  ): Promise<{ session: SessionRecord; turn: TurnRecord; created: boolean }>;
  /**
   * Records the chat message that shows a turn's answer, touching nothing else (the surface
   * reports it while the driver writes the turn). Once set, a ref is kept: a commit that carries
   * a null answerRef leaves the stored one.
   */
  setAnswerRef(turnId: string, ref: string, now: number): Promise<void>;
  /** A session's turns that are not settled, in seq order. */
  openTurns(sessionId: string): Promise<TurnRecord[]>;

  /**
   * Writes the session (checking `version`, then bumping it) and the turns, all or nothing.
   * Throws StaleWriteError when the session changed since it was read, LeaseLostError when
   * fenced and the lease is gone. Returns the session as written.
   */
  commit(commit: Commit): Promise<SessionRecord | undefined>;

  /**
   * Ids of sessions with work: an open turn, a recorded task or a pending question. With
   * `drivableBy`, only those that owner could drive now: a session under another owner's live
   * lease is left out (its driver is alive), one whose lease expired is in (it is taken over).
   * Lease time is read as acquireLease reads it (the database's clock for a shared store).
   */
  sessionsWithWork(drivableBy?: LeaseHolder): Promise<string[]>;
  /**
   * The same sessions, each with a mark that every write to the session changes (its version
   * and its turn counter: a fenced write bumps the one, a turn added by anyone the other). The
   * engine's scan leaves alone a session it drove to rest at the same mark (a question waiting
   * for its person): nothing has happened to it since.
   */
  workToScan(drivableBy?: LeaseHolder): Promise<WorkMark[]>;

  /** Remembers an inbound event id (Slack's event_id); false when it was seen before. */
  claimInboundEvent(eventKey: string, now: number): Promise<boolean>;

  /**
   * Takes or renews the lease of a session for `owner` until now + ttlMs. A store shared by
   * replicas reads "now" from its own (the database's) clock, the one every replica shares, so
   * skew between replicas' clocks cannot hand a live lease to another; `now` is then unused.
   * The same holds for renewals and for the fence of a commit. A released lease stays on record
   * (expired), so a later take is never 'first' (LeaseTake).
   */
  acquireLease(sessionId: string, owner: string, now: number, ttlMs: number): Promise<LeaseTake>;
  /** Renews every lease `owner` holds; returns the session ids it still holds. */
  renewLeases(owner: string, now: number, ttlMs: number): Promise<string[]>;
  /**
   * Gives up `owner`'s lease on a session (nothing when another owner holds it), then says
   * whether a turn newer than `seenSeq` waits there: not settled and not a reply kept as
   * context. A driver going idle passes the highest seq it read, so a turn that another replica
   * added while this one held the lease (that replica could not take the lease to drive it) is
   * driven at once, not at the next scan. The turns are read after the lease is gone: a turn
   * added later than that read is the adding replica's to drive, which can take the lease then.
   */
  releaseLease(sessionId: string, owner: string, seenSeq: number): Promise<boolean>;
  /**
   * Ends whoever's lease on a session now: its holder's fenced commits fail from here on, and
   * its next renewal finds the lease gone, so its driver stops. For a replica that learnt
   * something about a session another replica drives (the agent's answer to a person's cancel)
   * and must drive it now itself. The lease stays on record (a later take is not 'first').
   */
  revokeLease(sessionId: string): Promise<void>;
}
