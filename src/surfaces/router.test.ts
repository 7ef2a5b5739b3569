import { describe, expect, it } from 'vitest';
import { FakeSurface } from '../../test/helpers/fake-surface.js';
import type { ChatTarget } from '../core/ports.js';
import { SurfaceRouter, UnknownSurfaceError } from './router.js';

const target = (surface: string): ChatTarget => ({
  sessionId: `${surface}:s`,
  key: { surface, workspaceId: 'w', channelId: 'c', threadId: 't' },
});

describe('SurfaceRouter', () => {
  it('sends each session to its own surface, and refuses one that is not running', async () => {
    const slack = new FakeSurface();
    const web = new FakeSurface();
    const router = new SurfaceRouter({ slack, webchat: web });
    await router.postNotice(target('slack'), { kind: 'no-output', text: 'x' });
    await router.askQuestion(target('webchat'), {
      binding: 'team-a/x',
      turnId: 't',
      taskId: 'k',
      question: { kind: 'text', text: 'q?', key: 'k1' },
    });
    expect(slack.messages.map((m) => m.kind)).toEqual(['notice']);
    expect(web.messages.map((m) => m.kind)).toEqual(['question']);
    expect(() =>
      router.openAnswer(target('teams'), 't', null, () => undefined, { actorId: undefined, fresh: true }),
    ).toThrow(UnknownSurfaceError);
    expect(() => router.postNotice(target('teams'), { kind: 'no-output', text: 'x' })).toThrow(
      expect.objectContaining({ code: 'unknown_surface', surface: 'teams' }),
    );
  });
});
