import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { InvalidConfigError } from '../core/errors.js';
import { Keyring, SealError } from '../core/sealing.js';
import { AssertionSigner } from './assertions.js';
import { ensureKeyFile, KeyRing } from './keys.js';

/**
 * The identity layer's settings, from the environment:
 *   AGENTKOURIER_IDENTITY_ISSUER  the URL agents reach the broker's /.well-known at (the iss
 *                                 claim); the chart sets its Service's
 *   AGENTKOURIER_IDENTITY_KEYS    a key file (keys.ts; the chart mounts it from a Secret);
 *                                 unset: local mode makes one under .agentkourier/, the
 *                                 controller keeps an ephemeral key in memory (one replica)
 *   AGENTKOURIER_IDENTITY_SEALING_KEYS  `id:base64key[,…]`, newest first (src/core/sealing.ts):
 *                                 seal people's sign-in links at rest; unset: a key made at
 *                                 start (links last until a restart, one replica)
 *   AGENTKOURIER_PUBLIC_URL       where people's browsers reach the broker (the sign-in link and
 *                                 the provider's redirect); unset: the issuer
 */

const schema = z.object({
  AGENTKOURIER_IDENTITY_ISSUER: z
    .url('must be an http or https URL')
    .refine((u) => /^https?:\/\//.test(u), 'must be an http or https URL')
    .optional(),
  AGENTKOURIER_IDENTITY_KEYS: z.string().min(1).optional(),
  AGENTKOURIER_IDENTITY_SEALING_KEYS: z.string().min(1).optional(),
  AGENTKOURIER_PUBLIC_URL: z
    .url('must be an http or https URL')
    .refine((u) => /^https?:\/\//.test(u), 'must be an http or https URL')
    .optional(),
});

export interface IdentitySettings {
  issuer: string | undefined;
  keyFile: string | undefined;
  /** The sealing keys for sign-in links; undefined: made at start. */
  sealing: Keyring | undefined;
  publicUrl: string | undefined;
}

export function loadIdentitySettings(env: Readonly<Record<string, string | undefined>>): IdentitySettings {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new InvalidConfigError(
      `${issue?.path.join('.') ?? 'environment'} ${issue?.message ?? 'is invalid'}`,
    );
  }
  const sealing = parsed.data.AGENTKOURIER_IDENTITY_SEALING_KEYS;
  return {
    issuer: parsed.data.AGENTKOURIER_IDENTITY_ISSUER,
    keyFile: parsed.data.AGENTKOURIER_IDENTITY_KEYS,
    sealing: sealing === undefined ? undefined : sealingKeyring(sealing),
    publicUrl: parsed.data.AGENTKOURIER_PUBLIC_URL,
  };
}

function sealingKeyring(setting: string): Keyring {
  return Keyring.parse(setting, {
    setting: 'AGENTKOURIER_IDENTITY_SEALING_KEYS',
    what: 'a sign-in link',
    fail: (message) => new SealError('identity_link_unsealable', message),
  });
}

/** The sign-in's sealing keys: the setting's, else one made now (`ephemeral`: say so in the log). */
export function signInSealing(settings: IdentitySettings): { keyring: Keyring; ephemeral: boolean } {
  if (settings.sealing !== undefined) return { keyring: settings.sealing, ephemeral: false };
  return { keyring: sealingKeyring(`start:${randomBytes(32).toString('base64')}`), ephemeral: true };
}

/**
 * The signer: `issuer` and `keyFile` from the settings, else the defaults given (local mode's
 * own key file and web chat URL; the controller's events URL). Without a key file and without a
 * default one, the keys are ephemeral and `ephemeral` is true (the caller says so in its log).
 */
export async function identitySigner(
  settings: IdentitySettings,
  defaults: { issuer: string | (() => string); keyFile?: string },
): Promise<{ signer: AssertionSigner; ephemeral: boolean }> {
  const file = settings.keyFile ?? defaults.keyFile;
  if (file !== undefined && settings.keyFile === undefined) await ensureKeyFile(file);
  const keys = file === undefined ? await KeyRing.ephemeral() : await KeyRing.fromFile(file);
  return {
    signer: new AssertionSigner({ issuer: settings.issuer ?? defaults.issuer, keys }),
    ephemeral: file === undefined,
  };
}
