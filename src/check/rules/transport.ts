import { describeError, seconds, transportRuleOf } from '../describe.js';
import type { HttpProbe, Observations } from '../observations.js';
import { fail, notTried, pass, type Rule } from './types.js';

/**
 * Transport rules (DT-5, DT-6), judged over every exchange the checker made: the raw probes (the
 * card, the unsupported method), where the client would hide a Location or a timing, and every
 * client call that failed for one of these reasons.
 */

interface Exchange {
  what: string;
  probe: HttpProbe;
}

function exchanges(obs: Observations): Exchange[] {
  const out: Exchange[] = [];
  if (obs.card !== undefined) out.push({ what: 'the card', probe: obs.card.probe });
  if (obs.unsupported !== undefined) out.push({ what: 'a JSON-RPC call', probe: obs.unsupported.http });
  return out;
}

function answered(list: Exchange[]): Array<Exchange & { probe: Extract<HttpProbe, { kind: 'response' }> }> {
  return list.flatMap((e) => (e.probe.kind === 'response' ? [{ what: e.what, probe: e.probe }] : []));
}

/** Whether the JSON-RPC side was seen at all, for a PASS that says how much it covers. */
function coverage(obs: Observations): string {
  return obs.unsupported === undefined ? ' (the card only: no JSON-RPC call was made)' : '';
}

const noRedirectRule: Rule = {
  id: 'transport.no-redirect',
  rows: ['DT-5'],
  consequence: 'A 3xx is a failed call; no redirect is followed.',
  judge(obs) {
    const list = answered(exchanges(obs));
    if (list.length === 0) return notTried(obs, 'an exchange with the agent');
    const seen = list
      .filter((e) => e.probe.status >= 300 && e.probe.status < 400)
      .map((e) => `${e.what}: HTTP ${e.probe.status} to ${e.probe.location ?? '(no Location)'}`);
    for (const { call, error } of obs.callErrors) {
      if (transportRuleOf(error) === 'transport.no-redirect') seen.push(`${call}: ${describeError(error)}`);
    }
    if (seen.length > 0) return fail(`redirected: ${seen.join('; ')}`);
    return pass(`answered at the endpoint itself${coverage(obs)}`);
  },
};

const headersRule: Rule = {
  id: 'transport.headers-30s',
  rows: ['DT-6'],
  consequence: 'The call fails as a lost connection.',
  judge(obs) {
    const list = exchanges(obs);
    if (list.length === 0 || list.every((e) => e.probe.kind === 'unreachable')) {
      return notTried(obs, 'an exchange with the agent');
    }
    const late = list.filter((e) => e.probe.kind === 'headers-timeout').map((e) => e.what);
    for (const { call, error } of obs.callErrors) {
      if (transportRuleOf(error) === 'transport.headers-30s') late.push(call);
    }
    const limit = seconds(obs.headersLimitMs);
    if (late.length > 0) {
      const stricter =
        obs.headersLimitMs < 30_000
          ? ` (--timeout ${limit} is shorter than the 30s the contract allows)`
          : '';
      return fail(`no response headers within ${limit}: ${late.join(', ')}${stricter}`);
    }
    const timings = answered(list).map((e) => `${e.what} ${e.probe.headersMs} ms`);
    const calls = obs.unsupported === undefined ? '' : '; no other call waited longer';
    return pass(`headers within ${limit}: ${timings.join(', ')}${calls}${coverage(obs)}`);
  },
};

export const transportRules: readonly Rule[] = [noRedirectRule, headersRule];
