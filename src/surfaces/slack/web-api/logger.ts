import { LogLevel, type Logger as SlackLogger } from '@slack/bolt';
import type { Logger } from 'pino';

/**
 * Bolt and the Web API client log through their own Logger interface; this hands their lines
 * to our pino logger (whose redaction is the net under secrets). Their debug lines can hold
 * request bodies, so they stay at debug — and are scrubbed: the Web API client redacts only
 * keys that say "token", so oauth.v2.access's body (client_secret, the one-time code) would
 * otherwise reach the log whole.
 */
const SECRET_FIELDS =
  /"(client_secret|code|code_verifier|refresh_token|access_token|token|state)"\s*:\s*"[^"]*"/g;
const SLACK_TOKENS = /\bxox[a-z](?:\.xox[a-z])?-[A-Za-z0-9-]+/g;

export function scrub(line: string): string {
  return line.replace(SECRET_FIELDS, '"$1":"[redacted]"').replace(SLACK_TOKENS, '[redacted]');
}

export function slackLogger(logger: Logger, name = 'slack'): SlackLogger {
  let level: LogLevel = LogLevel.INFO;
  const child = logger.child({ component: name });
  const text = (parts: unknown[]): string =>
    scrub(
      parts.map((p) => (p instanceof Error ? p.message : typeof p === 'string' ? p : String(p))).join(' '),
    );
  // The Web API client logs several debug lines a call, with the request's and the answer's
  // bodies in them: only a line our logger will write is joined and scrubbed.
  return {
    debug: (...msg: unknown[]) => {
      if (child.isLevelEnabled('debug')) child.debug(text(msg));
    },
    info: (...msg: unknown[]) => {
      if (child.isLevelEnabled('info')) child.info(text(msg));
    },
    warn: (...msg: unknown[]) => child.warn(text(msg)),
    error: (...msg: unknown[]) => child.error(text(msg)),
    setLevel: (next: LogLevel) => {
      level = next;
    },
    getLevel: () => level,
    setName: () => undefined,
  };
}
