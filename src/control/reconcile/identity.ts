import type { Identity, PersonIdentity } from '../../a2a/options.js';
import type { Binding } from '../crds/binding.js';
import { type ConditionState, ConditionTypes, falseCondition, type Reason, Reasons } from '../status.js';
import { resolveSecretKey, type SecretLookup } from './secrets.js';

/**
 * A Binding's `spec.identity` as its client's Identity, its secrets read (binding.ts plans the
 * rest): a bearer token, a user id, or a per-person identity (the broker's assertion, an
 * exchange at the identity provider, or each person's sign-in there; docs/identity.md). A secret
 * that cannot be read is the Binding's CredentialsResolved condition, never a call without it.
 */
type Planned = { ok: true; identity: Identity } | { ok: false; condition: ConditionState };

/** A secret that could not be read: the Binding's CredentialsResolved condition says which and why. */
function unresolved(refusal: { reason: Reason; message: string }): Planned {
  return {
    ok: false,
    condition: falseCondition(ConditionTypes.CredentialsResolved, refusal.reason, refusal.message),
  };
}

export function identityOf(binding: Binding, secrets: SecretLookup): Planned {
  const { tokenSecretRef, userId, perPerson } = binding.spec.identity;
  if (perPerson !== undefined) {
    const { exchange, signIn } = perPerson;
    // What every per-person identity carries; the source of the person's token is added below.
    const person = (audience: string): PersonIdentity => ({
      kind: 'person',
      audience: perPerson.audience ?? audience,
      header: perPerson.header ?? 'Authorization',
      userIdHeader: false,
    });
    if (signIn !== undefined) {
      let clientSecret: string | undefined;
      if (signIn.clientSecretRef !== undefined) {
        const secret = resolveSecretKey(
          secrets,
          signIn.clientSecretRef,
          'identity.perPerson.signIn.clientSecretRef',
        );
        if (!secret.ok) return unresolved(secret);
        clientSecret = secret.value;
      }
      return {
        ok: true,
        identity: {
          // The person's access token goes out; the audience is the provider's business.
          ...person(signIn.issuer),
          signIn: {
            issuer: signIn.issuer,
            clientId: signIn.clientId,
            ...(clientSecret === undefined ? {} : { clientSecret }),
            scope: signIn.scope ?? 'openid email offline_access',
            emailClaim: signIn.emailClaim ?? 'email',
            agent: binding.spec.backendRef.name,
          },
        },
      };
    }
    // The audience and X-User-Id are the backend's to fill in (planClient).
    if (exchange === undefined) return { ok: true, identity: person('') };
    const secret = resolveSecretKey(
      secrets,
      exchange.clientSecretRef,
      'identity.perPerson.exchange.clientSecretRef',
    );
    if (!secret.ok) return unresolved(secret);
    return {
      ok: true,
      identity: {
        // The provider checks the assertion; its token endpoint is the audience unless named.
        ...person(exchange.tokenUrl),
        exchange: {
          tokenUrl: exchange.tokenUrl,
          clientId: exchange.clientId,
          clientSecret: secret.value,
          ...(exchange.audience === undefined ? {} : { audience: exchange.audience }),
          ...(exchange.scope === undefined ? {} : { scope: exchange.scope }),
          // Named to a person the provider refuses.
          agent: binding.spec.backendRef.name,
        },
      },
    };
  }
  if (tokenSecretRef !== undefined) {
    const token = resolveSecretKey(secrets, tokenSecretRef, 'identity.tokenSecretRef');
    if (!token.ok) return unresolved(token);
    return { ok: true, identity: { kind: 'bearer', token: token.value } };
  }
  if (userId !== undefined) return { ok: true, identity: { kind: 'user-id', userId } };
  // The CRD refuses this already; a resource written before the rule existed still gets a reason.
  return unresolved({
    reason: Reasons.InvalidSpec,
    message: 'exactly one of identity.tokenSecretRef, identity.userId and identity.perPerson must be set',
  });
}
