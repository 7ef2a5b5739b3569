import { A2AClient } from '../a2a/index.js';
import { InvalidConfigError } from '../core/errors.js';
import { AssertionSigner, KeyRing } from '../identity/index.js';
import { type CheckOptions, parseCheckArgs, USAGE } from './args.js';
import { CheckArgumentError } from './errors.js';
import { CHECK_BINDING, observe } from './observe.js';
import { jsonReport, textReport } from './report.js';
import { judgeAll, type RuleResult } from './rules/index.js';

export interface CheckIo {
  out(line: string): void;
  err(line: string): void;
}

/** Exit codes: no rule failed; a rule failed; the agent cannot be reached or the arguments are wrong. */
export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_UNUSABLE = 2;

/**
 * `agentkourier check <endpoint> …`: argv is what follows `check`. Prints the report on `out`,
 * argument errors and clean-up notes on `err`, and returns the exit code.
 */
export async function runCheck(argv: string[], io: CheckIo): Promise<number> {
  let options: CheckOptions;
  let client: A2AClient;
  let signer: AssertionSigner | undefined;
  try {
    const parsed = parseCheckArgs(argv);
    if (parsed.help) {
      io.out(USAGE);
      return EXIT_OK;
    }
    options = parsed.options;
    // A per-person identity: every call signed as a Binding's would be, with the given keys.
    if (options.signing !== undefined)
      signer = new AssertionSigner({
        issuer: options.signing.issuer,
        keys: await KeyRing.fromFile(options.signing.keyFile),
      });
    client = new A2AClient({
      endpoint: options.endpoint,
      identity: options.identity,
      ...(signer === undefined ? {} : { assertions: signer.sourceFor(CHECK_BINDING) }),
      headers: options.headers,
      extensions: options.speaks,
      ...(options.polling ? { polling: true } : {}),
      // DT-6's 30 s, or less when --timeout says so; a stream idle for the whole bound is cut
      // anyway. Every body and every call ends within the bound too, so a trickling agent cannot
      // keep a connection (and this process) alive after the report.
      timeouts: {
        headersMs: Math.min(options.timeoutMs, 30_000),
        streamIdleMs: options.timeoutMs,
        streamTotalMs: options.timeoutMs,
        bodyIdleMs: options.timeoutMs,
        cardTotalMs: options.timeoutMs,
        callTotalMs: options.timeoutMs,
      },
    });
  } catch (error) {
    // The client's settings check words its messages without values: safe to print as well.
    if (error instanceof CheckArgumentError || error instanceof InvalidConfigError) {
      io.err(`agentkourier check: ${error.message}`);
      io.err('Run "agentkourier check --help" for the options.');
      return EXIT_UNUSABLE;
    }
    throw error;
  }
  const obs = await observe({
    options,
    client,
    ...(signer === undefined ? {} : { signer }),
    note: (line) => io.err(`agentkourier check: ${line}`),
  });
  const rules = judgeAll(obs);
  if (options.json) io.out(jsonReport(obs, rules));
  else for (const line of textReport(obs, rules)) io.out(line);
  return exitCode(obs.card?.probe.kind === 'unreachable', rules);
}

export function exitCode(unreachable: boolean, rules: readonly RuleResult[]): number {
  if (unreachable) return EXIT_UNUSABLE;
  return rules.some((r) => r.status === 'FAIL') ? EXIT_FAILED : EXIT_OK;
}
