import { describe, expect, it } from 'vitest';
import { mentions, slackToPlain } from './text.js';

describe('slackToPlain', () => {
  it('drops the mention of the app and shows Slack tokens as the reader saw them', () => {
    expect(slackToPlain('<@UBOT> restart <@U123|ada> in <#C1|ops> now', 'UBOT')).toBe(
      'restart @ada in #ops now',
    );
    expect(slackToPlain('<@UBOT> see <https://example.com|the runbook> and <https://x.io>', 'UBOT')).toBe(
      'see the runbook (https://example.com) and https://x.io',
    );
    expect(slackToPlain('<!here> <!subteam^S1|@oncall> <mailto:a@b.c|a@b.c>', 'UBOT')).toBe(
      '@here @oncall a@b.c',
    );
    expect(slackToPlain('a &lt;b&gt; &amp;&amp; c', 'UBOT')).toBe('a <b> && c');
  });

  it('knows when a message mentions the app', () => {
    expect(mentions('hi <@UBOT>', 'UBOT')).toBe(true);
    expect(mentions('hi <@UBOT|kourier>', 'UBOT')).toBe(true);
    expect(mentions('hi <@UOTHER>', 'UBOT')).toBe(false);
  });
});
