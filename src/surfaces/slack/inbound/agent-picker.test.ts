import { describe, expect, it } from 'vitest';
import { systemClock } from '../../../core/clock.js';
import type { AgentDescription } from '../../../core/ports.js';
import { BUTTON_TEXT_MAX, buttonLabel, pickerBlocks, pickerChoices } from './agent-picker.js';

const claims = [
  { ref: 'team-a/billing', handle: 'billing' },
  { ref: 'ops/k8s', handle: 'k8s' },
];

describe('the agent picker’s buttons', () => {
  it('names a button by the card’s name and the handle', () => {
    expect(buttonLabel('Billing Assistant', 'billing')).toBe('Billing Assistant (billing)');
  });

  it('shows the handle alone when the card has no name, or its name is the handle', () => {
    expect(buttonLabel(undefined, 'k8s')).toBe('k8s');
    expect(buttonLabel('   ', 'k8s')).toBe('k8s');
    expect(buttonLabel('K8S', 'k8s')).toBe('k8s');
  });

  it('folds line breaks and drops control characters a card could carry', () => {
    expect(buttonLabel('Bill\ning\u0000 \u202eAgent\t', 'billing')).toBe('Bill ing Agent (billing)');
  });

  it('cuts a long name so the whole fits Slack’s 75 characters, the handle kept whole', () => {
    const label = buttonLabel('A'.repeat(200), 'billing');
    expect(Array.from(label)).toHaveLength(BUTTON_TEXT_MAX);
    expect(label.endsWith('… (billing)')).toBe(true);
    // Counted in characters, not UTF-16 units: an emoji-heavy name is cut at a character.
    const emoji = buttonLabel('🧾'.repeat(100), 'billing');
    expect(Array.from(emoji).length).toBeLessThanOrEqual(BUTTON_TEXT_MAX);
    expect(emoji).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
  });

  it('keeps what a card says verbatim: plain text, no mrkdwn, no emoji codes', () => {
    const blocks = pickerBlocks(
      [{ handle: 'billing', label: buttonLabel('<!channel> *x* :tada:', 'billing') }],
      '1.2',
    );
    expect(blocks[1]).toMatchObject({
      elements: [{ text: { type: 'plain_text', text: '<!channel> *x* :tada: (billing)', emoji: false } }],
    });
  });

  it('reads every card, and falls back to the handle for a card that fails or is slow', async () => {
    const described: string[] = [];
    const describe = async (ref: string): Promise<AgentDescription | undefined> => {
      described.push(ref);
      if (ref === 'ops/k8s') throw new Error('no card');
      return { name: 'Billing Assistant', skills: [] };
    };
    expect(await pickerChoices(claims, describe, systemClock)).toEqual([
      { handle: 'billing', label: 'Billing Assistant (billing)' },
      { handle: 'k8s', label: 'k8s' },
    ]);
    expect(described).toEqual(['team-a/billing', 'ops/k8s']);

    const never = (): Promise<AgentDescription | undefined> => new Promise(() => undefined);
    expect(await pickerChoices(claims, never, systemClock, 20)).toEqual([
      { handle: 'billing', label: 'billing' },
      { handle: 'k8s', label: 'k8s' },
    ]);
    expect(await pickerChoices(claims, undefined, systemClock)).toEqual([
      { handle: 'billing', label: 'billing' },
      { handle: 'k8s', label: 'k8s' },
    ]);
  });
});
