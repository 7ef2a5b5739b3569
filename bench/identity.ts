import { personHeaders } from '../src/a2a/identity.js';
import type { PersonIdentity } from '../src/a2a/options.js';
import type { Caller } from '../src/core/ports.js';
import { AssertionSigner, KeyRing, newKeyEntry } from '../src/identity/index.js';
import { figure } from './figures.js';

/**
 * identity  What a per-person identity adds to each call to an agent: the assertion signed for
 *           the caller and put in the header (src/a2a/identity.ts personHeaders), p99 over
 *           thousands of calls from distinct people, ES256 and EdDSA (goal p99 < 2 ms).
 */

const CALLS = 5_000;

function p99(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))] ?? Number.NaN;
}

export async function benchIdentity(): Promise<void> {
  console.log('\nidentity: the per-person assertion a call carries');
  for (const alg of ['ES256', 'EdDSA'] as const) {
    const signer = new AssertionSigner({
      issuer: 'http://broker.bench:8080',
      keys: await KeyRing.of([await newKeyEntry(alg, new Date(0))]),
    });
    const identity: PersonIdentity = {
      kind: 'person',
      audience: 'http://agent.bench/a2a',
      header: 'Authorization',
      userIdHeader: true,
    };
    const source = signer.sourceFor('bench/binding');
    const caller = (i: number): Caller => ({
      kind: 'person',
      id: `U${i}`,
      name: `Person ${i}`,
      email: `person${i}@example.com`,
      surface: 'slack',
      workspaceId: 'T1',
      channelId: 'C1',
      sessionId: `slack:T1:C1:${i}.0`,
      binding: 'bench/binding',
    });
    for (let i = 0; i < 200; i++) await personHeaders(identity, source, caller(i));
    const samples: number[] = [];
    for (let i = 0; i < CALLS; i++) {
      const start = performance.now();
      await personHeaders(identity, source, caller(i));
      samples.push(performance.now() - start);
    }
    const value = p99(samples);
    console.log(
      `  ${alg}: p99 ${value.toFixed(3)} ms per call over ${CALLS.toLocaleString('en')} callers ${figure(
        `identity.assertion-p99-${alg.toLowerCase()}`,
        `per-person assertion added to a call (${alg}), p99`,
        Number(value.toFixed(3)),
        'ms',
        { op: '<', value: 2 },
      )}`,
    );
  }
}
