import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import {
  EVENT_SCOPES,
  METHOD_SCOPES,
  requiredScopes,
  SCOPELESS_EVENTS,
} from '../../../src/surfaces/slack/web-api/scopes.js';

const root = new URL('../../../', import.meta.url);
const manifest = parse(readFileSync(new URL('manifests/slack-app.yaml', root), 'utf8')) as {
  features: { agent_view?: { agent_description?: string }; app_home: { messages_tab_enabled: boolean } };
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

  it('declares the app an agent (agent_view, not the legacy assistant_view) with its Messages tab on', () => {
    expect(manifest.features.agent_view?.agent_description?.length ?? 0).toBeGreaterThan(0);
    expect(manifest.features.agent_view?.agent_description?.length ?? 0).toBeLessThanOrEqual(300);
    expect(manifest.features).not.toHaveProperty('assistant_view');
    expect(manifest.features.app_home.messages_tab_enabled).toBe(true);
  });

  it('lists every Web API method the surface calls', () => {
    const source = ['web-api/client.ts', 'agent-app/agent-api.ts']
      .map((file) => readFileSync(new URL(`src/surfaces/slack/${file}`, root), 'utf8'))
      .join('\n');
    const called = new Set(
      [
        ...source.matchAll(
          /'((?:auth|chat|reactions|users|usergroups|views|conversations|agents|assistant)\.[A-Za-z.]+)'/g,
        ),
      ].map((m) => m[1]),
    );
    expect([...called].sort()).toEqual(Object.keys(METHOD_SCOPES).sort());
  });
});
