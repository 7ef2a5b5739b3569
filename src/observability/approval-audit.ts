import type { Logger } from 'pino';
import type { ApprovalAudit, ApprovalAuditSink } from '../core/approval-audit.js';

export type DecisionListener = (audit: ApprovalAudit) => void;

/**
 * The approval audit as the broker writes it: one structured log line per decision
 * (`audit: "tool-approval"`), the same from every surface, and the record handed to listeners
 * (the controller's Kubernetes Event on the Binding).
 */
export class ApprovalAuditLog implements ApprovalAuditSink {
  readonly #logger: Logger;
  readonly #listeners = new Set<DecisionListener>();

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** Calls `listener` with every decision sent to an agent; returns an unsubscribe. */
  onDecision(listener: DecisionListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  record(audit: ApprovalAudit): void {
    this.#logger.info({ audit: 'tool-approval', ...audit }, 'tool approval decision');
    for (const listener of this.#listeners) {
      try {
        listener(audit);
      } catch (error) {
        this.#logger.warn(
          { err: error instanceof Error ? error.name : 'unknown' },
          'an approval decision listener failed',
        );
      }
    }
  }
}
