import { describe, expect, it } from 'vitest';
import type { AgentRegistry, AgentRoute } from '../core/ports.js';
import { WorkspaceGate } from './workspace-gate.js';

const route = { settings: {} } as unknown as AgentRoute;
const inner: AgentRegistry = { resolve: (binding) => (binding === 'team-a/support' ? route : undefined) };
const key = (workspaceId: string) => ({ surface: 'slack', workspaceId, channelId: 'C1', threadId: '1.2' });

describe('the workspace gate', () => {
  it('refuses the sessions of a removed workspace, but still lets their tasks be cancelled', () => {
    const gate = new WorkspaceGate(inner, 'slack');
    gate.admitOnly(['T1', 'T2']);
    gate.refuse('T1');
    expect(gate.resolve('team-a/support', key('T1'))).toBeUndefined();
    expect(gate.resolve('team-a/support', key('T1'), 'cancel')).toBe(route);
    expect(gate.resolve('team-a/support', key('T2'))).toBe(route);
    // A cancel never makes a gone Binding appear.
    expect(gate.resolve('team-b/gone', key('T1'), 'cancel')).toBeUndefined();
  });
});
