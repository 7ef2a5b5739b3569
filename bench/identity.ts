import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { personHeaders } from '../src/a2a/identity.js';
import type { PersonIdentity } from '../src/a2a/options.js';
import type { Caller } from '../src/core/ports.js';
import {
  AssertionSigner,
  exchangingSource,
  KeyRing,
  newKeyEntry,
  TokenExchanger,
} from '../src/identity/index.js';
import { figure } from './figures.js';

/**
 * identity  What a per-person identity adds to each call to an agent: the assertion signed for
 *           the caller and put in the header (src/a2a/identity.ts personHeaders), p99 over
 *           thousands of calls from distinct people, ES256 and EdDSA (goal p99 < 2 ms); and with
 *           token exchange (src/identity/exchange.ts), each person's token already kept (goal
 *           p99 < 2 ms), and how many exchanges the calls took (one per person per token lifetime).
 */

const CALLS = 5_000;

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

/**
 * A token endpoint that answers every exchange with a token of 5 minutes, counting them: the
 * bench prices the broker's side (a kept token's lookup), not a provider's (the integration
 * test runs a real one).
 */
async function tokenEndpoint(): Promise<{
  url: string;
  exchanges: () => number;
  close: () => Promise<void>;
}> {
  let count = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      count++;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ access_token: `at-${count}`, token_type: 'Bearer', expires_in: 300 }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/token`,
    exchanges: () => count,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

export async function benchIdentityExchange(): Promise<void> {
  const endpoint = await tokenEndpoint();
  try {
    const signer = new AssertionSigner({
      issuer: 'http://broker.bench:8080',
      keys: await KeyRing.of([await newKeyEntry('ES256', new Date(0))]),
    });
    const exchange = {
      tokenUrl: endpoint.url,
      clientId: 'bench',
      clientSecret: 'bench-secret',
      audience: 'urn:bench:agent',
      agent: 'bench-agent',
    };
    const identity: PersonIdentity = {
      kind: 'person',
      audience: endpoint.url,
      header: 'Authorization',
      userIdHeader: true,
      exchange,
    };
    const source = exchangingSource(signer, 'bench/binding', new TokenExchanger(exchange));
    const people = 1_000;
    // Each person's first call exchanges; every later one finds the token kept.
    for (let i = 0; i < people; i++) await personHeaders(identity, source, caller(i));
    const samples: number[] = [];
    for (let i = 0; i < CALLS; i++) {
      const start = performance.now();
      await personHeaders(identity, source, caller(i % people));
      samples.push(performance.now() - start);
    }
    const value = p99(samples);
    const exchanges = endpoint.exchanges();
    console.log(
      `  token exchange, each person's token kept: p99 ${value.toFixed(3)} ms per call over ${CALLS.toLocaleString('en')} calls of ${people.toLocaleString('en')} people ${figure(
        'identity.exchange-kept-p99',
        'per-person identity by token exchange, the token kept, added to a call, p99',
        Number(value.toFixed(3)),
        'ms',
        { op: '<', value: 2 },
      )}; exchanges ${exchanges.toLocaleString('en')} for ${(people + CALLS).toLocaleString('en')} calls ${figure(
        'identity.exchanges-per-person',
        'token exchanges per person within a token lifetime',
        exchanges / people,
        'exchanges',
        { op: '<=', value: 1 },
      )}`,
    );
  } finally {
    await endpoint.close();
  }
}
