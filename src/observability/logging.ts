import { type DestinationStream, type Logger, pino } from 'pino';

/**
 * Paths pino blanks in every log line. Secrets must never reach logs (docs/architecture.md,
 * "Security model"); redaction is the net under code that already keeps them out.
 */
export const REDACTED_PATHS = [
  'token',
  '*.token',
  'headers.authorization',
  'headers["x-user-id"]',
  '*.headers.authorization',
  'identity.token',
  '*.identity.token',
  'secret',
  '*.secret',
];

export interface LoggerOptions {
  level?: string;
  /** Where lines go; tests pass a stream and read the JSON back. Default: stdout. */
  destination?: DestinationStream;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  return pino(
    {
      name: 'agentkourier',
      level: options.level ?? 'info',
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    },
    options.destination,
  );
}
