export { type CheckOptions, parseCheckArgs, USAGE as CHECK_USAGE } from './args.js';
export { CheckArgumentError } from './errors.js';
export { RULE_IDS, RULES, type RuleId, type RuleResult, type RuleStatus } from './rules/index.js';
export { type CheckIo, EXIT_FAILED, EXIT_OK, EXIT_UNUSABLE, runCheck } from './run.js';
