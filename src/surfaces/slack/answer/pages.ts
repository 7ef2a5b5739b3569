import { type PageLimits, paginate } from '../../common/markdown-pages.js';

/**
 * Slack's pages: Slack cuts or refuses long messages (text is split server-side around 4,000
 * characters, a markdown block holds 12,000, `msg_blocks_too_long` comes at about 13,000), so an
 * answer longer than a page continues in follow-up messages in the thread. A page is measured
 * as mrkdwn: escaping makes `&` five characters and `<`, `>` four (a stream's `<` gains a
 * zero-width space).
 */

export const DEFAULT_PAGE_LIMITS: Omit<PageLimits, 'cost'> = { soft: 2_800, hard: 3_600 };

function mrkdwnCost(code: number): number {
  if (code === 38) return 5;
  if (code === 60 || code === 62) return 4;
  return 1;
}

/** The pages of an answer as Slack shows them, each one self-contained Markdown. */
export function slackPages(text: string, limits: Omit<PageLimits, 'cost'> = DEFAULT_PAGE_LIMITS): string[] {
  return paginate(text, { ...limits, cost: mrkdwnCost });
}
