import { afterEach, describe, expect, it } from 'vitest';
import { capturingLogger, eventually } from '../k8s/cluster-helpers.js';
import { LocalRun } from './local-run.js';

/**
 * Defect: every start of local mode logged `WARN binding not ready: the card has not been read
 * yet`, which is only the first card read under way. WARN is kept for what needs attention: a
 * clean start logs none, and says at info that the Binding waits for its card, then is ready.
 */
describe('local mode: a clean start', () => {
  const local = new LocalRun('ak-start-noise');
  afterEach(() => local.close());

  it('logs no warning or error, and the Binding ready at info', async () => {
    const log = capturingLogger();
    await local.start({ logger: log.logger });
    const lines = () =>
      log.lines.map((l) => JSON.parse(l) as { level: number; msg: string; binding?: string });
    await eventually(() => {
      expect(lines().some((l) => l.msg === 'binding ready' && l.binding === 'default/demo')).toBe(true);
    });
    expect(lines().filter((l) => l.level >= 40)).toEqual([]);
  });
});
