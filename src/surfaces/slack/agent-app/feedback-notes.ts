import type { Logger } from 'pino';
import type { FeedbackRows, UntoldFeedback } from '../../../core/feedback-store.js';
import type { SurfaceRoutes } from '../../../core/registry.js';

/**
 * The feedback on an answer, told to the agent (a Binding's `spec.slack.feedback.toAgent`): the
 * next turn a person sends in the thread carries, as `message.metadata`, each person's latest
 * press on the newest answer not told yet — never a turn by itself. The note is stored with the
 * turn (a resend after a restart carries it again), and its presses are marked told in that
 * turn, in the turn's own write (the engine's receive, AddTurnOptions.feedbackTold), so the turn
 * after it carries nothing more unless someone presses again.
 */

export const FEEDBACK_METADATA_KEY = 'agentkourier.dev/feedback';

/** People named in one note at most: the note stays small whatever the thread's size. */
export const FEEDBACK_NOTE_PEOPLE = 10;

/** A note in a turn's metadata, and the presses it tells (marked told in the turn's write). */
export interface FeedbackNote {
  metadata: Record<string, unknown>;
  presses: UntoldFeedback[];
}

export interface FeedbackNotesDeps {
  rows: FeedbackRows;
  /** A Binding's routing (`LiveRegistry.get`): whether it asks for the note. */
  bindings: { get(ref: string): { routes: SurfaceRoutes } | undefined };
  logger: Logger;
}

export class FeedbackNotes {
  readonly #deps: FeedbackNotesDeps;

  constructor(deps: FeedbackNotesDeps) {
    this.#deps = deps;
  }

  /**
   * The note for the next turn of a session, when its Binding asks for one and there is
   * feedback not told yet. A failure to read it never stops the turn: it is sent without.
   */
  async noteFor(sessionId: string, binding: string): Promise<FeedbackNote | undefined> {
    if (this.#deps.bindings.get(binding)?.routes.slack?.feedbackToAgent !== true) return undefined;
    try {
      const presses = await this.#deps.rows.untold(sessionId, FEEDBACK_NOTE_PEOPLE);
      const [newest] = presses;
      if (newest === undefined) return undefined;
      return {
        metadata: {
          [FEEDBACK_METADATA_KEY]: {
            ...(newest.taskId === null ? {} : { taskId: newest.taskId }),
            presses: presses.map((p) => ({ actorId: p.actorId, value: p.value })),
          },
        },
        presses,
      };
    } catch (error) {
      this.#deps.logger.warn(
        { err: error instanceof Error ? error.name : typeof error },
        'could not read the feedback to tell the agent',
      );
      return undefined;
    }
  }
}
