import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { escapeSlack, fenceAfter, markdownForStream, markdownToMrkdwn } from './mrkdwn.js';

describe('markdownToMrkdwn', () => {
  it.each([
    ['**bold** and __bold__', '*bold* and *bold*'],
    ['*italic* and _italic_', '_italic_ and _italic_'],
    ['***both***', '*_both_*'],
    ['~~gone~~', '~gone~'],
    ['`a < b && c`', '`a &lt; b &amp;&amp; c`'],
    ['[the docs](https://example.com/a?b=1)', '<https://example.com/a?b=1|the docs>'],
    ['![diagram](https://example.com/d.png)', '<https://example.com/d.png|diagram>'],
    ['<https://example.com>', '<https://example.com>'],
    ['# Title', '*Title*'],
    ['### A **strong** heading ###', '*A strong heading*'],
    ['- one\n  - two\n* three\n+ four', '• one\n  • two\n• three\n• four'],
    ['1. one\n2) two', '1. one\n2. two'],
    ['- [ ] todo\n- [x] done', '• ☐ todo\n• ☑ done'],
    ['> quoted **text**', '> quoted *text*'],
    ['---', '───'],
    ['snake_case_name and 2 * 3 * 4', 'snake_case_name and 2 * 3 * 4'],
  ])('converts %j', (markdown, mrkdwn) => {
    expect(markdownToMrkdwn(markdown)).toBe(mrkdwn);
  });

  it('keeps fenced code literal (escaped), drops the language, and formats nothing inside', () => {
    const markdown = 'Run:\n```sh\nkubectl get pods -l app=**api** | grep <none>\n```\nthen **wait**.';
    expect(markdownToMrkdwn(markdown)).toBe(
      'Run:\n```\nkubectl get pods -l app=**api** | grep &lt;none&gt;\n```\nthen *wait*.',
    );
  });

  it('treats ~~~ fences and longer fences like ``` ones', () => {
    expect(markdownToMrkdwn('~~~\n**x**\n~~~')).toBe('```\n**x**\n```');
    expect(markdownToMrkdwn('````\n```\n````')).toBe('```\n```\n```');
  });

  it('shows text as text: no @channel ping, no mention, no disguised link', () => {
    const out = markdownToMrkdwn(
      'Hey <!channel> <!here> <@U123> <#C1|general> <https://evil.example|safe.example> & co',
    );
    expect(out).not.toMatch(/<[!@#]/);
    expect(out).toContain('&lt;!channel&gt;');
    expect(out).toContain('&lt;@U123&gt;');
    expect(out).toContain('&amp; co');
    // A Slack-style link from the agent is a link to what it really points at, label and all.
    expect(out).toContain('<https://evil.example%7Csafe.example>');
  });

  it('links only http(s) and mailto URLs; any other scheme is shown as text', () => {
    expect(markdownToMrkdwn('[x](javascript:alert)')).toBe('x (javascript:alert)');
    expect(markdownToMrkdwn('[mail](mailto:ops@example.com)')).toBe('<mailto:ops@example.com|mail>');
    expect(markdownToMrkdwn('[a|b](https://e.com/x|y)')).toBe('<https://e.com/x%7Cy|a¦b>');
  });

  it('never emits a Slack token from arbitrary text (property)', () => {
    fc.assert(
      fc.property(
        fc.string({
          unit: fc.constantFrom(
            '<',
            '>',
            '!',
            '@',
            '#',
            '&',
            '|',
            'a',
            ' ',
            '\n',
            '*',
            '`',
            '[',
            ']',
            '(',
            ')',
          ),
        }),
        (text) => {
          const out = markdownToMrkdwn(text);
          // Every `<` we emit opens a link we built, and only to http(s) or mailto.
          for (const match of out.matchAll(/<([^>]*)>/g)) expect(match[1]).toMatch(/^(https?:\/\/|mailto:)/);
          expect(out).not.toMatch(/<[!@#]/);
        },
      ),
    );
  });

  it('leaves plain prose alone', () => {
    expect(markdownToMrkdwn('The pods are healthy.\nNothing to do.')).toBe(
      'The pods are healthy.\nNothing to do.',
    );
  });
});

describe('escapeSlack', () => {
  it('escapes exactly &, < and >', () => {
    expect(escapeSlack('a & b < c > d "e" \'f\'')).toBe('a &amp; b &lt; c &gt; d "e" \'f\'');
  });
});

describe('markdownForStream', () => {
  it('keeps Markdown but lets no `<` open a Slack token outside fenced code', () => {
    expect(markdownForStream('**hi** <!channel>\n```\nVec<u8>\n```\n<@U1>')).toBe(
      '**hi** <\u200B!channel>\n```\nVec<u8>\n```\n<\u200B@U1>',
    );
  });

  it('renders a longer text to an extension of a shorter one (what appending a stream needs)', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom('<', 'a', '\n', '`', ' ', '~') }),
        fc.nat(),
        (text, cut) => {
          const prefix = text.slice(0, cut % (text.length + 1));
          const lastNewline = prefix.lastIndexOf('\n');
          // A prefix cut inside a line can change how that line's fence reads; whole lines cannot.
          const whole = prefix.slice(0, lastNewline + 1);
          expect(markdownForStream(text).startsWith(markdownForStream(whole))).toBe(true);
        },
      ),
    );
  });
});

describe('fenceAfter', () => {
  it('opens on ``` or ~~~ and closes only on the same kind, at least as long', () => {
    expect(fenceAfter(null, '```ts')).toBe('```');
    expect(fenceAfter('```', '~~~')).toBe('```');
    expect(fenceAfter('````', '```')).toBe('````');
    expect(fenceAfter('```', '````')).toBeNull();
    expect(fenceAfter(null, '``` not `a fence')).toBeNull();
    expect(fenceAfter(null, '    ```')).toBeNull();
  });
});
