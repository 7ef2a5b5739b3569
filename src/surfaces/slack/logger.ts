import { LogLevel, type Logger as SlackLogger } from '@slack/bolt';
import type { Logger } from 'pino';

/**
 * Bolt and the Web API client log through their own Logger interface; this hands their lines
 * to our pino logger (whose redaction is the net under secrets). Their debug lines can hold
 * request bodies, so they stay at debug.
 */
export function slackLogger(logger: Logger, name = 'slack'): SlackLogger {
  let level: LogLevel = LogLevel.INFO;
  const child = logger.child({ component: name });
  const text = (parts: unknown[]): string =>
    parts.map((p) => (p instanceof Error ? p.message : typeof p === 'string' ? p : String(p))).join(' ');
  return {
    debug: (...msg: unknown[]) => child.debug(text(msg)),
    info: (...msg: unknown[]) => child.info(text(msg)),
    warn: (...msg: unknown[]) => child.warn(text(msg)),
    error: (...msg: unknown[]) => child.error(text(msg)),
    setLevel: (next: LogLevel) => {
      level = next;
    },
    getLevel: () => level,
    setName: () => undefined,
  };
}
