import { describe, expect, it } from 'vitest';
import { readCard } from './card.js';
import { skillsOf } from './skills.js';

const card = (skills: unknown) => ({
  name: 'Agent',
  description: '',
  version: '1',
  supportedInterfaces: [{ url: 'http://x', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
  capabilities: { streaming: true },
  skills,
});

describe("a card's skills", () => {
  it('are read with their names, descriptions and examples', () => {
    const info = readCard(
      card([{ id: 'k', name: 'Kubernetes', description: 'Runs kubectl', tags: [], examples: ['list pods'] }]),
      { speaks: [] },
    );
    expect(info.skills).toEqual([
      { name: 'Kubernetes', description: 'Runs kubectl', examples: ['list pods'] },
    ]);
  });

  it('never make a card unusable: malformed ones are skipped, sizes are bounded', () => {
    expect(readCard(card('not a list'), { speaks: [] }).skills).toEqual([]);
    const skills = skillsOf([
      null,
      { name: '' },
      { name: 42 },
      { name: 'ok', examples: ['a', 7, '', 'b'] },
      ...Array.from({ length: 30 }, (_, i) => ({ name: `s${i}`, description: 'x'.repeat(1_000) })),
    ]);
    expect(skills[0]).toEqual({ name: 'ok', description: '', examples: ['a', 'b'] });
    expect(skills).toHaveLength(20);
    expect(skills[1]?.description).toHaveLength(500);
  });
});
