import { describe, expect, it } from 'vitest';
import { LINK_ACTION_ID } from '../inbound/keys.js';
import { noticeMessage } from './render.js';

describe('a notice in Slack', () => {
  it('is its text, escaped; with a link (a sign-in), a button that opens it', () => {
    expect(noticeMessage({ kind: 'agent-busy', text: 'The agent is busy <now>.' })).toEqual({
      text: 'The agent is busy &lt;now&gt;.',
    });
    const signIn = noticeMessage({
      kind: 'sign-in-required',
      text: 'To send your message, sign in.',
      link: { label: 'Sign in', url: 'https://broker.example/identity/sign-in?s=abc' },
    });
    expect(signIn.text).toBe('To send your message, sign in.');
    expect(signIn.blocks?.[1]).toEqual({
      type: 'actions',
      elements: [
        {
          type: 'button',
          action_id: LINK_ACTION_ID,
          text: { type: 'plain_text', text: 'Sign in' },
          url: 'https://broker.example/identity/sign-in?s=abc',
          style: 'primary',
        },
      ],
    });
  });
});
