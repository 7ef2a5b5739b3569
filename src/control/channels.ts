import type { ChannelConflict, LiveBinding } from '../core/registry.js';

/**
 * Which Slack channels a Binding may serve (docs/architecture.md, "Security model"): the operator may
 * map namespaces to the channel ids they may claim, and a channel or the direct messages of a
 * workspace claimed twice belong to neither, visibly. Pure functions over plain data.
 */

/**
 * Namespace → channel ids it may claim. Unset or empty: any namespace may claim any channel.
 * Direct messages are an entry of their own, DIRECT_MESSAGES_ENTRY: when the setting is used, a
 * namespace takes the app's DMs only if its list names them.
 *
 * With several workspaces an entry may name one: `T…/C…` (that channel, in that workspace only),
 * `T…/*` (every channel of the workspace, and its DMs) or `T…/direct-messages`. A workspace entry
 * grants only Bindings that name the same workspace (spec.slack.teamId): a Binding without one
 * serves every workspace, so only a bare channel id grants it.
 */
export type NamespaceChannels = Readonly<Record<string, readonly string[]>>;

/** The allowlist entry that lets a namespace's Binding take direct messages. */
export const DIRECT_MESSAGES_ENTRY = 'direct-messages';

/** What an allowlist entry may be: a channel id, the DM entry, or either of those or `*` after `T…/`. */
export const ALLOWLIST_ENTRY_RE =
  /^(?:[TE][A-Z0-9]+\/(?:[CG][A-Z0-9]+|\*|direct-messages)|[CG][A-Z0-9]+|direct-messages)$/;

/** Whether a namespace with this allowlist may take direct messages (undefined: no restriction). */
export function mayTakeDirectMessages(allowed: readonly string[] | undefined, teamId?: string): boolean {
  if (allowed === undefined || allowed.includes(DIRECT_MESSAGES_ENTRY)) return true;
  return (
    teamId !== undefined &&
    (allowed.includes(`${teamId}/${DIRECT_MESSAGES_ENTRY}`) || allowed.includes(`${teamId}/*`))
  );
}

/** The channels a namespace may claim; undefined: no restriction. */
export function allowedChannels(
  setting: NamespaceChannels | undefined,
  namespace: string,
): readonly string[] | undefined {
  if (setting === undefined || Object.keys(setting).length === 0) return undefined;
  return setting[namespace] ?? [];
}

export function splitClaims(
  claimed: readonly string[],
  allowed: readonly string[] | undefined,
  teamId?: string,
): { granted: string[]; refused: string[] } {
  if (allowed === undefined) return { granted: [...claimed], refused: [] };
  // The DM entry is not a channel: listing it grants no channel of that name.
  const ok = new Set(allowed.filter((c) => c !== DIRECT_MESSAGES_ENTRY));
  const grants = (c: string): boolean =>
    ok.has(c) || (teamId !== undefined && (ok.has(`${teamId}/${c}`) || ok.has(`${teamId}/*`)));
  return { granted: claimed.filter(grants), refused: claimed.filter((c) => !grants(c)) };
}

/** What a Binding shares with others: a channel id, or 'direct messages'. */
export interface ClaimConflict {
  what: string;
  /** The other Bindings, as namespace/name, sorted. */
  others: string[];
}

export const DIRECT_MESSAGES = 'direct messages';

/**
 * Conflicts per Binding ref, from the registry's channel conflicts and its Bindings' direct
 * message claims (two Bindings that both take DMs in an overlapping workspace).
 */
export function conflictsByBinding(
  channelConflicts: readonly ChannelConflict[],
  bindings: ReadonlyArray<Pick<LiveBinding, 'ref' | 'routes'>>,
): Map<string, ClaimConflict[]> {
  const out = new Map<string, ClaimConflict[]>();
  const add = (ref: string, conflict: ClaimConflict): void => {
    const list = out.get(ref) ?? [];
    list.push(conflict);
    out.set(ref, list);
  };
  for (const c of channelConflicts) {
    for (const ref of c.bindings)
      add(ref, { what: c.channelId, others: c.bindings.filter((r) => r !== ref).sort() });
  }
  const surfaces = new Set(bindings.flatMap((b) => Object.keys(b.routes)));
  for (const surface of surfaces) {
    const dms = bindings.filter((b) => b.routes[surface]?.allowDirectMessages === true);
    for (const b of dms) {
      const others = dms
        .filter(
          (o) =>
            o.ref !== b.ref && teamsOverlap(o.routes[surface]?.workspaceId, b.routes[surface]?.workspaceId),
        )
        .map((o) => o.ref)
        .sort();
      if (others.length > 0) add(b.ref, { what: DIRECT_MESSAGES, others });
    }
  }
  for (const list of out.values()) list.sort((x, y) => (x.what < y.what ? -1 : x.what > y.what ? 1 : 0));
  return out;
}

function teamsOverlap(a: string | undefined, b: string | undefined): boolean {
  return a === undefined || b === undefined || a === b;
}

/** Refs whose conflicts differ between two indexes: their status must be written again. */
export function changedConflicts(
  before: ReadonlyMap<string, ClaimConflict[]>,
  after: ReadonlyMap<string, ClaimConflict[]>,
): string[] {
  const refs = new Set([...before.keys(), ...after.keys()]);
  return [...refs].filter(
    (ref) => JSON.stringify(before.get(ref) ?? []) !== JSON.stringify(after.get(ref) ?? []),
  );
}
