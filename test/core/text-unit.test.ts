import { afterEach, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from '../helpers/engine-harness.js';
import {
  startWebChatHarness,
  BINDING as WEB_BINDING,
  type WebChatHarness,
} from '../surfaces/webchat/harness.js';

/**
 * Defect: the web chat counted text in code points while the engine cut at 40,000 UTF-16 units,
 * and the cut (and thread titles) could fall between the halves of a surrogate pair. One unit
 * now: UTF-16 code units, in the API's limit, the engine's cut and every title.
 */
describe('one text unit across the web chat, the engine and titles', () => {
  let engine: Harness | undefined;
  let web: WebChatHarness | undefined;
  afterEach(async () => {
    await engine?.close();
    await web?.close();
    engine = undefined;
    web = undefined;
  });

  it('the engine cuts an overlong message at 40,000 units without splitting an emoji', async () => {
    engine = await startHarness({ version: '1.0' });
    const { turnId } = await engine.say('t1', '1', `${'a'.repeat(39_999)}😀 and more`);
    const turn = await engine.store.getTurn(turnId);
    // The text is the person's own; their label line is kept apart (and sent in front).
    const body = turn?.text ?? '';
    expect(turn?.label).toMatch(/^\[/);
    expect(body.isWellFormed()).toBe(true);
    expect(body).toBe(`${'a'.repeat(39_999)}\n[… message cut at 40000 characters]`);
  });

  it('the web chat refuses what the engine would cut, in the same unit, and accepts exactly the limit', async () => {
    web = await startWebChatHarness({ bodyLimitBytes: 1024 * 1024 });
    // 20,001 emoji: 20,001 code points, 40,002 UTF-16 units.
    const over = await web.api('POST', '/api/threads', { binding: WEB_BINDING, text: '😀'.repeat(20_001) });
    expect(over.status).toBe(400);
    expect((over.json as { error: { message: string } }).error.message).toContain('at most 40000 characters');
    const exact = await web.api('POST', '/api/threads', { binding: WEB_BINDING, text: '😀'.repeat(20_000) });
    expect(exact.status).toBe(201);
    const { thread } = exact.json as { thread: { title: string } };
    // The title is cut too, and stays well-formed.
    expect(thread.title.isWellFormed()).toBe(true);
    expect(thread.title.endsWith('…')).toBe(true);
  });
});
