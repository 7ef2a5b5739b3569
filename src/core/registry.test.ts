import { describe, expect, it } from 'vitest';
import { a2aDialect } from '../dialects/a2a.js';
import type { AgentClient } from './ports.js';
import { type LiveBinding, LiveRegistry, type SurfaceRouting } from './registry.js';

const client = {} as AgentClient;

function binding(ref: string, channels: string[], slack: Partial<SurfaceRouting> = {}): LiveBinding {
  return {
    ref,
    client,
    dialect: a2aDialect,
    settings: { questionTimeoutMs: null },
    routes: { slack: { channels, allowDirectMessages: false, ...slack } },
    toolApprovals: { enabled: false, approverGroups: [], approvers: [] },
  };
}

describe('LiveRegistry', () => {
  it('routes a channel to the Binding that lists it and resolves its client', () => {
    const registry = new LiveRegistry();
    registry.upsert(binding('a/one', ['C1', 'C2']));
    expect(registry.forChannel('slack', 'C2')?.ref).toBe('a/one');
    expect(registry.forChannel('slack', 'C9')).toBeUndefined();
    expect(registry.resolve('a/one')?.dialect).toBe(a2aDialect);
    registry.remove('a/one');
    expect(registry.forChannel('slack', 'C1')).toBeUndefined();
    expect(registry.resolve('a/one')).toBeUndefined();
  });

  it('gives a channel claimed twice to neither, and names the conflict', () => {
    const registry = new LiveRegistry();
    registry.upsert(binding('a/one', ['C1']));
    registry.upsert(binding('b/two', ['C1', 'C3']));
    expect(registry.forChannel('slack', 'C1')).toBeUndefined();
    expect(registry.forChannel('slack', 'C3')?.ref).toBe('b/two');
    expect(registry.conflicts()).toEqual([
      { surface: 'slack', channelId: 'C1', bindings: ['a/one', 'b/two'] },
    ]);
    registry.upsert(binding('b/two', ['C3']));
    expect(registry.forChannel('slack', 'C1')?.ref).toBe('a/one');
    expect(registry.conflicts()).toEqual([]);
  });

  it('keeps workspaces apart and routes direct messages to the one Binding that allows them', () => {
    const registry = new LiveRegistry();
    registry.upsert(binding('a/one', ['C1'], { allowDirectMessages: true, workspaceId: 'T1' }));
    registry.upsert(binding('b/two', ['C1'], { workspaceId: 'T2' }));
    expect(registry.forChannel('slack', 'C1', 'T1')?.ref).toBe('a/one');
    expect(registry.forChannel('slack', 'C1', 'T2')?.ref).toBe('b/two');
    expect(registry.forDirectMessages('slack', 'T1')?.ref).toBe('a/one');
    expect(registry.forDirectMessages('slack', 'T2')).toBeUndefined();
  });

  it('counts a channel claimed twice as a conflict only within one workspace', () => {
    const registry = new LiveRegistry();
    registry.upsert(binding('a/one', ['C1'], { workspaceId: 'T1' }));
    registry.upsert(binding('b/two', ['C1'], { workspaceId: 'T2' }));
    expect(registry.conflicts()).toEqual([]);
    registry.upsert(binding('c/three', ['C1'], { workspaceId: 'T2' }));
    expect(registry.conflicts()).toEqual([
      { surface: 'slack', channelId: 'C1', bindings: ['b/two', 'c/three'] },
    ]);
    expect(registry.forChannel('slack', 'C1', 'T1')?.ref).toBe('a/one');
    expect(registry.forChannel('slack', 'C1', 'T2')).toBeUndefined();
    // A Binding naming no workspace claims in all of them: it conflicts with every other claim.
    registry.upsert(binding('d/any', ['C1']));
    expect(registry.conflicts()).toEqual([
      { surface: 'slack', channelId: 'C1', bindings: ['a/one', 'b/two', 'c/three', 'd/any'] },
    ]);
    expect(registry.forChannel('slack', 'C1', 'T1')).toBeUndefined();
  });

  it('lets Bindings share a channel by handle, and keeps a missing or repeated handle a conflict', () => {
    const registry = new LiveRegistry();
    registry.upsert(binding('fin/billing', ['C1'], { handle: 'billing' }));
    registry.upsert(binding('ops/k8s', ['C1'], { handle: 'k8s' }));
    expect(registry.forChannel('slack', 'C1')).toBeUndefined();
    expect(registry.sharedChannel('slack', 'C1')).toEqual([
      { ref: 'fin/billing', handle: 'billing' },
      { ref: 'ops/k8s', handle: 'k8s' },
    ]);
    expect(registry.conflicts()).toEqual([]);
    // One Binding alone on a channel is not shared, handle or not.
    registry.upsert(binding('fin/solo', ['C2'], { handle: 'solo' }));
    expect(registry.sharedChannel('slack', 'C2')).toBeUndefined();
    expect(registry.forChannel('slack', 'C2')?.ref).toBe('fin/solo');
    // The same handle twice: nobody's, and named.
    registry.upsert(binding('dev/billing', ['C1'], { handle: 'billing' }));
    expect(registry.sharedChannel('slack', 'C1')).toBeUndefined();
    expect(registry.conflicts()).toEqual([
      { surface: 'slack', channelId: 'C1', bindings: ['dev/billing', 'fin/billing', 'ops/k8s'] },
    ]);
    // A Binding without a handle on a shared channel: the same.
    registry.upsert(binding('dev/billing', ['C1']));
    expect(registry.sharedChannel('slack', 'C1')).toBeUndefined();
    expect(registry.conflicts().map((c) => c.bindings)).toEqual([['dev/billing', 'fin/billing', 'ops/k8s']]);
    registry.remove('dev/billing');
    expect(registry.sharedChannel('slack', 'C1')?.map((c) => c.handle)).toEqual(['billing', 'k8s']);
  });

  it('keeps surfaces apart: a channel id of one surface routes nothing on another', () => {
    const registry = new LiveRegistry();
    registry.upsert(binding('a/one', ['C1'], { allowDirectMessages: true }));
    registry.upsert({
      ...binding('b/two', []),
      routes: { other: { channels: ['C1'], allowDirectMessages: true } },
    });
    expect(registry.forChannel('slack', 'C1')?.ref).toBe('a/one');
    expect(registry.forChannel('other', 'C1')?.ref).toBe('b/two');
    expect(registry.forChannel('webchat', 'C1')).toBeUndefined();
    expect(registry.forDirectMessages('slack')?.ref).toBe('a/one');
    expect(registry.forDirectMessages('other')?.ref).toBe('b/two');
    expect(registry.conflicts()).toEqual([]);
  });

  it('tells listeners about changes', () => {
    const registry = new LiveRegistry();
    let calls = 0;
    const off = registry.onChange(() => calls++);
    registry.upsert(binding('a/one', ['C1']));
    off();
    registry.remove('a/one');
    expect(calls).toBe(1);
  });
});
