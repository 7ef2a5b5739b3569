/**
 * People's sign-in links (docs/identity.md, "Sign in once"): a person who signed in at an
 * identity provider for a Binding has one row per provider, holding the refresh token that gets
 * them fresh access tokens, sealed (src/core/sealing.ts). The person's chat id and email are kept
 * in clear so `agentkourier forget` finds them. The store implements it
 * (src/store/identity-link-rows.ts holds its SQL).
 */

export interface IdentityLink {
  /** The person's stable subject, as their assertions name them (`slack:<team>:<user>`, …). */
  subject: string;
  /** Which provider and client the link is with: `<issuer> <client id>`. */
  provider: string;
  /** The chat's id of the person, and the email both the chat and the provider gave. */
  personId: string;
  email: string;
  /** The key the refresh token is sealed with, and the sealed token. */
  keyId: string;
  sealed: string;
  linkedAt: number;
  updatedAt: number;
}

export interface IdentityLinkStore {
  get(subject: string, provider: string): Promise<IdentityLink | undefined>;
  /** Writes the link, replacing the person's link with the same provider (a sign-in again, a refresh). */
  put(link: IdentityLink): Promise<void>;
  /** Removes the person's links (with one provider, or all); how many went. */
  remove(subject: string, provider?: string): Promise<number>;
}
