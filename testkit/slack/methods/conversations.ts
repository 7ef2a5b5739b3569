import { compareTs, flag, SlackRefusal, type StoredMessage, str, TS_RE, tsToMicros } from '../values.js';
import type { Handler, Workspace } from '../workspace.js';

/** conversations.replies, conversations.history, conversations.info: reading channels and threads back. */
export function conversationMethods(ws: Workspace): Record<string, Handler> {
  return {
    'conversations.replies': (args) => {
      const channel = ws.checkChannel(args);
      const ts = str(args, 'ts');
      if (!ts) throw new SlackRefusal('invalid_arguments', ['[ERROR] missing required field: ts']);
      if (!TS_RE.test(ts)) throw new SlackRefusal('invalid_ts_latest');
      const target = ws.find(channel, ts);
      if (!target) throw new SlackRefusal('thread_not_found');
      const rootTs = target.threadTs ?? target.ts;
      const root = ws.find(channel, rootTs);
      const replies = (ws.store.get(channel) ?? []).filter((m) => m.threadTs === rootTs && !m.deleted);
      if (!root || (root.deleted && replies.length === 0)) throw new SlackRefusal('thread_not_found');
      const withMetadata = flag(args, 'include_all_metadata');
      const inclusive = flag(args, 'inclusive');
      const oldest = str(args, 'oldest');
      const latest = str(args, 'latest');
      const inRange = (m: StoredMessage): boolean => {
        if (oldest !== undefined) {
          const c = compareTs(m.ts, oldest.includes('.') ? oldest : `${oldest}.000000`);
          if (c < 0 || (c === 0 && !inclusive)) return false;
        }
        if (latest !== undefined) {
          const c = compareTs(m.ts, latest.includes('.') ? latest : `${latest}.000000`);
          if (c > 0 || (c === 0 && !inclusive)) return false;
        }
        return true;
      };
      const rootJson = root.deleted
        ? {
            type: 'message',
            subtype: 'tombstone',
            text: 'This message was deleted.',
            user: 'USLACKBOT',
            ts: root.ts,
          }
        : ws.messageJson(root, withMetadata);
      const all = [rootJson, ...replies.filter(inRange).map((m) => ws.messageJson(m, withMetadata))];
      let start = 0;
      const cursor = str(args, 'cursor');
      if (cursor) {
        const decoded = Buffer.from(cursor, 'base64').toString('utf8');
        const m = /^next_ts:(\d+)$/.exec(decoded);
        if (!m?.[1]) throw new SlackRefusal('invalid_cursor');
        const after = BigInt(m[1]);
        start = all.findIndex((x) => tsToMicros(String(x.ts)) >= after);
        if (start < 0) start = all.length;
      }
      const askedLimit = Number(str(args, 'limit') ?? ws.repliesMaxLimit);
      const limit = Math.max(
        1,
        Math.min(Number.isFinite(askedLimit) ? askedLimit : 1000, ws.repliesMaxLimit),
      );
      const page = all.slice(start, start + limit);
      const nextItem = all[start + limit];
      const hasMore = nextItem !== undefined;
      return {
        messages: page,
        has_more: hasMore,
        ...(hasMore
          ? {
              response_metadata: {
                next_cursor: Buffer.from(`next_ts:${tsToMicros(String(nextItem.ts))}`).toString('base64'),
              },
            }
          : {}),
      };
    },

    // conversations.history (addition): docs.slack.dev/reference/methods/conversations.history — the
    // channel's own messages (thread replies are not in it, their roots are), newest first; `oldest` and
    // `latest` bound it (exclusive unless `inclusive`), `limit` defaults to 100 and is capped at 999, and
    // the cursor continues with older messages.
    'conversations.history': (args) => {
      const channel = ws.checkChannel(args);
      const withMetadata = flag(args, 'include_all_metadata');
      const inclusive = flag(args, 'inclusive');
      const bound = (v: string | undefined): string | undefined =>
        v === undefined ? undefined : v.includes('.') ? v : `${v}.000000`;
      const oldest = bound(str(args, 'oldest'));
      const latest = bound(str(args, 'latest'));
      const all = (ws.store.get(channel) ?? [])
        .filter((m) => !m.deleted && (m.threadTs === undefined || m.threadTs === m.ts))
        .filter((m) => {
          if (oldest !== undefined) {
            const c = compareTs(m.ts, oldest);
            if (c < 0 || (c === 0 && !inclusive)) return false;
          }
          if (latest !== undefined) {
            const c = compareTs(m.ts, latest);
            if (c > 0 || (c === 0 && !inclusive)) return false;
          }
          return true;
        })
        .sort((a, b) => compareTs(b.ts, a.ts));
      let start = 0;
      const cursor = str(args, 'cursor');
      if (cursor) {
        const m = /^next_ts:(\d+)$/.exec(Buffer.from(cursor, 'base64').toString('utf8'));
        if (!m?.[1]) throw new SlackRefusal('invalid_cursor');
        const before = BigInt(m[1]);
        start = all.findIndex((x) => tsToMicros(x.ts) <= before);
        if (start < 0) start = all.length;
      }
      const asked = Number(str(args, 'limit') ?? 100);
      const limit = Math.max(1, Math.min(Number.isFinite(asked) ? asked : 100, 999));
      const page = all.slice(start, start + limit);
      const next = all[start + limit];
      return {
        messages: page.map((m) => ws.messageJson(m, withMetadata)),
        has_more: next !== undefined,
        ...(next === undefined
          ? {}
          : {
              response_metadata: {
                next_cursor: Buffer.from(`next_ts:${tsToMicros(next.ts)}`).toString('base64'),
              },
            }),
      };
    },

    'conversations.info': (args) => {
      const channel = ws.checkChannel(args);
      const isIm = channel.startsWith('D');
      const isPrivate = channel.startsWith('G');
      return {
        channel: {
          id: channel,
          ...(isIm ? {} : { name: channel.toLowerCase() }),
          is_channel: !isIm && !isPrivate,
          is_group: isPrivate,
          is_im: isIm,
          is_mpim: false,
          is_private: isIm || isPrivate,
          is_archived: false,
          is_member: true,
          is_ext_shared: false,
          context_team_id: ws.teamId,
          created: Math.floor(ws.clock() / 1000),
        },
      };
    },
  };
}
