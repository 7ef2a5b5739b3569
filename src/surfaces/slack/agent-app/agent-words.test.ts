import { describe, expect, it } from 'vitest';
import { titleOf } from './session-status.js';
import { MAX_PROMPTS, promptsFrom } from './suggested-prompts.js';

describe('an agent session title', () => {
  it('is the first non-empty line, spaces folded, cut with an ellipsis', () => {
    expect(titleOf('\n\n  restart   the api \nplease', 80)).toBe('restart the api');
    expect(titleOf('   ', 80)).toBe('');
    const long = titleOf('a'.repeat(100), 10);
    expect(Array.from(long)).toHaveLength(10);
    expect(long.endsWith('…')).toBe(true);
    // Characters, not UTF-16 units: an emoji is never cut in half.
    expect(titleOf('😀'.repeat(20), 5)).toBe(`${'😀'.repeat(4)}…`);
  });
});

describe('suggested prompts from a card', () => {
  it('take skill examples in order, titled by the skill, at most four', () => {
    const prompts = promptsFrom({
      name: 'Ops',
      skills: [
        { name: 'K8s', description: '', examples: ['a', 'b', 'c'] },
        { name: 'None', description: 'no examples', examples: [] },
        { name: 'Logs', description: '', examples: ['d', 'e'] },
      ],
    });
    expect(prompts).toEqual([
      { title: 'K8s', message: 'a' },
      { title: 'K8s', message: 'b' },
      { title: 'K8s', message: 'c' },
      { title: 'Logs', message: 'd' },
    ]);
    expect(prompts).toHaveLength(MAX_PROMPTS);
  });

  it('are none when no skill has an example', () => {
    expect(promptsFrom({ name: 'x', skills: [{ name: 'a', description: 'b', examples: [] }] })).toEqual([]);
  });
});
