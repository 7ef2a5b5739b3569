import { describe, expect, it } from 'vitest';
import { RULE_IDS } from '../../src/check/index.js';
import type { Observations } from '../../src/check/observations.js';
import { judgeAll, missingRuleIds, RULES } from '../../src/check/rules/index.js';
import { exitCode } from '../../src/check/run.js';

function nothingTried(stopped: string): Observations {
  return {
    endpoint: 'http://agent.example/a2a',
    dialect: 'a2a',
    speaks: [],
    timeoutMs: 60_000,
    polling: false,
    polled: false,
    headersLimitMs: 30_000,
    card: undefined,
    unsupported: undefined,
    identity: undefined,
    firstTurn: undefined,
    secondTurn: undefined,
    repeat: undefined,
    getTask: undefined,
    subscribe: undefined,
    cancel: undefined,
    listTasks: undefined,
    callErrors: [],
    stopped,
  };
}

describe('the rule table', () => {
  it('holds every stable rule id exactly once, in the documented order', () => {
    expect(missingRuleIds()).toEqual([]);
    expect(RULES.map((r) => r.id)).toEqual([...RULE_IDS]);
    for (const r of RULES) {
      expect(r.rows.length).toBeGreaterThan(0);
      expect(r.consequence).not.toBe('');
    }
  });

  it('SKIPs, with the reason, every rule whose call was never made', () => {
    const results = judgeAll(nothingTried('the check ran out of time'));
    expect(results.map((r) => r.status)).toEqual(RULE_IDS.map(() => 'SKIP'));
    for (const r of results) {
      expect(r.detail).toMatch(/the check ran out of time/);
      expect(r.consequence).toBeNull();
    }
  });

  it('exit code: 2 when unreachable, 1 on any FAIL, 0 otherwise', () => {
    const r = (status: 'PASS' | 'FAIL' | 'WARN' | 'SKIP') => ({
      id: 'card.fetch' as const,
      status,
      detail: 'x',
      consequence: null,
    });
    expect(exitCode(false, [r('PASS'), r('WARN'), r('SKIP')])).toBe(0);
    expect(exitCode(false, [r('PASS'), r('FAIL')])).toBe(1);
    expect(exitCode(true, [r('FAIL')])).toBe(2);
  });
});
