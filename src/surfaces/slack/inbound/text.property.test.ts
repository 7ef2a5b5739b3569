import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { escapeSlack } from '../answer/mrkdwn.js';
import { mentions, slackToPlain } from './text.js';

/**
 * Property tests of Slack's text as the agent receives it: the app's mention is gone, no Slack
 * token survives as markup, and text a person typed (which Slack sends escaped) comes back as
 * typed.
 */

const BOT = 'U0BOT';
const piece = fc.oneof(
  fc.constantFrom(
    `<@${BOT}>`,
    `<@${BOT}|agent>`,
    '<@U0ADA>',
    '<@U0ADA|ada>',
    '<#C0GEN|general>',
    '<!here>',
    '<!subteam^S1|@ops>',
  ),
  fc.constantFrom(
    '<https://x.example|docs>',
    '<mailto:a@b.example>',
    '&amp;',
    '&lt;',
    '&gt;',
    ' ',
    '\n',
    '|',
  ),
  fc.string({ maxLength: 8 }),
);

describe('Slack text to plain text (property)', () => {
  it('drops the app mention and leaves no Slack token (escaped brackets aside: those are text)', () => {
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), (parts) => {
        // `&lt;@U1&gt;` is a person typing "<@U1>": it comes back as that text, by design.
        const text = parts.join('').replaceAll('&lt;', '').replaceAll('&gt;', '');
        const plain = slackToPlain(text, BOT);
        expect(mentions(plain, BOT)).toBe(false);
        // Every complete <…> token of the input was rendered: none is left as it was.
        for (const m of text.matchAll(/<([@#!][^<>\n]*)>/g)) expect(plain).not.toContain(m[0]);
      }),
      { numRuns: 1_000 },
    );
  });

  it('gives back what a person typed, once Slack has escaped it', () => {
    fc.assert(
      fc.property(
        fc.string().filter((s) => s.trim() === s && !/[ \t]{2}/.test(s)),
        (typed) => {
          expect(slackToPlain(escapeSlack(typed), BOT)).toBe(typed);
        },
      ),
      { numRuns: 1_000 },
    );
  });
});
