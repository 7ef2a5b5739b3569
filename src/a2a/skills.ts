import type { AgentSkill } from '../core/ports.js';

/**
 * A card's `skills` (both card versions: `{id, name, description, tags, examples?}`), read
 * leniently and bounded: they only feed the prompts a chat suggests, so a skill that is not
 * well formed is skipped, never a reason to refuse the card.
 */

const MAX_SKILLS = 20;
const MAX_EXAMPLES = 5;
const MAX_NAME = 100;
const MAX_DESCRIPTION = 500;
const MAX_EXAMPLE = 500;

function text(value: unknown, max: number): string {
  if (typeof value !== 'string') return '';
  const trimmed = value.trim();
  const chars = Array.from(trimmed);
  return chars.length <= max ? trimmed : chars.slice(0, max).join('');
}

export function skillsOf(raw: unknown): AgentSkill[] {
  if (!Array.isArray(raw)) return [];
  const out: AgentSkill[] = [];
  for (const entry of raw) {
    if (out.length >= MAX_SKILLS) break;
    if (typeof entry !== 'object' || entry === null) continue;
    const skill = entry as Record<string, unknown>;
    const name = text(skill.name, MAX_NAME);
    if (name === '') continue;
    const examples = Array.isArray(skill.examples)
      ? skill.examples
          .map((e) => text(e, MAX_EXAMPLE))
          .filter((e) => e !== '')
          .slice(0, MAX_EXAMPLES)
      : [];
    out.push({ name, description: text(skill.description, MAX_DESCRIPTION), examples });
  }
  return out;
}
