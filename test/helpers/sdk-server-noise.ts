/**
 * The official A2A SDK servers the tests run as peers print every error they answer with, stack
 * and all, through console.error ("Pre-stream error for request …"): the tests provoke those
 * errors on purpose (a finished task subscribed to, a version refused), so a passing run would
 * read as full of failures. The vitest configs drop exactly these lines, by the SDK's own
 * wording; anything else a test prints still shows. (The product logs through pino, never the
 * console; the demo agent answers what `check` provokes without reaching these lines.)
 */
const SDK_SERVER_LINES = [
  'Pre-stream error for request ',
  'Unhandled error in JSON-RPC POST handler: ',
  'Error during SSE streaming (request ',
  'Error in agent event stream for ',
];

/** vitest's onConsoleLog: false drops the line. */
export function dropSdkServerNoise(log: string, type: 'stdout' | 'stderr'): false | undefined {
  if (type === 'stderr' && SDK_SERVER_LINES.some((start) => log.startsWith(start))) return false;
  return undefined;
}
