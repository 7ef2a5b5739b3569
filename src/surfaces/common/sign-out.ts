/**
 * The chat command that ends a person's sign-in links at identity providers (docs/identity.md),
 * and what the person is told, the same on every surface.
 */

/** "sign out" (or "sign-out", "signout"), and nothing else, in the message's plain text. */
export function isSignOutCommand(plainText: string): boolean {
  return /^sign[ -]?out[.!]?$/i.test(plainText.trim());
}

export const SIGNED_OUT = (links: number): string =>
  `You are signed out (${links} sign-in${links === 1 ? '' : 's'} at identity providers ended). An agent that needs you signed in asks again with your next message.`;
export const NOT_SIGNED_IN =
  'You are not signed in at any identity provider here, so there was nothing to sign out of.';
