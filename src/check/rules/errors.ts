import type { Observations } from '../observations.js';
import { notTried, pass, preview, type Rule, skip, type Verdict, warn } from './types.js';

/**
 * errors.busy-code (E-3): -32004 is what the broker reads as "busy" on a send, and it resends for
 * as long as that lasts. An agent that also uses -32004 for "I do not do that" would keep a turn
 * waiting for ever, so the checker calls a method no agent has and looks at the code.
 */

function judge(obs: Observations): Verdict {
  const probe = obs.unsupported;
  if (probe === undefined) return notTried(obs, 'an unsupported method');
  const http = probe.http;
  if (http.kind === 'headers-timeout')
    return skip('the probe got no response headers (see transport.headers-30s)');
  if (http.kind !== 'response') return skip(`the probe got no answer: ${http.reason}`);
  if (http.status >= 300 && http.status < 400)
    return skip('the probe was redirected (see transport.no-redirect)');
  if (probe.rpcCode === -32004) {
    const said = probe.rpcMessage === '' ? '' : ` (the agent said: "${preview(probe.rpcMessage)}")`;
    return warn(
      `the made-up method ${probe.method} was answered -32004 (unsupported operation), not -32601${said}`,
    );
  }
  if (probe.rpcCode === -32601)
    return pass(`the made-up method ${probe.method} was answered -32601 (method not found)`);
  if (probe.rpcCode !== undefined)
    return pass(`the made-up method was answered JSON-RPC ${probe.rpcCode}, not -32004`);
  return pass(`the made-up method was answered HTTP ${http.status} with no JSON-RPC error, not -32004`);
}

export const errorRules: readonly Rule[] = [
  {
    id: 'errors.busy-code',
    rows: ['E-3'],
    consequence:
      '-32004 to a send means busy: the broker sends the same message again for as long as it takes, so an operation the agent does not support waits for ever.',
    judge,
  },
];
