import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildPageScript } from '../../scripts/build-webchat.js';
import { type RunningLocal, startLocal } from '../../src/app/local.js';
import { createLogger } from '../../src/observability/logging.js';
import { FakeBotConnector } from '../../testkit/teams/connector.js';
import { type FakeEntra, startFakeEntra } from '../../testkit/teams/entra.js';
import { ADA } from '../surfaces/teams/harness.js';

const APP_ID = '11111111-2222-4333-8444-555555555555';

/**
 * Local mode (`npm start`) with Teams' settings in its environment: the Bindings file's
 * `spec.teams` routes a personal chat to the demo agent, through the same Teams surface a
 * cluster runs, against the test kit's fake Entra and Bot Connector.
 */
describe('local mode with Microsoft Teams', () => {
  let running: RunningLocal | undefined;
  let dir: string | undefined;
  let entra: FakeEntra | undefined;
  let connector: FakeBotConnector | undefined;
  afterEach(async () => {
    await running?.stop();
    await connector?.close();
    await entra?.close();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    running = undefined;
    connector = undefined;
    entra = undefined;
    dir = undefined;
  });

  async function until(what: string, predicate: () => boolean): Promise<void> {
    const deadline = Date.now() + 15_000;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  it('answers a personal chat from the Bindings file, says its endpoint, and refuses approvals nobody is named for', async () => {
    entra = await startFakeEntra();
    entra.register({ clientId: APP_ID, secret: 'app-secret', resources: ['https://api.botframework.com'] });
    connector = await new FakeBotConnector({ entra, botId: APP_ID }).start();
    const ada = ADA;
    const chat = connector.conversation({
      id: 'a:ada-personal',
      type: 'personal',
      tenantId: entra.tenantId,
      members: [ada],
    });
    dir = await mkdtemp(join(tmpdir(), 'ak-local-teams-'));
    const manifest = join(dir, 'local.yaml');
    const example = await readFile('examples/local.yaml', 'utf8');
    // The example's Binding, with Teams added under its spec (its keys are indented by two).
    await writeFile(
      manifest,
      example.replace(
        /\nspec:\n {2}backendRef:\n {4}name: demo\n/,
        `\nspec:\n  teams:\n    tenantId: ${entra.tenantId}\n    allowPersonalChats: true\n  backendRef:\n    name: demo\n`,
      ),
    );
    expect(await readFile(manifest, 'utf8')).toContain('allowPersonalChats: true');
    const out: string[] = [];
    running = await startLocal({
      config: manifest,
      host: '127.0.0.1',
      port: 0,
      demo: true,
      demoPort: 0,
      env: {
        AGENTKOURIER_STORE: `sqlite:${join(dir, 'state.db')}`,
        TEAMS_APP_ID: APP_ID,
        TEAMS_APP_SECRET: 'app-secret',
        TEAMS_APP_TENANT_ID: entra.tenantId,
        TEAMS_TENANTS: entra.tenantId,
        TEAMS_AUTHORITY: entra.url,
        TEAMS_SERVICE_URL_HOSTS: '127.0.0.1',
        TEAMS_HOST: '127.0.0.1',
        TEAMS_PORT: '0',
      },
      out: (line) => out.push(line),
      pageScript: buildPageScript,
      logger: createLogger({ level: 'silent' }),
    });
    const endpoint = running.teamsUrl ?? '';
    expect(endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/messages$/);
    expect(out).toContain(`Microsoft Teams: messaging endpoint ${endpoint}`);

    const bot = () => (connector as FakeBotConnector).messages(chat.id).filter((m) => m.from === 'bot');
    const hello = connector.message({ conversation: chat, from: ada, text: 'hello from Teams' });
    expect((await connector.deliver(endpoint, hello)).status).toBe(200);
    await until('the demo agent’s whole answer', () =>
      bot().some((m) => m.stream?.ended === 'final' && m.text.includes('Point `url` in the local manifest')),
    );
    expect(bot()[0]?.text).toContain('You said: _hello from Teams_');

    // The example enables tool approvals with nobody named: the web chat's person approves in
    // local mode, but in Teams nobody is an approver, so a press decides nothing.
    const ask = connector.message({ conversation: chat, from: ada, text: 'approve' });
    await connector.deliver(endpoint, ask);
    await until('the approval card', () => bot().some((m) => m.attachments.length > 0));
    const card = bot().find((m) => m.attachments.length > 0);
    if (card === undefined) throw new Error('no card');
    type Card = { content: { actions?: Array<{ verb: string; data: object }> } };
    const { content } = card.attachments[0] as Card;
    const action = content.actions?.[0];
    const press = await connector.deliver(
      endpoint,
      connector.cardAction({
        conversation: chat,
        from: ada,
        messageId: card.id,
        verb: action?.verb ?? '',
        data: { ...action?.data, call0: 'approve', call1: 'approve' },
      }),
    );
    expect(press.status).toBe(200);
    expect(press.body).toContain('No approvers are set for this agent in Teams');
    // Counted where the broker counts Slack's refusals, on local mode's /metrics.
    const metrics = await (await fetch(new URL('metrics', running.url))).text();
    expect(metrics).toMatch(
      /agentkourier_approval_refusals_total\{[^}]*binding="default\/demo"[^}]*reason="no-approver-groups"[^}]*\} 1/,
    );
  });
});
