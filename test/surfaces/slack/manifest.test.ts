import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  EVENT_SCOPES,
  METHOD_SCOPES,
  requiredScopes,
  SCOPELESS_EVENTS,
} from '../../../src/surfaces/slack/scopes.js';

const root = new URL('../../../', import.meta.url);
const manifest = parse(readFileSync(new URL('manifests/slack-app.yaml', root), 'utf8')) as {
  oauth_config: { scopes: { bot: string[] } };
  settings: { event_subscriptions: { bot_events: string[] }; socket_mode_enabled: boolean };
};

describe('the Slack app manifest', () => {
  it('asks for exactly the scopes the surface needs', () => {
    expect([...manifest.oauth_config.scopes.bot].sort()).toEqual(requiredScopes());
  });

  it('subscribes to exactly the events the surface handles', () => {
    expect([...manifest.settings.event_subscriptions.bot_events].sort()).toEqual(
      [...Object.keys(EVENT_SCOPES), ...SCOPELESS_EVENTS].sort(),
    );
  });

  it('lists every Web API method the surface calls', () => {
    const source = readFileSync(new URL('src/surfaces/slack/web-api.ts', root), 'utf8');
    const called = new Set(
      [
        ...source.matchAll(/'((?:auth|chat|reactions|users|usergroups|views|conversations)\.[A-Za-z.]+)'/g),
      ].map((m) => m[1]),
    );
    expect([...called].sort()).toEqual(Object.keys(METHOD_SCOPES).sort());
  });
});
