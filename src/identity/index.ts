/**
 * Per-person identity (docs/identity.md): the broker's signing keys (keys.ts), the assertions
 * it signs for each call (assertions.ts), the public keys it serves (well-known.ts), and the
 * settings that pick them (settings.ts); the token exchange at an identity provider (exchange.ts)
 * and the people's sign-in there (sign-in/).
 */
export { AssertionSigner, CLAIMS_NAMESPACE, subjectOf } from './assertions.js';
export { type ExchangeResult, exchangingSource, personSource, TokenExchanger } from './exchange.js';
export { ensureKeyFile, KeyFileError, KeyRing, newKeyEntry, readKeyFile } from './keys.js';
export { identitySigner, loadIdentitySettings, signInSealing } from './settings.js';
export { OidcProvider, ProviderRefusedError, type ProviderSettings } from './sign-in/provider.js';
export { signInRoutes } from './sign-in/routes.js';
export { CALLBACK_PATH, SIGN_IN_PATH, SignIn, type SignInOptions } from './sign-in/sign-in.js';
export { DISCOVERY_PATH, JWKS_PATH, wellKnownRoutes } from './well-known.js';
