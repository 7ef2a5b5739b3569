import { cutText } from '../../core/text.js';

/**
 * A thread's title: its first message on one line, cut at a word. Lengths are UTF-16 code
 * units (core/text.ts), and the cut never splits a surrogate pair.
 */

export const TITLE_MAX = 80;
const MARK = '…';
/** A cut backs up to the last space only this far: one very long word is cut inside it. */
const MIN_KEPT = 0.5;

export function titleOf(text: string, max = TITLE_MAX): string {
  const line = text.replace(/\s+/g, ' ').trim();
  if (line.length <= max) return line;
  const room = max - MARK.length;
  const hard = cutText(line, room);
  // The cut falls between two words when the character after it is a space.
  if (line.charAt(hard.length) === ' ') return `${hard.trimEnd()}${MARK}`;
  const space = hard.lastIndexOf(' ');
  const kept = space >= Math.ceil(room * MIN_KEPT) ? hard.slice(0, space) : hard;
  return `${kept.trimEnd()}${MARK}`;
}
