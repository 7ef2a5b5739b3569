import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildPageScript } from '../../scripts/build-webchat.js';
import { type RunningLocal, startLocal } from '../../src/app/local.js';
import { createLogger } from '../../src/observability/logging.js';
import { answer, script } from '../peers/contract-agent/contract-agent.js';
import { startWebChatHarness, TOKEN, type WebChatHarness } from '../surfaces/webchat/harness.js';

/**
 * The web chat in a real browser: Debian's Chromium driven by playwright-core. On a desktop-sized
 * window it opens the page with the token in the URL fragment, starts a thread, sees the agent
 * working before its first text, watches the answer stream in, approves one tool and denies the
 * other. An agent's Markdown is rendered, and its HTML shown as text. At 390×844 (a phone) a
 * thread is started, answered and replied to with nothing wider than the screen. Screenshots of
 * both layouts land in test-output/ (docs/images/webchat.png is the desktop one, copied by hand).
 * Then local mode itself (the demo agent, SQLite on disk): Stop cancels a long answer's task,
 * and after a restart on the same file the thread list and the thread's history are back.
 */

const CHROMIUM = '/usr/bin/chromium';
const OUT = 'test-output';
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

/** An agent's answer with most of Markdown: headings, emphasis, code, a list, a table, links. */
const MARKDOWN_ANSWER = [
  '## Checkout and payments\n\nThe **checkout** pods are _healthy_; `payments` restarted 12 times in the last hour.\n\n',
  '- checkout: 3/3 ready\n- payments: 2/2 ready, restarting\n\n',
  '| pod | ready | restarts |\n| --- | :---: | ---: |\n| checkout-7c9f | 3/3 | 0 |\n| payments-5d2a | 2/2 | 12 |\n\n',
  'The last restart says why:\n\n```sh\nkubectl logs deploy/payments --since=1h --previous\n```\n\n',
  'See [the runbook](https://runbooks.example.com/payments) or https://status.example.com.',
];

/** An agent that writes HTML and links that must not work. */
const HOSTILE_ANSWER = [
  '<script>window.__agentScript = true</script> and <img src=x onerror="window.__agentImg = true">\n\n',
  '[click me](javascript:window.__agentLink=true) and [data](data:text/html,hi)',
];

/** Everything on the page fits the window's width: nothing scrolls sideways. */
async function sidewaysOverflow(page: Page): Promise<{ page: number; messages: number; window: number }> {
  return page.evaluate(() => {
    const messages = document.getElementById('messages');
    return {
      page: document.documentElement.scrollWidth,
      messages: messages === null ? 0 : messages.scrollWidth - messages.clientWidth,
      window: window.innerWidth,
    };
  });
}

