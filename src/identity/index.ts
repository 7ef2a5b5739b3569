/**
 * Per-person identity (docs/identity.md): the broker's signing keys (keys.ts), the assertions
 * it signs for each call (assertions.ts), the public keys it serves (well-known.ts), and the
 * settings that pick them (settings.ts); the token exchange at an identity provider (exchange.ts).
 */
export { AssertionSigner, CLAIMS_NAMESPACE, subjectOf } from './assertions.js';
export { type ExchangeResult, exchangingSource, personSource, TokenExchanger } from './exchange.js';
export { ensureKeyFile, KeyFileError, KeyRing, newKeyEntry, readKeyFile } from './keys.js';
export { identitySigner, loadIdentitySettings } from './settings.js';
export { DISCOVERY_PATH, JWKS_PATH, wellKnownRoutes } from './well-known.js';
