import type { ChatInbound } from '../../src/core/inbound.js';

/** An engine's inbound port with nothing behind it: for tests of a surface's connection alone. */
export const IDLE_INBOUND: ChatInbound = {
  receive: async () => ({ sessionId: '', turnId: '', duplicate: false }),
  answer: async () => ({ status: 'stale' as const, sessionId: '' }),
  cancel: async () => ({ status: 'nothing-running' as const, sessionId: '' }),
  handOver: async () => 'no-session' as const,
  findSession: async () => undefined,
  findTurn: async () => undefined,
  claimEvent: async () => true,
};

/** No Bindings at all: for tests of a surface's connection alone. */
export const NO_BINDINGS = {
  forChannel: () => undefined,
  forDirectMessages: () => undefined,
  get: () => undefined,
};
