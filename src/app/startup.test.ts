import { describe, expect, it } from 'vitest';
import { Startup } from './startup.js';

describe('the start manager (startup.ts)', () => {
  it('names what each part waits for, a miss with its code, then the checks in order, then ready', async () => {
    const startup = new Startup();
    const seen: Array<true | string> = [startup.readiness()];
    let storeProblem: string | undefined = 'the store refuses writes';
    const outcome = await startup.run([
      {
        waitingFor: "Slack's Web API (auth.test)",
        start: async () => {
          seen.push(startup.readiness());
          startup.missed('slack_unavailable');
          seen.push(startup.readiness());
        },
      },
      {
        waitingFor: 'the session store to be reachable',
        start: async () => {
          seen.push(startup.readiness());
          startup.check(() => storeProblem);
          startup.check(() => 'AgentBackends and Bindings not listed yet');
        },
      },
    ]);
    expect(outcome).toBe('started');
    seen.push(startup.readiness());
    storeProblem = undefined;
    seen.push(startup.readiness());
    expect(seen).toEqual([
      'waiting for the start',
      "waiting for Slack's Web API (auth.test)",
      "waiting for Slack's Web API (auth.test: slack_unavailable)",
      'waiting for the session store to be reachable',
      'the store refuses writes',
      'AgentBackends and Bindings not listed yet',
    ]);
    startup.drain();
    expect(startup.readiness()).toBe('shutting down');
    expect(startup.draining).toBe(true);
  });

  it('abandons the start when SIGTERM ends a wait or comes between parts; other failures are thrown', async () => {
    const sigterm = new AbortController();
    const startup = new Startup(sigterm.signal);
    const ran: string[] = [];
    const outcome = await startup.run([
      {
        waitingFor: 'a',
        start: async () => {
          ran.push('a');
          sigterm.abort();
          throw new Error('the wait ended');
        },
      },
      { waitingFor: 'b', start: async () => void ran.push('b') },
    ]);
    expect([outcome, ran]).toEqual(['abandoned', ['a']]);

    const between = new AbortController();
    const second = new Startup(between.signal);
    const outcome2 = await second.run([
      { waitingFor: 'a', start: async () => void between.abort() },
      { waitingFor: 'b', start: async () => void ran.push('b') },
    ]);
    expect([outcome2, ran]).toEqual(['abandoned', ['a']]);

    const failing = new Startup(new AbortController().signal);
    await expect(
      failing.run([{ waitingFor: 'a', start: () => Promise.reject(new Error('refused token')) }]),
    ).rejects.toThrow('refused token');
  });
});
