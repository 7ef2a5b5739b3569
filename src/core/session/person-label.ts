import { ACTOR_METADATA_KEY, actorMetadata } from '../compose.js';
import type { SessionRecord, TurnRecord } from '../store.js';
import type { DriverContext } from './context.js';

/**
 * S-6: a surface takes a message without waiting to look its author up (Slack's ack must not
 * wait on users.info), so a turn may be stored with a label that names only the person's id.
 * Just before its send the engine asks the surface again; what it learns goes into the turn
 * that is sent (its label line and actor metadata). A surface that knows no more, or does not
 * answer, leaves the turn as stored: the contract lets the label lack a name and e-mail.
 */

/** The turns, each with the label and actor its author has now. */
export async function withPeopleNamed(
  ctx: DriverContext,
  session: SessionRecord,
  turns: readonly TurnRecord[],
): Promise<TurnRecord[]> {
  const person = ctx.deps.surface.person?.bind(ctx.deps.surface);
  if (person === undefined) return [...turns];
  const target = ctx.target(session);
  return Promise.all(
    turns.map(async (turn) => {
      const id = unnamedActorOf(turn);
      if (id === undefined) return turn;
      const actor = await person(target, id).catch(() => undefined);
      if (actor === undefined || actor.id !== id || (actor.name ?? actor.email ?? '') === '') return turn;
      return { ...turn, label: actor.label, metadata: { ...turn.metadata, ...actorMetadata(actor) } };
    }),
  );
}

/** The id of the person a turn's label names without a name or e-mail; undefined otherwise. */
function unnamedActorOf(turn: TurnRecord): string | undefined {
  if (turn.label === null) return undefined;
  const actor = turn.metadata?.[ACTOR_METADATA_KEY];
  if (typeof actor !== 'object' || actor === null) return undefined;
  const { id, name, email } = actor as { id?: unknown; name?: unknown; email?: unknown };
  if (typeof id !== 'string' || name !== undefined || email !== undefined) return undefined;
  return id;
}
