import type { Observations } from '../observations.js';
import { cardRules } from './card.js';
import { errorRules } from './errors.js';
import { identityRules } from './identity.js';
import { methodRules } from './methods.js';
import { pollingRules } from './polling.js';
import { replyRules } from './reply.js';
import { transportRules } from './transport.js';
import { RULE_IDS, type Rule, type RuleId, type RuleStatus } from './types.js';

export { RULE_IDS, type Rule, type RuleId, type RuleStatus } from './types.js';

/** Every rule, in the order they are printed: the contract's own order. */
export const RULES: readonly Rule[] = [
  ...cardRules,
  ...transportRules,
  ...replyRules,
  ...methodRules,
  ...errorRules,
  ...identityRules,
  ...pollingRules,
];

export interface RuleResult {
  id: RuleId;
  status: RuleStatus;
  detail: string;
  /** What the broker does about it: for a FAIL or a WARN, null otherwise. */
  consequence: string | null;
}

/** Judges every rule. A rule that throws is a bug in the checker, reported as that rule's SKIP. */
export function judgeAll(obs: Observations): RuleResult[] {
  return RULES.map((rule) => {
    try {
      const v = rule.judge(obs);
      const consequence =
        v.status === 'FAIL' || v.status === 'WARN'
          ? v.consequence === undefined
            ? rule.consequence
            : v.consequence
          : null;
      return { id: rule.id, status: v.status, detail: v.detail, consequence };
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      return {
        id: rule.id,
        status: 'SKIP',
        detail: `the checker could not judge this rule: ${why}`,
        consequence: null,
      };
    }
  });
}

/** The table and the id list must agree: a rule added in one place only is a bug. */
export function missingRuleIds(): RuleId[] {
  const present = new Set(RULES.map((r) => r.id));
  return RULE_IDS.filter((id) => !present.has(id));
}
