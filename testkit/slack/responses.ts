import { randomBytes } from 'node:crypto';
import type { FakeSlack } from './api.js';
import { validateBlocks } from './block-kit.js';
import { clone, isRecord, SlackRefusal } from './values.js';
import type { Workspace } from './workspace.js';

/**
 * Interaction response URLs (`response_url` in a block_actions payload), which Slack mints per
 * interaction and binds to the message the press came from and to the person who pressed.
 * What the fake does with a POST to one, per Slack's "Handling user interaction" and "Modifying
 * messages" pages (docs.slack.dev/interactivity/handling-user-interaction,
 * docs.slack.dev/messaging/modifying-messages):
 * - a JSON body; `delete_original: true` removes the source message — an ephemeral one too,
 *   which no Web API method can touch; `replace_original: true` replaces its text and blocks;
 *   otherwise a new ephemeral message for the presser (`response_type: 'in_channel'` is not
 *   modelled: the fake answers 501 so a test that needs it sees that at once);
 * - at most 5 uses, within 30 minutes of the interaction.
 * Slack does not document the refusals' status codes; assumed here (strict side): 404 with
 * `expired_url`, `used_url` or `no_service` (a URL it never minted), 400 with `invalid_payload`
 * (not a JSON object) or `no_text` (nothing to show and nothing to delete), 404
 * `message_not_found` for a source message already deleted.
 */

export const RESPONSE_URL_USES = 5;
export const RESPONSE_URL_TTL_MS = 30 * 60_000;

interface Minted {
  ws: Workspace;
  channel: string;
  user: string;
  messageTs: string;
  ephemeral: boolean;
  at: number;
  uses: number;
}

export type ResponseRecord = FakeSlack['responses'][number];

export class ResponseUrls {
  readonly #minted = new Map<string, Minted>();
  readonly records: ResponseRecord[] = [];
  readonly #clock: () => number;

  constructor(clock: () => number) {
    this.#clock = clock;
  }

  /** A response_url for a press on `messageTs` by `user` (`base`: the fake's origin). */
  mint(base: string, target: Omit<Minted, 'at' | 'uses'>): string {
    const path = `/actions/${target.ws.teamId}/${this.#minted.size + 1}/${randomBytes(12).toString('hex')}`;
    this.#minted.set(path, { ...target, at: this.#clock(), uses: 0 });
    return `${base}${path}`;
  }

  /** One POST to a response URL: the HTTP status and the JSON Slack answers. */
  post(path: string, raw: string): { status: number; body: Record<string, unknown> } {
    const answer = (status: number, body: Record<string, unknown>) => {
      this.records.push({ path, body: parsed, status, ok: body.ok === true });
      return { status, body };
    };
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      parsed = raw;
    }
    const minted = this.#minted.get(path);
    if (minted === undefined) return answer(404, { ok: false, error: 'no_service' });
    if (this.#clock() - minted.at > RESPONSE_URL_TTL_MS)
      return answer(404, { ok: false, error: 'expired_url' });
    if (minted.uses >= RESPONSE_URL_USES) return answer(404, { ok: false, error: 'used_url' });
    minted.uses += 1;
    if (!isRecord(parsed)) return answer(400, { ok: false, error: 'invalid_payload' });
    try {
      this.#apply(minted, parsed);
    } catch (e) {
      if (e instanceof SlackRefusal)
        return answer(e.code === 'message_not_found' ? 404 : 400, { ok: false, error: e.code });
      if (e instanceof NotModelled) return answer(501, { ok: false, error: e.message });
      throw e;
    }
    return answer(200, { ok: true });
  }

  #apply(m: Minted, body: Record<string, unknown>): void {
    const { ws } = m;
    const source = m.ephemeral
      ? ws.ephemerals.find((e) => e.channel === m.channel && e.user === m.user && e.ts === m.messageTs)
      : undefined;
    const message = m.ephemeral ? undefined : ws.find(m.channel, m.messageTs);
    const gone = m.ephemeral
      ? source === undefined || source.deleted === true
      : message === undefined || message.deleted;
    if (body.delete_original === true) {
      if (gone) throw new SlackRefusal('message_not_found');
      if (source !== undefined) source.deleted = true;
      if (message !== undefined) message.deleted = true;
      return;
    }
    const text = typeof body.text === 'string' ? body.text : undefined;
    const blocks =
      body.blocks === undefined
        ? undefined
        : validateBlocks(body.blocks, 'invalid_blocks', ws.blocksTextLimit);
    if ((text === undefined || text === '') && blocks === undefined) throw new SlackRefusal('no_text');
    if (body.replace_original === true) {
      if (gone) throw new SlackRefusal('message_not_found');
      if (source !== undefined) {
        source.text = text ?? '';
        if (blocks === undefined) delete source.blocks;
        else source.blocks = clone(blocks);
      }
      if (message !== undefined) {
        message.text = text ?? '';
        message.blocks = blocks === undefined ? undefined : clone(blocks);
      }
      return;
    }
    if (body.response_type === 'in_channel') throw new NotModelled('in_channel responses are not modelled');
    ws.ephemerals.push({
      channel: m.channel,
      user: m.user,
      text: text ?? '',
      ts: ws.nextTs(),
      ...(blocks === undefined ? {} : { blocks: clone(blocks) }),
    });
  }
}

class NotModelled extends Error {}
