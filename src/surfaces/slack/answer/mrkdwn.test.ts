import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fenceAfter } from '../../common/markdown-fences.js';
import { labelFitsTarget, looksLikeAddress } from './link-label.js';
import { escapeSlack, markdownForStream, markdownToMrkdwn } from './mrkdwn.js';

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

  it.each([
    ['[https://good.example](https://evil.example)', '<https://evil.example>'],
    ['[good.example](https://evil.example/login)', '<https://evil.example/login>'],
    ['[Pay at www.bank.example](https://bank.example.evil.example)', '<https://bank.example.evil.example>'],
    ['[ops@good.example](mailto:x@evil.example)', '<mailto:x@evil.example>'],
    ['[gооd.example](https://good.example)', '<https://good.example>'],
    ['[10.0.0.1](https://10.0.0.2/)', '<https://10.0.0.2/>'],
    ['[good.example](https://good.example/a)', '<https://good.example/a|good.example>'],
    ['[example.com](https://docs.example.com/x)', '<https://docs.example.com/x|example.com>'],
    [
      '[https://www.Good.example/](https://good.example/b)',
      '<https://good.example/b|https://www.Good.example/>',
    ],
  ])('shows the real target of %j when its label names another address', (markdown, mrkdwn) => {
    expect(markdownToMrkdwn(markdown)).toBe(mrkdwn);
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
  const ZWSP = '\u200B';

  it('keeps Markdown but lets no `<` open a Slack token, inside fences or not', () => {
    expect(markdownForStream('**hi** <!channel>\n```\nVec<u8>\n```\n<@U1>')).toBe(
      `**hi** <${ZWSP}!channel>\n\`\`\`\nVec<${ZWSP}u8>\n\`\`\`\n<${ZWSP}@${ZWSP}U1>`,
    );
  });

  it.each([
    ['a ~~~ fence', '~~~\n<!here>\n~~~'],
    ['an indented block', '    <!here>'],
    ['a fence that never closes', '```\n<!here>'],
    ['a fence inside a list', '- ```\n  <!here>\n  ```'],
  ])('escapes <!here> in %s, whatever Slack takes for code', (_what, text) => {
    expect(markdownForStream(text)).toContain(`<${ZWSP}!here>`);
    expect(markdownForStream(text)).not.toMatch(/<!/);
  });

  it('breaks a plain @channel, @here or @everyone, which Slack might read as a ping; an address keeps its @', () => {
    expect(markdownForStream('@channel look\n(@here) and @everyone')).toBe(
      `@${ZWSP}channel look\n(@${ZWSP}here) and @${ZWSP}everyone`,
    );
    expect(markdownForStream('mail ops@example.com')).toBe('mail ops@example.com');
  });

  it('breaks a script scheme, so no link runs code, whatever its case; other colons stay', () => {
    expect(
      markdownForStream(
        '[x](javascript:alert(1)) [y](JavaScript:go()) [z](vbscript:x) [w](data:text/html,x)',
      ),
    ).toBe(
      `[x](javascript${ZWSP}:alert(1)) [y](JavaScript${ZWSP}:go()) [z](vbscript${ZWSP}:x) [w](data${ZWSP}:text/html,x)`,
    );
    expect(markdownForStream('metadata: 12:30, see [docs](https://x.example/a:b)')).toBe(
      'metadata: 12:30, see [docs](https://x.example/a:b)',
    );
  });

  it('shows a link whose label names another address as the characters written, target included', () => {
    expect(markdownForStream('[https://good.example](https://evil.example)')).toBe(
      `[https://good.example]${ZWSP}(https://evil.example)`,
    );
    expect(markdownForStream('[[https://good.example]](https://evil.example)')).toBe(
      `[[https://good.example]]${ZWSP}(https://evil.example)`,
    );
    // No reference links or definitions either: a label there cannot be checked against its target.
    expect(markdownForStream('[good.example][1]\n\n[1]: https://evil.example')).toBe(
      `[good.example]${ZWSP}[1]\n\n[1]${ZWSP}: https://evil.example`,
    );
    // A prose label stays a link.
    expect(markdownForStream('see [the docs](https://docs.example/a)')).toBe(
      'see [the docs](https://docs.example/a)',
    );
  });

  const streamText = fc.string({
    unit: fc.constantFrom(
      '<',
      '&',
      '!',
      '@',
      '[',
      ']',
      '(',
      ')',
      ':',
      'a',
      '.',
      'co',
      ' ',
      '\n',
      '`',
      '~',
      'https://',
      'javascript',
      'DATA',
      'x',
    ),
    maxLength: 80,
  });

  it('renders a longer text to an extension of a shorter one, whatever the cut (property)', () => {
    fc.assert(
      fc.property(streamText, fc.nat(), (text, cut) => {
        const prefix = text.slice(0, cut % (text.length + 1));
        expect(markdownForStream(text).startsWith(markdownForStream(prefix))).toBe(true);
      }),
    );
  });

  it('breaks where a reading of every character would (property)', () => {
    // The rule read one character at a time, as it was first written: the function jumps from
    // one `<`, `&`, `]`, `@` or `:` to the next instead, and must break in the same places. Whether a
    // label before `](` is plain prose is left to the function on the text up to there (each
    // decision reads only what comes before: the property above).
    const everyCharacter = (text: string): string => {
      let out = '';
      for (let i = 0; i < text.length; i++) {
        if (text[i] === ':' && /(?:^|[^a-z0-9])(?:javascript|vbscript|data)$/i.test(text.slice(0, i)))
          out += ZWSP;
        out += text[i];
        const next = text[i + 1];
        if (text[i] === '<' || text[i] === '&') out += ZWSP;
        else if (text[i] === '@' && !/[a-z0-9_.+-]/i.test(text[i - 1] ?? ' ')) out += ZWSP;
        else if (text[i] === ']' && (next === '[' || next === ':')) out += ZWSP;
        else if (
          text[i] === ']' &&
          next === '(' &&
          markdownForStream(text.slice(0, i + 2)).endsWith(`]${ZWSP}(`)
        )
          out += ZWSP;
      }
      return out;
    };
    fc.assert(
      fc.property(streamText, (text) => {
        expect(markdownForStream(text)).toBe(everyCharacter(text));
      }),
      { numRuns: 500 },
    );
  });

  it('shows exactly what the agent wrote, and leaves no token, entity or address link open (property)', () => {
    fc.assert(
      fc.property(streamText, (text) => {
        const out = markdownForStream(text);
        expect(out.replaceAll(ZWSP, '')).toBe(text);
        expect(out).not.toMatch(/[<&][^\u200B]|[<&]$/);
        expect(out).not.toMatch(/\][[:]/);
        for (const m of out.matchAll(/\[([^[\]]*)\]\(/g)) expect(looksLikeAddress(m[1] ?? '')).toBe(false);
      }),
      { numRuns: 500 },
    );
  });
});

describe('link labels (property)', () => {
  it('never shows a label naming a host other than the target’s', () => {
    const label = fc.oneof(
      fc.webUrl(),
      fc.domain(),
      fc.emailAddress(),
      fc.constantFrom('the docs', 'Node.js', 'click here', 'gооd.example'),
    );
    fc.assert(
      fc.property(label, fc.webUrl(), (text, target) => {
        const out = markdownToMrkdwn(`[${text}](${target})`);
        for (const m of out.matchAll(/<([^|>]+)\|([^>]*)>/g)) {
          const shown = (m[2] ?? '').replaceAll('&amp;', '&').replaceAll('&lt;', '<').replaceAll('&gt;', '>');
          const url = decodeURIComponent(m[1] ?? '');
          expect(labelFitsTarget(shown, url)).toBe(true);
        }
      }),
      { numRuns: 500 },
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
