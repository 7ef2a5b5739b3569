import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { answer, script } from '../agents/contract-agent.js';
import { startWebChatHarness, TOKEN, type WebChatHarness } from '../surfaces/webchat/harness.js';

/**
 * The web chat in a real browser: Debian's Chromium driven by playwright-core. It opens the page
 * with the token in the URL fragment, starts a thread, watches the answer stream in, approves one
 * tool and denies the other, and sees the result. A screenshot lands in test-output/.
 */

const CHROMIUM = '/usr/bin/chromium';
const playwright = await import('playwright-core').catch(() => undefined);
const skipReason =
  playwright === undefined
    ? 'playwright-core is not installed'
    : !existsSync(CHROMIUM)
      ? `${CHROMIUM} is missing (apt-get install chromium)`
      : undefined;
if (skipReason !== undefined) console.warn(`web chat browser test skipped: ${skipReason}`);

const APPROVAL = {
  type: 'tool_approval_request',
  hint: 'Two tools need your approval.',
  tools: [
    { id: 'conf-1', call_id: 'call-a', name: 'delete_file', args: { path: '/tmp/old' } },
    { id: 'conf-2', call_id: 'call-b', name: 'restart_deployment', args: { name: 'api', namespace: 'prod' } },
  ],
};

describe.skipIf(skipReason !== undefined)(
  'web chat in Chromium (skipped only without Debian chromium or playwright-core, saying which)',
  () => {
    let h: WebChatHarness;
    let profile: string;
    let browser: Awaited<ReturnType<NonNullable<typeof playwright>['chromium']['launchPersistentContext']>>;

    beforeAll(async () => {
      if (playwright === undefined) return;
      h = await startWebChatHarness({ token: TOKEN, answerIntervalMs: 50 });
      profile = await mkdtemp(join(tmpdir(), 'webchat-chromium-'));
      // A fresh profile each run; playwright takes it as the persistent context's user data dir.
      browser = await playwright.chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM,
        viewport: { width: 1200, height: 860 },
        args: [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--disable-quic',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
        ],
      });
    });

    afterAll(async () => {
      await browser?.close();
      await h?.close();
      if (profile !== undefined) await rm(profile, { recursive: true, force: true });
    });

    it('starts a thread, streams the answer, and decides an approval per tool', async () => {
      const page = await browser.newPage();
      const problems: string[] = [];
      page.on('pageerror', (error) => problems.push(error.message));

      const chunks = ['The ', 'pods ', 'in ', 'payments ', 'are ', 'all ', 'healthy.'];
      h.agent.enqueueFor('SendStreamingMessage', answer({ chunks, chunkDelayMs: 200 }));
      await page.goto(`${h.chat.url}#token=${TOKEN}`);
      // The token leaves the address bar at once (it stays in this tab's sessionStorage).
      expect(new URL(page.url()).hash).toBe('');
      await page.locator('#new-binding option').first().waitFor({ state: 'attached' });
      await page.fill('#new-text', 'How are the payments pods?');
      await page.click('#new-thread button[type=submit]');

      const answerItem = page.locator('li.msg.answer').first();
      // Seen while it streams: part of the text, still marked as streaming.
      await page.locator('li.msg.answer.streaming', { hasText: 'pods' }).waitFor({ timeout: 5_000 });
      const partial = await answerItem.locator('.text').textContent();
      expect(partial).not.toBe(chunks.join(''));
      await page
        .locator('li.msg.answer:not(.streaming)', { hasText: 'healthy.' })
        .waitFor({ timeout: 10_000 });
      expect(await answerItem.locator('.text').textContent()).toBe(chunks.join(''));
      await expect.poll(() => page.locator('#bindings a[data-thread]').count()).toBe(1);

      h.agent.enqueueFor(
        'SendStreamingMessage',
        script([
          { event: 'task' },
          {
            event: 'working',
            parts: [
              {
                data: { name: 'list_files', args: { dir: '/tmp' } },
                metadata: { adk_type: 'function_call' },
              },
            ],
          },
          { event: 'input-required', parts: [{ data: APPROVAL }] },
          { event: 'task' },
        ]),
      );
      await page.fill('#composer-text', 'Clean up /tmp and restart the api.');
      await page.press('#composer-text', 'Enter');
      const approval = page.locator('li.msg.approval');
      await approval.waitFor({ timeout: 10_000 });
      await expect.poll(() => page.locator('li.msg.tool-step').textContent()).toContain('list_files');
      expect(await approval.locator('.tool[data-tool=delete_file] pre').textContent()).toBe(
        '{\n  "path": "/tmp/old"\n}',
      );

      h.agent.enqueueFor(
        'SendStreamingMessage',
        script([
          { event: 'working' },
          { event: 'chunk', text: 'Deleted /tmp/old. The deployment was not restarted.' },
          { event: 'completed' },
        ]),
      );
      const send = approval.getByRole('button', { name: 'Send decisions' });
      expect(await send.isDisabled()).toBe(true);
      await approval.locator('.tool[data-tool=delete_file]').getByRole('button', { name: 'Approve' }).click();
      const restart = approval.locator('.tool[data-tool=restart_deployment]');
      await restart.getByRole('button', { name: 'Deny' }).click();
      await restart.locator('input[type=text]').fill('No prod restarts during the freeze');
      await send.click();

      await page
        .locator('li.msg.answer', { hasText: 'The deployment was not restarted.' })
        .and(page.locator(':not(.streaming)'))
        .waitFor({ timeout: 10_000 });
      expect(await approval.locator('.state.approved').textContent()).toBe('Approved');
      expect(await approval.locator('.state.denied').textContent()).toBe(
        'Denied: No prod restarts during the freeze',
      );
      expect(h.answered[0]?.reply).toEqual({
        type: 'tool_approval',
        decisions: [
          { id: 'conf-1', approved: true },
          { id: 'conf-2', approved: false, reason: 'No prod restarts during the freeze' },
        ],
      });
      const kinds = await page
        .locator('li.msg')
        .evaluateAll((items) => items.map((i) => i.getAttribute('data-kind')));
      expect(kinds).toEqual(['message', 'answer', 'message', 'tool-step', 'approval', 'message', 'answer']);

      await mkdir('test-output', { recursive: true });
      await page.screenshot({ path: 'test-output/webchat.png', fullPage: true });
      expect(problems).toEqual([]);
    });
  },
);
