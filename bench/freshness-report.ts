/**
 * One freshness run's figures and lines, the same for every surface (freshness.ts for Slack,
 * teams-freshness.ts for Teams): lag p99 against 1.25 × the floor its limits allow + 1 s, no call
 * refused for rate, every answer exact at its end, the slowest thread's mean lag ≤ 1.5 × the
 * fastest's.
 */
import { figure } from './figures.js';

export interface FreshnessResult {
  p50: number;
  p99: number;
  refused: number;
  /** Answers not exact at their end. */
  wrong: number;
  /** Slowest thread's mean lag over the fastest's. */
  fairness: number;
  detail: string;
}

const s = (x: number): string => x.toFixed(2);

/** Records the run's four figures under `id` and prints them under `what`. */
export function reportFreshness(id: string, what: string, floor: number, r: FreshnessResult): void {
  const p99Goal = Number((1.25 * floor + 1).toFixed(2));
  const p99 = figure(`${id}.p99`, `lag p99, ${what}`, r.p99, 's', { op: '<=', value: p99Goal });
  const refused = figure(`${id}.refused`, `calls refused for rate, ${what}`, r.refused, 'calls', {
    op: '<=',
    value: 0,
  });
  const wrong = figure(`${id}.wrong`, `answers not exact at their end, ${what}`, r.wrong, 'answers', {
    op: '<=',
    value: 0,
  });
  const fair = figure(
    `${id}.fairness`,
    `slowest thread's mean lag over the fastest's, ${what}`,
    r.fairness,
    'ratio',
    {
      op: '<=',
      value: 1.5,
    },
  );
  console.log(`  ${what} (floor ${s(floor)} s):`);
  console.log(`    lag p50 ${s(r.p50)} s, p99 ${s(r.p99)} s ${p99}`);
  console.log(`    refused for rate ${r.refused} ${refused}; answers not exact ${r.wrong} ${wrong}`);
  console.log(`    fairness ${s(r.fairness)} ${fair}`);
  console.log(`    ${r.detail}`);
}
