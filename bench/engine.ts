/**
 * Engine benchmarks: the session engine with 1,000 concurrent sessions. The agent server runs
 * here, in the parent; the broker side runs in a child process (bench/engine-child.ts), so its
 * time and resident memory are its own, and it can be SIGKILLed. Each figure carries its goal
 * (figures.ts); docs/performance.md lists them.
 *
 * - Broker-added latency: from the agent writing a turn's first artifact event to the socket to
 *   the surface's update call, with 1,000 sessions open.
 * - Resident memory per streaming session, and resume after SIGKILL (engine-resources.ts).
 */
import { type AgentServer, startAgentServer } from './agent-server.js';
import { fmt, runChild, SESSIONS } from './engine-children.js';
import { benchMemory, benchResume } from './engine-resources.js';
import { figure } from './figures.js';

// ---- 4d. latency from the socket to the surface -------------------------------------------------

async function benchLatency(server: AgentServer): Promise<void> {
  const sessions = SESSIONS;
  const child = runChild(['latency', server.endpoint, String(sessions), String(sessions * 2)], (m) => {
    if (m.type === 'release-stamped') server.releaseStamped(m.spreadMs as number);
    if (m.type === 'release') server.release();
  });
  const { message } = await child.next('result', 300_000);
  await child.exited;
  const p50 = message.p50 as number;
  const p99 = message.p99 as number;
  const verdictText = figure(
    `latency.p99.${sessions}`,
    `broker-added latency, first artifact on the socket → surface call, p99, ${fmt(sessions)} open sessions`,
    p99,
    'ms',
    { op: '<', value: 25 },
  );
  console.log(
    "\nBroker-added latency: from the agent writing its first artifact event to the socket to the surface's" +
      ' update call (the system-wide monotonic clock, read in both processes)',
  );
  console.log(
    `  ${fmt(sessions)} sessions (all open at once, their first chunks spread over 1 s; ${fmt(message.samples as number)} turns):` +
      ` p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms ${verdictText}, max ${(message.max as number).toFixed(2)} ms`,
  );
}

export async function benchEngine(): Promise<void> {
  const server = await startAgentServer();
  try {
    await benchLatency(server);
    await benchMemory(server);
    await benchResume(server);
  } finally {
    await server.close();
  }
}
