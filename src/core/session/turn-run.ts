import type { Task, TaskState, TaskStatus } from '../agent/model.js';
import { AnswerBuffer } from '../answer.js';
import type { AnswerSink, Caller } from '../ports.js';
import type { TraceContext } from '../trace.js';

/**
 * What one turn has seen of its task so far, across the send's stream, GetTask reads and
 * SubscribeToTask streams: the task id once the agent named it, the answer text, the latest
 * state, and how the last stream ended. Pure state; the driver does the I/O.
 */
export class TurnRun {
  readonly answer = new AnswerBuffer();
  taskId: string | null;
  contextId: string | null;
  state: TaskState | null = null;
  /** The latest status, with its message (the question, the failure text). */
  status: TaskStatus | null = null;
  /** A full Task in a settled state arrived: the turn can settle without another read. */
  settledTask: Task | null = null;
  /** A settled status update arrived (the SDKs close the stream right after one). */
  settledStatus: TaskStatus | null = null;
  /** The stream carried only a bare Message or events naming no task. */
  sawUnnamedEvents = false;
  eventsSeen = 0;
  lastActivityAt: number;
  sink: AnswerSink | null = null;
  /** The turn this run is for, when there is one, and when it was received. */
  turnId: string | null = null;
  receivedAt = 0;
  /** The turn's trace context, passed with every agent call of the run. */
  trace: TraceContext | undefined;
  /** Whom the run's agent calls are for (its turn's person, or its trigger). */
  caller: Caller | undefined;
  /** Some answer text has been seen (the first-text time is counted once). */
  textSeen = false;
  /**
   * A terminal status arrived on a stream: the answer is the text shown then. What the agent
   * sends after it (artifact updates in the grace before the stream closes, or the same text
   * in its task read after) is not part of it; only an answer still empty there is filled in
   * from the task.
   */
  ended = false;

  constructor(taskId: string | null, contextId: string | null, now: number) {
    this.taskId = taskId;
    this.contextId = contextId;
    this.lastActivityAt = now;
  }

  /** Forget how the previous stream ended before reading another one. */
  resetStream(): void {
    this.settledTask = null;
    this.settledStatus = null;
    this.sawUnnamedEvents = false;
  }

  /**
   * Takes in a task read in full (GetTask, a snapshot): its artifacts are the whole answer.
   * Says whether the answer changed; `show` false leaves telling the sink to the caller.
   */
  takeTask(task: Task, now: number, show = true): boolean {
    const frozen = this.ended && this.answer.length > 0;
    const changed = frozen ? false : this.answer.replaceAll(task.artifacts);
    if (changed || task.status.state !== this.state || task.status.timestamp !== this.status?.timestamp) {
      this.lastActivityAt = now;
    }
    this.state = task.status.state;
    this.status = task.status;
    if (changed && show) this.sink?.update(this.answer);
    return changed;
  }
}
