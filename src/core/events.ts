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
      outcome: string;
      durationMs: number;
      answerLength: number;
    })
  | (Base & { type: 'agent.event'; turnId: string; kind: string })
  | (Base & { type: 'agent.error'; turnId: string | null; code: string })
  | (Base & { type: 'credentials.rejected'; status: number })
  | (Base & { type: 'context.changed' })
  | (Base & { type: 'session.gone'; taskId: string })
  | (Base & { type: 'task.followed'; taskId: string; reason: string })
  | (Base & { type: 'task.cancel'; taskId: string; reason: string; ok: boolean })
  | (Base & { type: 'question.asked'; taskId: string; kind: string })
  | (Base & { type: 'question.answered'; taskId: string })
  | (Base & { type: 'question.timeout'; taskId: string })
  | (Base & { type: 'notice.posted'; kind: string });

export type EngineEventType = EngineEvent['type'];
