import { describe, expect, it } from 'vitest';
import { scrub } from './logger.js';

describe('scrub', () => {
  it('hides the OAuth body’s secrets and any Slack token in an SDK debug line', () => {
    const line =
      'http request body: {"code":"T1.abc","client_id":"1.2","client_secret":"s3cret","refresh_token":"xoxe-1-r"} Bearer xoxb-12-34-abc xoxe.xoxb-1-zz';
    const out = scrub(line);
    for (const secret of ['T1.abc', 's3cret', 'xoxe-1-r', 'xoxb-12-34-abc', 'xoxe.xoxb-1-zz'])
      expect(out).not.toContain(secret);
    expect(out).toContain('"client_id":"1.2"');
  });
});
