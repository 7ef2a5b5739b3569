import type { Logger } from 'pino';
import type { BrokerMetrics } from '../observability/metrics.js';
import type { CheckpointObserver } from '../store/sqlite/checkpointer.js';

/**
 * What the SQLite store's checkpointer reports (src/store/sqlite/checkpointer.ts), as metrics
 * and logs: a debug line and a count per checkpoint, a warning per failed one (it is tried
 * again), an error when the checkpointer itself failed and checkpoints are back on the event
 * loop.
 */
export function sqliteCheckpointObserver(logger: Logger, metrics: BrokerMetrics): CheckpointObserver {
  return {
    checkpointed: (report) => {
      metrics.sqliteCheckpoint(report.mode, report.busy ? 'busy' : 'ok', report.durationMs / 1000);
      logger.debug(
        {
          mode: report.mode,
          reason: report.reason,
          busy: report.busy,
          framesBackfilled: report.backfilledFrames,
          logFrames: report.logFrames,
          durationMs: Math.round(report.durationMs * 100) / 100,
        },
        'sqlite checkpoint',
      );
    },
    failed: (error) => {
      if (error.code === 'sqlite_checkpointer_failed') {
        logger.error({ err: error }, 'sqlite checkpointer failed: checkpoints run on the event loop again');
        return;
      }
      metrics.sqliteCheckpoint(error.mode ?? 'PASSIVE', 'error');
      logger.warn({ err: error }, 'sqlite checkpoint failed; it is tried again');
    },
  };
}
