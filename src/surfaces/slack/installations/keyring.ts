import { SealError, Keyring as SealingKeyring } from '../../../core/sealing.js';

/**
 * The keys that seal Slack installations (bot tokens, refresh tokens) at rest, with the row's
 * own key (`team:T…`) as associated data: core's sealing keyring (src/core/sealing.ts) under the
 * setting SLACK_INSTALLATION_KEYS.
 */

export type { SealedValue } from '../../../core/sealing.js';

/** A sealed installation that no key opens, or that was altered. */
export class InstallationSealError extends SealError {
  constructor(message: string) {
    super('slack_installation_unsealable', message);
  }
}

export type Keyring = SealingKeyring;

export const Keyring = {
  /** Reads the setting; throws InvalidConfigError naming what is wrong, never a key. */
  parse(setting: string, name = 'SLACK_INSTALLATION_KEYS'): Keyring {
    return SealingKeyring.parse(setting, {
      setting: name,
      what: 'an installation',
      fail: (message) => new InstallationSealError(message),
    });
  },
};
