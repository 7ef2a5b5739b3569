import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Clock } from '../../../core/clock.js';

/**
 * Slack signs each request with the time it sent it, and a request more than five minutes away
 * from now is refused, either way (Slack's request-verification rule). Bolt's HTTP receiver
 * refuses one from more than five minutes ago, but takes one stamped in the future, so a
 * signed request held back and replayed later would pass: this refuses those, before Bolt
 * reads the body. The signature itself is still Bolt's to check.
 */
export const REQUEST_TIME_MAX_SKEW_MS = 5 * 60_000;

export function refusingFutureRequests(
  listener: RequestListener,
  clock: Clock,
  logger: Logger,
): RequestListener {
  return (req: IncomingMessage, res: ServerResponse) => {
    const header = req.headers['x-slack-request-timestamp'];
    const sentAtSec = typeof header === 'string' && /^\d{1,12}$/.test(header) ? Number(header) : undefined;
    if (sentAtSec !== undefined && sentAtSec * 1000 - clock.now() > REQUEST_TIME_MAX_SKEW_MS) {
      logger.warn(
        { aheadSeconds: Math.round(sentAtSec - clock.now() / 1000) },
        'a Slack request signed for a time more than five minutes ahead was refused',
      );
      req.resume();
      res.writeHead(401).end();
      return;
    }
    listener(req, res);
  };
}
