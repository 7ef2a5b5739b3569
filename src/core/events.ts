/**
 * Typed domain events of the engine. Metrics, traces and logs subscribe to these (through an
 * EventSink); the engine itself never logs or counts. Events carry ids and codes, never a
 * secret, a message text or an agent's error message.
 */

interface Base {
  sessionId: string;
  /** 'namespace/name' of the Binding. */
  binding: string;
  at: number;
}

export type EngineEvent =
  | (Base & { type: 'turn.received'; turnId: string; kind: string; queued: boolean })
  | (Base & { type: 'turn.duplicate'; turnId: string })
  | (Base & { type: 'turn.sending'; turnId: string; attempt: number; contextId: string | null })
  | (Base & { type: 'turn.accepted'; turnId: string; taskId: string; contextId: string; latencyMs: number })
  | (Base & { type: 'turn.found'; turnId: string; taskId: string })
  | (Base & { type: 'turn.retry'; turnId: string; reason: string; delayMs: number })
  | (Base & {
      type: 'turn.settled';
      turnId: string;
      /** A task state ('completed', 'failed', …) or 'error:<code>'. */
      outcome: string;
      /** E-10: the failure's category, when a failed task's status named one. */
      category?: string;
      /** The task it ran as, when the agent named one. */
      taskId: string | null;
      durationMs: number;
      answerLength: number;
    })
  /** The first answer text of a turn reached the chat, `latencyMs` after the turn was received. */
  | (Base & { type: 'answer.started'; turnId: string; latencyMs: number })
  | (Base & { type: 'agent.event'; turnId: string; kind: string })
  /** E-3: the agent said it is busy (or throttled); the turn is sent again after `delayMs`. */
  | (Base & { type: 'agent.busy'; turnId: string; code: string; delayMs: number })
  | (Base & { type: 'agent.error'; turnId: string | null; code: string })
  | (Base & { type: 'credentials.rejected'; status: number })
  | (Base & { type: 'context.changed' })
  | (Base & { type: 'session.gone'; taskId: string })
  | (Base & { type: 'task.followed'; taskId: string; reason: string })
  /** A stream to an accepted task broke before the task settled (R-6, M-2); it is followed. */
  | (Base & { type: 'stream.lost'; turnId: string | null; taskId: string; code: string })
  /** M-3: SubscribeToTask was called to follow a task again. */
  | (Base & { type: 'task.resubscribed'; taskId: string })
  /**
   * M-3: the task was read with GetTask because the agent cannot be subscribed to; P-3: because
   * the agent does not stream and its Binding polls. `latencyMs`: how long the read took.
   */
  | (Base & { type: 'task.polled'; taskId: string; latencyMs?: number })
  /** E-7, R-8: a turn whose send may or may not have reached the agent is being resolved. */
  | (Base & { type: 'turn.unknown'; turnId: string })
  /** M-5, M-6: a ListTasks lookup of a turn of unknown outcome, and what came of it. */
  | (Base & { type: 'turn.lookup'; turnId: string; result: 'found' | 'absent' | 'failed' | 'unsupported' })
  /** a turn of unknown outcome sent again with the same messageId. */
  | (Base & { type: 'turn.resent'; turnId: string; attempt: number })
  | (Base & { type: 'task.cancel'; taskId: string; reason: string; ok: boolean })
  /** `approval`: a request to approve tool calls, not a question to answer. */
  | (Base & { type: 'question.asked'; taskId: string; kind: string; approval: boolean })
  | (Base & { type: 'question.answered'; taskId: string })
  /** A person's decisions on a tool approval were taken, in the surface named. */
  | (Base & { type: 'approval.decided'; surface: string; approved: number; denied: number })
  | (Base & { type: 'question.timeout'; taskId: string; kind: string; approval: boolean })
  | (Base & { type: 'notice.posted'; kind: string });

export type EngineEventType = EngineEvent['type'];
