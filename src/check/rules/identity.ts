import type { HttpProbe } from '../observations.js';
import { fail, notTried, pass, type Rule, skip } from './types.js';

/**
 * An agent checked with --identity-keys says it verifies per-person identity (S-8,
 * docs/identity.md): it must refuse, with 401 or 403, an assertion signed by another key, an
 * expired one and one for another audience, and take a good one.
 */

const refused = (p: HttpProbe): boolean => p.kind === 'response' && (p.status === 401 || p.status === 403);

function said(p: HttpProbe): string {
  if (p.kind === 'response') return `HTTP ${p.status}`;
  if (p.kind === 'headers-timeout') return `no response headers within ${p.limitMs} ms`;
  return p.kind === 'unreachable' ? `unreachable (${p.reason})` : p.kind;
}

export const identityRules: readonly Rule[] = [
  {
    id: 'identity.verified',
    rows: ['S-8'],
    consequence:
      'An agent that takes an assertion it should refuse cannot trust who asks: a forged, expired or misdirected assertion would speak for a person.',
    judge(obs) {
      const probes = obs.identity;
      if (probes === undefined)
        return obs.stopped !== undefined
          ? notTried(obs, 'the identity check')
          : skip('give --identity-keys and --issuer to check an agent that verifies per-person identity');
      if (refused(probes.good))
        return fail(
          `refused a good assertion (${said(probes.good)}): check that it trusts the broker's JWKS at --issuer and expects --audience`,
          'The broker’s calls would all be refused: every turn fails with the agent refusing its credentials (E-7).',
        );
      const taken = (
        [
          ['signed by another key', probes.badSignature],
          ['expired', probes.expired],
          ['for another audience', probes.otherAudience],
        ] as const
      ).filter(([, p]) => !refused(p));
      if (taken.length > 0)
        return fail(
          `did not refuse an assertion ${taken.map(([what, p]) => `${what} (${said(p)})`).join(', ')}`,
        );
      return pass(
        'refused a forged, an expired and a wrong-audience assertion with 401/403, and took a good one',
      );
    },
  },
];