/** The element is on screen, whole, without scrolling the page. */
async function inView(page: Page, selector: string): Promise<boolean> {
  const box = await page.locator(selector).boundingBox();
  const size = page.viewportSize();
  if (box === null || size === null) return false;
  return box.x >= 0 && box.y >= 0 && box.x + box.width <= size.width && box.y + box.height <= size.height;
}

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
      await mkdir(OUT, { recursive: true });
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

    async function openPage(width: number, height: number): Promise<{ page: Page; problems: string[] }> {
      const page = await browser.newPage();
      await page.setViewportSize({ width, height });
      const problems: string[] = [];
      page.on('pageerror', (error) => problems.push(error.message));
      page.on('console', (message) => {
        if (message.type() === 'error') problems.push(message.text());
      });
      await page.goto(`${h.chat.url}#token=${TOKEN}`);
      // The token leaves the address bar at once (it stays in this tab's sessionStorage).
      expect(new URL(page.url()).hash).toBe('');
      await page.locator('#new-binding option').first().waitFor({ state: 'attached' });
      return { page, problems };
    }

    it('shows no reply box before a thread is open, and says what to do', async () => {
      const { page, problems } = await openPage(1200, 860);
      expect(await page.locator('#composer').isVisible()).toBe(false);
      expect(await page.locator('#composer-text').isVisible()).toBe(false);
      expect(await page.locator('#thread-head').textContent()).toBe(
        'No thread open. Start one, or pick one from the list.',
      );
      expect(await page.locator('#new-thread button[type=submit]').isVisible()).toBe(true);
      expect(problems).toEqual([]);
      // The page's policy makes the browser refuse any HTML string put into it: the script
      // makes elements, so an agent's text can never be parsed as markup by mistake.
      const refused = await page.evaluate(() => {
        try {
          document.body.insertAdjacentHTML('beforeend', '<b>markup</b>');
          return 'accepted';
        } catch (error) {
          return error instanceof TypeError ? 'refused' : String(error);
        }
      });
      expect(refused).toBe('refused');
      expect(problems).toEqual([
        "This document requires 'TrustedHTML' assignment. The action has been blocked.",
      ]);
      await page.close();
    });

    it('starts a thread, shows the agent working, streams the answer, and decides an approval per tool', async () => {
      const { page, problems } = await openPage(1200, 860);
      h.agent.enqueueFor(
        'SendStreamingMessage',
        script([
          { event: 'task' },
          { event: 'working' },
          // No text for a while: the page must still show that something happens.
          { waitMs: 2_000 },
          { event: 'chunk', text: 'The ' },
          ...['pods ', 'in ', 'payments ', 'are ', 'all ', 'healthy.'].flatMap((text) => [
            { waitMs: 150 },
            { event: 'chunk' as const, text, append: true },
          ]),
          { event: 'completed' },
          { event: 'task' },
        ]),
      );
      await page.fill('#new-text', 'How are the payments pods?');
      await page.click('#new-thread button[type=submit]');

      const activity = page.locator('#activity-text');
      await activity.waitFor({ state: 'visible', timeout: 5_000 });
      await expect.poll(() => activity.textContent()).toMatch(/^The agent is working · \d+ s$/);
      expect(await page.locator('li.msg.answer').count()).toBe(0);
      expect(await page.locator('#composer').isVisible()).toBe(true);

      const answerItem = page.locator('li.msg.answer').first();
      // Seen while it streams: part of the text, still marked as streaming.
      await page.locator('li.msg.answer.streaming', { hasText: 'pods' }).waitFor({ timeout: 5_000 });
      const partial = await answerItem.locator('.text').textContent();
      expect(partial).not.toBe('The pods in payments are all healthy.');
      // One caret while it streams (after the plain text, or after the last Markdown block: the
      // answer's element is both), none once settled.
      const carets = () =>
        answerItem.evaluate((li) => ({
          streaming: li.classList.contains('streaming'),
          carets: [li, ...li.querySelectorAll('*')].filter((el) =>
            getComputedStyle(el, '::after').content.includes('▍'),
          ).length,
        }));
      const whileStreaming = await carets();
      if (whileStreaming.streaming) expect(whileStreaming.carets).toBe(1);
      await page
        .locator('li.msg.answer:not(.streaming)', { hasText: 'healthy.' })
        .waitFor({ timeout: 10_000 });
      expect(await answerItem.locator('.text').textContent()).toBe('The pods in payments are all healthy.');
      expect(await carets()).toEqual({ streaming: false, carets: 0 });
      expect(whileStreaming.streaming, 'the answer was seen streaming').toBe(true);
      await activity.waitFor({ state: 'hidden', timeout: 5_000 });
      await expect.poll(() => page.locator('#bindings a[data-thread]').count()).toBe(1);

      // Every message says when it was written, as the server stamped it.
      const threadId = new URL(page.url()).searchParams.get('thread') ?? '';
      const first = h.surface.threads.get(threadId)?.view().messages[0];
      expect(await page.locator('li.msg').first().locator('.who time').getAttribute('datetime')).toBe(
        first?.createdAt,
      );
      expect(await page.locator('li.msg').first().locator('.who time').textContent()).toMatch(
        /\d{1,2}:\d{2}/,
      );

      h.agent.enqueueFor(
        'SendStreamingMessage',
        script([
          { event: 'task' },
          {
            event: 'working',
            parts: [
              {
                data: { name: 'search_docs', args: { query: '[Web chat: Local user]\nclean up' } },
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
      const step = page.locator('li.msg.tool-step');
      expect(await step.locator('.name').textContent()).toBe('search_docs');
      // The argument reads as pretty JSON whose newline is a new line, not a literal \n.
      expect(await step.locator('pre.args').textContent()).toBe(
        '{\n  "query": "[Web chat: Local user]\nclean up"\n}',
      );
      expect(await approval.locator('.tool[data-tool=delete_file] pre').textContent()).toBe(
        '{\n  "path": "/tmp/old"\n}',
      );

      h.agent.enqueueFor(
        'SendStreamingMessage',
        script([
          { event: 'working' },
          { event: 'chunk', text: 'Deleted /tmp/old. The deployment was **not** restarted.' },
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

      expect(problems).toEqual([]);
      await page.close();
    });

    it("renders an agent's Markdown, and shows its HTML as text, never as markup", async () => {
      const { page, problems } = await openPage(1200, 860);
      h.agent.enqueueFor(
        'SendStreamingMessage',
        script([
          { event: 'task' },
          {
            event: 'working',
            parts: [
              {
                data: {
                  name: 'get_pods',
                  args: { namespace: 'shop', selector: 'app in (checkout, payments)' },
                },
                metadata: { adk_type: 'function_call' },
              },
            ],
          },
          ...MARKDOWN_ANSWER.map((text, i) => ({ event: 'chunk' as const, text, append: i > 0 })),
          { event: 'completed' },
          { event: 'task' },
        ]),
      );
      await page.fill('#new-text', 'How are the checkout and payments pods doing?');
      await page.click('#new-thread button[type=submit]');
      const md = page.locator('li.msg.answer:not(.streaming) .md');
      await md.waitFor({ timeout: 10_000 });

      expect(await md.locator('h2').textContent()).toBe('Checkout and payments');
      expect(await md.locator('strong').first().textContent()).toBe('checkout');
      expect(await md.locator('em').first().textContent()).toBe('healthy');
      expect(await md.locator('p > code').first().textContent()).toBe('payments');
      expect(await md.locator('ul > li').allTextContents()).toEqual([
        'checkout: 3/3 ready',
        'payments: 2/2 ready, restarting',
      ]);
      expect(await md.locator('table th').allTextContents()).toEqual(['pod', 'ready', 'restarts']);
      expect(await md.locator('table td').allTextContents()).toEqual([
        'checkout-7c9f',
        '3/3',
        '0',
        'payments-5d2a',
        '2/2',
        '12',
      ]);
      const block = md.locator('pre code');
      expect(await block.textContent()).toBe('kubectl logs deploy/payments --since=1h --previous');
      const font = await block.evaluate((node) => getComputedStyle(node).fontFamily);
      expect(font).toMatch(/monospace/);

      // A named link shows where it goes; a bare address is its own text.
      const runbook = md.getByRole('link', { name: 'the runbook' });
      expect(await runbook.getAttribute('href')).toBe('https://runbooks.example.com/payments');
      expect(await runbook.getAttribute('rel')).toBe('noopener noreferrer');
      expect(await md.locator('.link-target').textContent()).toBe(' (https://runbooks.example.com/payments)');
      expect(await md.locator('a[href="https://status.example.com/"]').textContent()).toBe(
        'https://status.example.com',
      );
      await page.screenshot({ path: `${OUT}/webchat-desktop.png` });

      h.agent.enqueueFor('SendStreamingMessage', answer({ chunks: HOSTILE_ANSWER, chunkDelayMs: 60 }));
      await page.fill('#composer-text', 'And **now**, <b>with</b> HTML?');
      await page.press('#composer-text', 'Enter');
      const hostile = page.locator('li.msg.answer:not(.streaming) .md', { hasText: 'click me' });
      await hostile.waitFor({ timeout: 10_000 });
      const text = await hostile.textContent();
      // The agent's HTML is text on the page: no element, no handler, nothing ran.
      expect(text).toContain('<script>window.__agentScript = true</script>');
      expect(text).toContain('<img src=x onerror="window.__agentImg = true">');
      expect(await page.locator('.messages script, .messages img').count()).toBe(0);
      // Only http(s) and mailto links: the javascript: and data: ones stay text.
      expect(text).toContain('[click me](javascript:window.__agentLink=true) and [data](data:text/html,hi)');
      expect(await hostile.locator('a').count()).toBe(0);
      const ran = await page.evaluate(() => {
        const w = window as unknown as Record<string, unknown>;
        return [w.__agentScript, w.__agentImg, w.__agentLink];
      });
      expect(ran).toEqual([undefined, undefined, undefined]);
      // A person's message is shown as typed.
      expect(await page.locator('li.msg.person .text').last().textContent()).toBe(
        'And **now**, <b>with</b> HTML?',
      );
      expect(problems).toEqual([]);
      await page.close();
    });

    it('works on a 390×844 phone: start, answer and reply, nothing wider than the screen', async () => {
      const { page, problems } = await openPage(390, 844);
      // The list is the first screen: "Start thread" is there; no thread pane, no reply box.
      expect(await inView(page, '#new-thread button[type=submit]')).toBe(true);
      expect(await page.locator('#thread').isVisible()).toBe(false);
      expect(await page.locator('#composer').isVisible()).toBe(false);

      h.agent.enqueueFor(
        'SendStreamingMessage',
        answer({
          chunks: [
            'A long line: ',
            'https://example.com/a/very/long/path/that/does/not/fit/on/a/phone/screen/at/all/really ',
            'and a wide table:\n\n| namespace | deployment | replicas | restarts | age |\n',
            '| --- | --- | --- | --- | --- |\n| payments-production | checkout-service-v2 | 3/3 | 0 | 12d |\n\n',
            '```\nkubectl -n payments-production rollout status deployment/checkout-service-v2 --timeout=120s\n```',
          ],
          chunkDelayMs: 40,
        }),
      );
      await page.fill('#new-text', 'Tell me about checkout on my phone');
      await page.click('#new-thread button[type=submit]');
      // The thread is its own screen now, with a way back and a true header.
      await page.locator('li.msg.answer:not(.streaming) table').waitFor({ timeout: 10_000 });
      expect(await page.locator('.sidebar').isVisible()).toBe(false);
      expect(await page.locator('#thread-head').textContent()).toContain(
        'Tell me about checkout on my phone',
      );
      expect(await inView(page, '#back')).toBe(true);
      expect(await inView(page, '#composer-text')).toBe(true);
      expect(await inView(page, '#composer button[type=submit]')).toBe(true);
      let overflow = await sidewaysOverflow(page);
      expect(overflow.page).toBeLessThanOrEqual(overflow.window);
      expect(overflow.messages).toBe(0);

      h.agent.enqueueFor('SendStreamingMessage', answer({ chunks: ['Replied ', 'on the phone.'] }));
      await page.fill('#composer-text', 'Thanks, and the payments pods?');
      await page.click('#composer button[type=submit]');
      await page
        .locator('li.msg.answer:not(.streaming)', { hasText: 'Replied on the phone.' })
        .waitFor({ timeout: 10_000 });
      expect(await inView(page, '#composer-text')).toBe(true);
      overflow = await sidewaysOverflow(page);
      expect(overflow.page).toBeLessThanOrEqual(overflow.window);
      expect(overflow.messages).toBe(0);
      await page.screenshot({ path: `${OUT}/webchat-phone.png` });

      // Back to the list: the thread is there, and the reply box is gone with the thread.
      await page.click('#back');
      expect(await page.locator('.sidebar').isVisible()).toBe(true);
      expect(await page.locator('#composer').isVisible()).toBe(false);
      await expect
        .poll(() => page.locator('#bindings a[data-thread]').allTextContents())
        .toContainEqual(expect.stringContaining('Tell me about checkout on my phone'));
      await page.screenshot({ path: `${OUT}/webchat-phone-list.png` });
      overflow = await sidewaysOverflow(page);
      expect(overflow.page).toBeLessThanOrEqual(overflow.window);
      expect(problems).toEqual([]);
      await page.close();
    });
  },
);

describe.skipIf(skipReason !== undefined)(
  'local mode in Chromium: Stop, and threads after a restart (skipped only without Debian chromium or playwright-core)',
  () => {
    let dir: string;
    let local: RunningLocal | undefined;
    let browser: Awaited<ReturnType<NonNullable<typeof playwright>['chromium']['launch']>> | undefined;

    beforeAll(async () => {
      if (playwright === undefined) return;
      dir = await mkdtemp(join(tmpdir(), 'webchat-local-'));
      await mkdir(OUT, { recursive: true });
      browser = await playwright.chromium.launch({
        executablePath: CHROMIUM,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
      });
    });

    afterAll(async () => {
      await browser?.close();
      await local?.stop();
      if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    });

    async function startLocalMode(): Promise<string> {
      local = await startLocal({
        config: 'examples/local.yaml',
        host: '127.0.0.1',
        port: 0,
        demo: true,
        env: { AGENTKOURIER_STORE: `sqlite:${join(dir, 'state.db')}` },
        out: () => undefined,
        pageScript: buildPageScript,
        logger: createLogger({ level: 'silent' }),
      });
      return local.url;
    }

    it('Stop cancels a running answer, and the thread and its history come back after a restart', async () => {
      if (browser === undefined) throw new Error('no browser');
      let url = await startLocalMode();
      const page = await browser.newPage({ viewport: { width: 1200, height: 860 } });
      const problems: string[] = [];
      page.on('pageerror', (error) => problems.push(error.message));
      await page.goto(url);
      await page.locator('#new-binding option').first().waitFor({ state: 'attached' });
      // The first message's box offers what the demo understands, from its card's examples.
      expect(await page.locator('#new-text').getAttribute('placeholder')).toBe(
        'Ask the agent… (try: hello · ask me something · approve a deploy · fail please · a long answer)',
      );
      // No Stop before there is anything to stop.
      expect(await page.locator('#stop').isVisible()).toBe(false);
      await page.fill('#new-text', 'Tell me a long story');
      await page.click('#new-thread button[type=submit]');
      // The demo's long answer streams for seconds: Stop shows while the agent works.
      await page.locator('li.msg.answer.streaming').waitFor({ timeout: 10_000 });
      await page.locator('#stop').waitFor({ state: 'visible', timeout: 5_000 });
      // Every line the activity bar shows from the press on: the demo's stream ends with the
      // canceled status, so the broker never has to reconnect to the task to learn it.
      await page.evaluate(() => {
        const shown: string[] = [];
        (window as unknown as { activityShown: string[] }).activityShown = shown;
        const bar = document.getElementById('activity');
        if (bar === null) throw new Error('no activity bar');
        new MutationObserver(() => shown.push(bar.textContent ?? '')).observe(bar, {
          subtree: true,
          childList: true,
          characterData: true,
        });
      });
      await page.click('#stop');
      await page
        .locator('li.msg.notice', { hasText: "The agent's task was canceled." })
        .waitFor({ timeout: 10_000 });
      await page.locator('#activity').waitFor({ state: 'hidden', timeout: 5_000 });
      const activityShown = await page.evaluate(
        () => (window as unknown as { activityShown: string[] }).activityShown,
      );
      expect(activityShown.filter((line) => line.includes('Reconnecting'))).toEqual([]);
      const stopped = (await page.locator('li.msg.answer .text').textContent()) ?? '';
      expect(stopped).toContain('A long answer');
      // Cut short: the end of the answer never came.
      expect(stopped).not.toContain('That is all.');
      await page.screenshot({ path: `${OUT}/webchat-stopped.png` });
      const shownBefore = await page.locator('#messages li.msg').allTextContents();
      await page.close();

      await local?.stop();
      local = undefined;
      url = await startLocalMode();
      const again = await browser.newPage({ viewport: { width: 1200, height: 860 } });
      again.on('pageerror', (error) => problems.push(error.message));
      await again.goto(url);
      const link = again.locator('#bindings a[data-thread]', { hasText: 'Tell me a long story' });
      await link.waitFor({ timeout: 5_000 });
      await link.click();
      await again.locator('li.msg.notice', { hasText: "The agent's task was canceled." }).waitFor({
        timeout: 5_000,
      });
      expect(await again.locator('#messages li.msg').allTextContents()).toEqual(shownBefore);
      expect(await again.locator('li.msg.answer .text').textContent()).toBe(stopped);
      await again.screenshot({ path: `${OUT}/webchat-after-restart.png` });
      expect(problems).toEqual([]);
      await again.close();
    });

    it('an answer cut off by a restart (Ctrl-C mid-answer) is shown settled afterwards, with no caret', async () => {
      if (browser === undefined) throw new Error('no browser');
      let url = local?.url ?? (await startLocalMode());
      const page = await browser.newPage({ viewport: { width: 1200, height: 860 } });
      const problems: string[] = [];
      page.on('pageerror', (error) => problems.push(error.message));
      await page.goto(url);
      await page.locator('#new-binding option').first().waitFor({ state: 'attached' });
      await page.fill('#new-text', 'Another long one, cut by a restart');
      await page.click('#new-thread button[type=submit]');
      await page
        .locator('li.msg.answer.streaming', { hasText: 'A long answer' })
        .waitFor({ timeout: 10_000 });
      const threadId = new URL(page.url()).searchParams.get('thread') ?? '';
      await page.close();
      // The broker stops in the middle of the answer, as on Ctrl-C, and starts again.
      await local?.stop();
      local = undefined;
      url = await startLocalMode();

      const again = await browser.newPage({ viewport: { width: 1200, height: 860 } });
      again.on('pageerror', (error) => problems.push(error.message));
      await again.goto(`${url}?thread=${threadId}`);
      const answer = again.locator('li.msg.answer').first();
      await again.locator('li.msg.answer:not(.streaming)').first().waitFor({ timeout: 20_000 });
      const carets = await answer.evaluate(
        (li) =>
          [li, ...li.querySelectorAll('*')].filter((el) =>
            getComputedStyle(el, '::after').content.includes('▍'),
          ).length,
      );
      expect(carets).toBe(0);
      expect(await answer.locator('.text').textContent()).toContain('A long answer');
      expect(await again.locator('li.msg.answer.streaming').count()).toBe(0);
      expect(problems).toEqual([]);
      await again.close();
    });
  },
);
