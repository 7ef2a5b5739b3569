import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LiveRegistry } from '../../src/core/registry.js';
import { type LocalManifestsHandle, startLocalManifests } from '../../src/local/index.js';
import { capturingLogger, eventually } from '../k8s/cluster-helpers.js';
import { type ContractAgent, startContractAgent } from '../peers/contract-agent/contract-agent.js';

/**
 * Defect: local mode read every card through one queue of four, shared by every namespace, so
 * Bindings of two tenants on an agent whose card trickles held it, and a third tenant's Binding
 * stayed "not ready (the card has not been read yet)" although its agent answered at once. Card
 * reads now go through the controller's pool, a few per namespace, taking turns.
 */

const SLOW_PER_TENANT = 3;

function manifests(slow: ContractAgent, fast: ContractAgent): string {
  const docs: string[] = [];
  const pair = (ns: string, name: string, url: string, channel: string) =>
    docs.push(
      `apiVersion: agentkourier.dev/v1alpha1
kind: AgentBackend
metadata: { namespace: ${ns}, name: ${name} }
spec: { dialect: a2a, url: "${url}" }`,
      `apiVersion: agentkourier.dev/v1alpha1
kind: Binding
metadata: { namespace: ${ns}, name: ${name} }
spec:
  backendRef: { name: ${name} }
  identity: { userId: local-user }
  slack: { channels: [${channel}] }`,
    );
  let channel = 1;
  for (const ns of ['team-slow-a', 'team-slow-b'])
    for (let i = 0; i < SLOW_PER_TENANT; i++)
      pair(ns, `slow-${i}`, slow.endpoint, `C0SLOW${String(channel++).padStart(4, '0')}`);
  pair('team-fast', 'fast', fast.endpoint, 'C0FAST0001');
  return `${docs.join('\n---\n')}\n`;
}

describe('local mode: one tenant’s slow agent delays no other tenant', () => {
  let slow: ContractAgent;
  let fast: ContractAgent;
  let local: LocalManifestsHandle | undefined;
  let dir: string;
  beforeAll(async () => {
    // Headers at once, then the card one byte a second: it takes minutes.
    slow = await startContractAgent({ version: '1.0', card: { trickleMs: 1000 } });
    fast = await startContractAgent({ version: '1.0' });
    dir = await mkdtemp(join(tmpdir(), 'ak-slow-tenant-'));
  });
  afterAll(async () => {
    await local?.close();
    await slow?.close();
    await fast?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('the third tenant’s Binding is ready while the slow ones are still being read', async () => {
    const file = join(dir, 'local.yaml');
    await writeFile(file, manifests(slow, fast));
    local = await startLocalManifests({
      file,
      registry: new LiveRegistry(),
      logger: capturingLogger().logger,
      watch: false,
    });
    const handle = local;
    const fastReady = await eventually(() => {
      const status = handle.bindings().find((b) => b.ref === 'team-fast/fast');
      expect(status?.ready).toBe(true);
      return status;
    }, 5_000);
    expect(fastReady?.reason).toBe('Ready');
    // The slow tenants' cards are still trickling: nothing of theirs is ready yet.
    expect(handle.bindings().filter((b) => b.ref.startsWith('team-slow') && b.ready)).toEqual([]);
  });
});
