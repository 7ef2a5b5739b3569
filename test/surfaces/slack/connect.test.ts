import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { loadSlackConfig } from '../../../src/config/slack.js';
import { SlackConnection } from '../../../src/surfaces/slack/connection.js';
import { SlackAuthError } from '../../../src/surfaces/slack/web-api/errors.js';
import { type FakeSlack, startFakeSlack } from '../../../testkit/slack/index.js';
import { IDLE_INBOUND, NO_BINDINGS } from '../../helpers/idle-inbound.js';

const silent = pino({ level: 'silent' });
const noEngine = { inbound: IDLE_INBOUND };

describe('connecting to Slack', () => {
  const fakes: FakeSlack[] = [];
  afterEach(async () => {
    await Promise.all(fakes.splice(0).map((f) => f.close()));
  });

  it('fails at start, naming SLACK_BOT_TOKEN and never echoing it, when Slack refuses the bot token', async () => {
    const fake = await startFakeSlack();
    fakes.push(fake);
    const config = loadSlackConfig({
      SLACK_BOT_TOKEN: 'xoxb-not-the-right-one',
      SLACK_SIGNING_SECRET: 'signing-secret-123',
      SLACK_API_URL: fake.url,
    });
    const error = await SlackConnection.connect({ config, logger: silent, bindings: NO_BINDINGS }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SlackAuthError);
    expect((error as SlackAuthError).message).toBe('SLACK_BOT_TOKEN was refused by Slack (invalid_auth)');
  });

  it('in Socket Mode opens its connection through the configured API URL, and names SLACK_APP_TOKEN when refused', async () => {
    const fake = await startFakeSlack();
    fakes.push(fake);
    const config = loadSlackConfig({
      SLACK_BOT_TOKEN: fake.botToken,
      SLACK_APP_TOKEN: 'xapp-1-unknown-to-slack',
      SLACK_API_URL: fake.url,
    });
    const slack = await SlackConnection.connect({ config, logger: silent, bindings: NO_BINDINGS });
    const error = await slack.listen(noEngine).catch((e: unknown) => e);
    await slack.stop();
    expect(error).toBeInstanceOf(SlackAuthError);
    expect((error as SlackAuthError).message).toBe('SLACK_APP_TOKEN was refused by Slack (invalid_auth)');
    expect(fake.callsOf('apps.connections.open')).toHaveLength(1);
  });

  it('in HTTP mode without a port hands its request listener to the broker’s own server', async () => {
    const fake = await startFakeSlack();
    fakes.push(fake);
    const config = loadSlackConfig({
      SLACK_BOT_TOKEN: fake.botToken,
      SLACK_SIGNING_SECRET: 'signing-secret-123',
      SLACK_API_URL: fake.url,
    });
    const slack = await SlackConnection.connect({ config, logger: silent, bindings: NO_BINDINGS });
    expect(slack.requestListener).toBeUndefined();
    expect(await slack.listen(noEngine)).toEqual({});
    expect(typeof slack.requestListener).toBe('function');
    expect(slack.botUserId).toBe('U0BOT');
    expect(slack.teamId).toBe('T0001');
    await slack.stop();
  });
});
