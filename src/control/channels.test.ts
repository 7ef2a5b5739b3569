import { describe, expect, it } from 'vitest';
import {
  ALLOWLIST_ENTRY_RE,
  allowedChannels,
  changedConflicts,
  conflictsByBinding,
  DIRECT_MESSAGES,
  mayTakeDirectMessages,
  splitClaims,
} from './channels.js';

const slack = (channels: string[], allowDirectMessages = false, workspaceId?: string) => ({
  slack: { channels, allowDirectMessages, ...(workspaceId === undefined ? {} : { workspaceId }) },
});

describe('channel tenancy', () => {
  it('allows anything without a setting, and only the listed channels with one', () => {
    expect(allowedChannels(undefined, 'team-a')).toBeUndefined();
    expect(allowedChannels({}, 'team-a')).toBeUndefined();
    expect(allowedChannels({ 'team-a': ['C1'] }, 'team-a')).toEqual(['C1']);
    expect(allowedChannels({ 'team-a': ['C1'] }, 'team-b')).toEqual([]);
    expect(splitClaims(['C1', 'C2'], ['C1'])).toEqual({ granted: ['C1'], refused: ['C2'] });
    expect(splitClaims(['C1', 'C2'], undefined)).toEqual({ granted: ['C1', 'C2'], refused: [] });
  });

  it('lets an allowlist name workspaces: one channel of one, every channel of one, its DMs', () => {
    const allowed = ['C1', 'T1/C2', 'T2/*', 'T3/direct-messages'];
    expect(splitClaims(['C1', 'C2', 'C3'], allowed, 'T1')).toEqual({
      granted: ['C1', 'C2'],
      refused: ['C3'],
    });
    expect(splitClaims(['C1', 'C2', 'C3'], allowed, 'T2')).toEqual({
      granted: ['C1', 'C2', 'C3'],
      refused: [],
    });
    // A Binding naming no workspace serves all of them: only a bare channel id grants it.
    expect(splitClaims(['C1', 'C2'], allowed)).toEqual({ granted: ['C1'], refused: ['C2'] });
    expect(mayTakeDirectMessages(allowed, 'T3')).toBe(true);
    expect(mayTakeDirectMessages(allowed, 'T2')).toBe(true);
    expect(mayTakeDirectMessages(allowed, 'T1')).toBe(false);
    expect(mayTakeDirectMessages(allowed)).toBe(false);
    expect(mayTakeDirectMessages(['direct-messages'])).toBe(true);
    for (const entry of ['C1', 'T1/C2', 'T1/*', 'T1/direct-messages', 'direct-messages'])
      expect(ALLOWLIST_ENTRY_RE.test(entry)).toBe(true);
    for (const entry of ['#general', 'T1/', 'T1/#x', 'C1/T1', '*'])
      expect(ALLOWLIST_ENTRY_RE.test(entry)).toBe(false);
  });

  it('names, for each Binding, the others it shares a channel or the DMs of a workspace with', () => {
    const index = conflictsByBinding(
      [{ surface: 'slack', channelId: 'C1', bindings: ['a/x', 'b/y'] }],
      [
        { ref: 'a/x', routes: slack(['C1'], true, 'T1') },
        { ref: 'b/y', routes: slack(['C1'], true, 'T2') },
        { ref: 'c/z', routes: slack([], true) },
      ],
    );
    expect(index.get('a/x')).toEqual([
      { what: 'C1', others: ['b/y'] },
      { what: DIRECT_MESSAGES, others: ['c/z'] },
    ]);
    expect(index.get('c/z')).toEqual([{ what: DIRECT_MESSAGES, others: ['a/x', 'b/y'] }]);
  });

  it('tells which Bindings must be told of a changed conflict', () => {
    const before = new Map([['a/x', [{ what: 'C1', others: ['b/y'] }]]]);
    const after = new Map([['c/z', [{ what: 'C2', others: ['d/w'] }]]]);
    expect(changedConflicts(before, after).sort()).toEqual(['a/x', 'c/z']);
    expect(changedConflicts(before, before)).toEqual([]);
  });
});
