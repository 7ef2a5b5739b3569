import { afterEach, describe, expect, it } from 'vitest';
import { NOT_SIGNED_IN, SIGNED_OUT } from '../../../src/surfaces/common/sign-out.js';
import { ADA, type SlackHarness, startSlackHarness } from './e2e-harness.js';

/**
 * "sign out" to the app, through the real Bolt: the person's sign-in links at identity providers
 * end (the port the identity layer gives), they are told privately, and no turn goes to the agent.
 */

const open: SlackHarness[] = [];
afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
});

describe('the sign-out command in Slack', () => {
  it('ends the person’s links, says so privately, and sends the agent nothing; said twice, once', async () => {
    const asked: Array<{ surface: string; workspaceId: string; id: string }> = [];
    let links = 2;
    const h = await startSlackHarness({
      signOut: async (person) => {
        asked.push(person);
        const ended = links;
        links = 0;
        return ended;
      },
    });
    open.push(h);
    await h.mention('sign out');
    await h.waitFor('the first answer', () => h.fake.ephemerals.length === 1);
    await h.direct('Sign out');
    await h.waitFor('the second answer', () => h.fake.ephemerals.length === 2);
    expect(h.fake.ephemerals.map((e) => [e.user, e.text])).toEqual([
      [ADA, SIGNED_OUT(2)],
      [ADA, NOT_SIGNED_IN],
    ]);
    expect(asked).toEqual([
      { surface: 'slack', workspaceId: h.fake.teamId, id: ADA },
      { surface: 'slack', workspaceId: h.fake.teamId, id: ADA },
    ]);
    expect(h.agent.requests.filter((r) => r.rpcMethod !== undefined)).toHaveLength(0);
  });
});
