import { type DestinationStream, type Logger, pino } from 'pino';
import { PinoPretty } from 'pino-pretty';

/**
 * Paths pino blanks in every log line. Secrets must never reach logs (docs/architecture.md,
 * "Security model"); redaction is the net under code that already keeps them out.
 */
export const REDACTED_PATHS = [
  'token',
  '*.token',
  'botToken',
  '*.botToken',
  'appToken',
  '*.appToken',
  'signingSecret',
  '*.signingSecret',
  'password',
  '*.password',
  'headers.authorization',
  'headers.Authorization',
  'headers["x-user-id"]',
  'headers.cookie',
  '*.headers.authorization',
  '*.headers.Authorization',
  '*.headers["x-user-id"]',
  'identity.token',
  '*.identity.token',
  'secret',
  '*.secret',
  'stringData',
  '*.stringData',
  '*.data.token',
];

/** json: one JSON object a line (the cluster's default). pretty: readable lines for a terminal. */
export type LogFormat = 'json' | 'pretty';

export interface LoggerOptions {
  level?: string;
  format?: LogFormat;
  /** Where lines go; tests pass a stream and read them back. Default: stdout. */
  destination?: DestinationStream;
  /** Colours in pretty lines (default: when stdout is a terminal). */
  colorize?: boolean;
}

/**
 * The broker's logger. Lines carry `component`, and the engine's carry `binding`, `session`,
 * `turn` and `task` (observability/turn-log.ts). Pretty lines go through pino-pretty in the same
 * thread (sync): a person at a terminal reads them as they happen, and a crash loses none.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const settings = {
    name: 'agentkourier',
    level: options.level ?? 'info',
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
  };
  if (options.format === 'pretty') {
    const pretty = PinoPretty({
      colorize: options.colorize ?? process.stdout.isTTY === true,
      sync: true,
      translateTime: 'SYS:HH:MM:ss',
      ignore: 'pid,hostname,name,component',
      // "[12:00:01] INFO (engine): turn settled {…}": one line per entry, its fields after it.
      messageFormat: '{if component}({component}) {end}{msg}',
      singleLine: true,
      ...(options.destination === undefined ? {} : { destination: options.destination }),
    });
    return pino(settings, pretty);
  }
  return pino(settings, options.destination);
}
