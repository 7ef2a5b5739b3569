import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import type { Assertion } from '../a2a/options.js';
import type { Caller } from '../core/ports.js';
import type { KeyRing } from './keys.js';

/**
 * The assertion every call of a per-person Binding carries (docs/identity.md): a short JWT the
 * broker signs, naming who asks. Its claims:
 *   iss  the broker's issuer URL (its JWKS is at <iss>/.well-known/jwks.json)
 *   sub  stable: slack:<workspace>:<user>, webchat:<workspace>:<person>; for a trigger's turn
 *        trigger:<binding>; for a call made for nobody (a cancel on a timeout) broker:<binding>
 *   aud  the AgentBackend's audience (its URL unless the Binding names another)
 *   iat, exp (iat + ttl, at most 5 minutes), jti (unique)
 *   name, email   what the chat knows of the person, when it knows it
 *   https://agentkourier.dev/claims  { surface, workspace, channel, session, binding,
 *        person: true|false }  (person false: no person asked — a trigger, the broker)
 */

export const CLAIMS_NAMESPACE = 'https://agentkourier.dev/claims';
export const MAX_TTL_SECONDS = 300;

export function subjectOf(caller: Caller | undefined, binding: string): string {
  if (caller === undefined) return `broker:${binding}`;
  if (caller.kind === 'trigger') return `trigger:${caller.binding}`;
  return personSubject(caller);
}

/** A person's stable subject: their chat, its workspace and their id there. */
export function personSubject(person: { surface: string; workspaceId: string; id: string }): string {
  return `${person.surface}:${person.workspaceId}:${person.id}`;
}

export interface AssertionSignerOptions {
  /** The issuer URL, or how to read it once known (local mode's web chat listens after the signer is made). */
  issuer: string | (() => string);
  keys: KeyRing;
  /** Seconds an assertion lives (at most 5 minutes). */
  ttlSeconds?: number;
  now?: () => number;
}

export class AssertionSigner {
  readonly #issuer: () => string;
  readonly #keys: KeyRing;
  readonly #ttl: number;
  readonly #now: () => number;

  constructor(options: AssertionSignerOptions) {
    const { issuer } = options;
    this.#issuer = () => (typeof issuer === 'string' ? issuer : issuer()).replace(/\/+$/, '');
    this.#keys = options.keys;
    this.#ttl = Math.min(options.ttlSeconds ?? MAX_TTL_SECONDS, MAX_TTL_SECONDS);
    this.#now = options.now ?? Date.now;
  }

  get issuer(): string {
    return this.#issuer();
  }

  /** The key ring it signs from (the checker signs late ones with it). */
  get keyRing(): KeyRing {
    return this.#keys;
  }

  /** The id of the key that signs now. */
  signingKid(): string {
    return this.#keys.signing(this.#now()).kid;
  }

  /** The assertion source of every per-person client of a Binding (`binding` names calls for nobody). */
  sourceFor(binding: string): (caller: Caller | undefined, audience: string) => Promise<Assertion> {
    return (caller, audience) => this.sign(caller, audience, binding);
  }

  async sign(caller: Caller | undefined, audience: string, binding: string): Promise<Assertion> {
    const now = this.#now();
    await this.#keys.refresh(now);
    const key = this.#keys.signing(now);
    const subject = subjectOf(caller, binding);
    const person = caller?.kind === 'person';
    const claims: Record<string, unknown> = {
      [CLAIMS_NAMESPACE]: {
        person,
        binding: caller?.binding ?? binding,
        ...(caller === undefined
          ? {}
          : {
              surface: caller.surface,
              workspace: caller.workspaceId,
              channel: caller.channelId,
              session: caller.sessionId,
            }),
      },
    };
    if (caller?.kind === 'person') {
      if (caller.name !== undefined) claims.name = caller.name;
      if (caller.email !== undefined) claims.email = caller.email;
    }
    const iat = Math.floor(now / 1000);
    const token = await new SignJWT(claims)
      .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'JWT' })
      .setIssuer(this.issuer)
      .setSubject(subject)
      .setAudience(audience)
      .setIssuedAt(iat)
      .setExpirationTime(iat + this.#ttl)
      .setJti(randomUUID())
      .sign(key.privateKey);
    const email = caller?.kind === 'person' ? caller.email : undefined;
    return { token, subject, userId: email ?? subject };
  }

  /** The OpenID discovery document: the issuer, its JWKS, what it signs with. */
  discovery(): Record<string, unknown> {
    return {
      issuer: this.issuer,
      jwks_uri: `${this.issuer}/.well-known/jwks.json`,
      id_token_signing_alg_values_supported: ['ES256', 'EdDSA'],
      subject_types_supported: ['public'],
      response_types_supported: ['id_token'],
      claims_supported: ['iss', 'sub', 'aud', 'iat', 'exp', 'jti', 'name', 'email', CLAIMS_NAMESPACE],
    };
  }

  jwks(): { keys: unknown[] } {
    return this.#keys.jwks();
  }
}
