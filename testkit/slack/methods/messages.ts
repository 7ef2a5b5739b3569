import { validateBlocks, validateMetadata } from '../block-kit.js';
import { clone, SlackRefusal, type StoredMessage, str } from '../values.js';
import type { Handler, Workspace } from '../workspace.js';

/** chat.postMessage, chat.update, chat.delete, chat.postEphemeral and reactions.*: messages and what hangs on them. */
export function messageMethods(ws: Workspace): Record<string, Handler> {
  return {
    'chat.postMessage': (args, warnings) => {
      const channel = ws.checkChannel(args);
      const threadTs = ws.resolveThread(channel, args);
      const content = ws.readContent(args, true);
      warnings.push(...content.warnings);
      const blocks =
        args.blocks !== undefined
          ? validateBlocks(args.blocks, 'invalid_blocks', ws.blocksTextLimit)
          : undefined;
      const attachments = ws.readAttachments(args);
      const metadata = args.metadata !== undefined ? validateMetadata(args.metadata) : undefined;
      const msg: StoredMessage = {
        channel,
        ts: ws.nextTs(),
        user: ws.botUserId,
        botId: ws.botId,
        appId: ws.appId,
        text: content.text ?? '',
        streaming: false,
        edits: 0,
        ...(threadTs !== undefined ? { threadTs } : {}),
        ...(blocks ? { blocks: clone(blocks) } : {}),
        ...(attachments ? { attachments } : {}),
        ...(metadata ? { metadata } : {}),
      };
      ws.insert(msg);
      return { channel, ts: msg.ts, message: ws.messageJson(msg, false) };
    },

    'chat.update': (args, warnings) => {
      const channel = ws.checkChannel(args);
      const ts = str(args, 'ts');
      const m = ts !== undefined ? ws.find(channel, ts) : undefined;
      if (!m || m.deleted) throw new SlackRefusal('message_not_found');
      if (!ws.isBotMessage(m)) throw new SlackRefusal('cant_update_message');
      if (m.streaming) throw new SlackRefusal('streaming_state_conflict');
      const content = ws.readContent(args, true);
      warnings.push(...content.warnings);
      const blocks =
        args.blocks !== undefined
          ? validateBlocks(args.blocks, 'invalid_blocks', ws.blocksTextLimit)
          : undefined;
      const attachments = ws.readAttachments(args);
      const metadata = args.metadata !== undefined ? validateMetadata(args.metadata) : undefined;
      m.text = content.text ?? '';
      // Omitted blocks/attachments/metadata are retained; `[]` / `{}` remove them (chat.update docs).
      if (blocks !== undefined) {
        if (blocks.length > 0) m.blocks = clone(blocks);
        else delete m.blocks;
      }
      if (attachments !== undefined) {
        if (attachments.length > 0) m.attachments = attachments;
        else delete m.attachments;
      }
      if (metadata === null) delete m.metadata;
      else if (metadata !== undefined) m.metadata = metadata;
      m.edits += 1;
      return { channel, ts: m.ts, text: m.text, message: ws.messageJson(m, false) };
    },

    'chat.delete': (args) => {
      const channel = ws.checkChannel(args);
      const ts = str(args, 'ts');
      const m = ts !== undefined ? ws.find(channel, ts) : undefined;
      if (!m || m.deleted) throw new SlackRefusal('message_not_found');
      if (!ws.isBotMessage(m)) throw new SlackRefusal('cant_delete_message');
      m.deleted = true;
      m.streaming = false;
      return { channel, ts: m.ts };
    },

    'chat.postEphemeral': (args, warnings) => {
      const channel = ws.checkChannel(args);
      const user = str(args, 'user');
      if (!user || !ws.isKnownMember(channel, user)) throw new SlackRefusal('user_not_in_channel');
      const threadTs = ws.resolveThread(channel, args);
      const content = ws.readContent(args, true);
      warnings.push(...content.warnings);
      const blocks =
        args.blocks !== undefined
          ? validateBlocks(args.blocks, 'invalid_blocks', ws.blocksTextLimit)
          : undefined;
      const ts = ws.nextTs();
      ws.ephemerals.push({
        channel,
        user,
        text: content.text ?? '',
        ts,
        ...(threadTs !== undefined ? { threadTs } : {}),
        ...(blocks ? { blocks: clone(blocks) } : {}),
      });
      return { message_ts: ts };
    },

    'reactions.add': (args) => {
      const { channel, ts, name } = ws.reactionTarget(args);
      if (ws.reactions.some((r) => r.channel === channel && r.ts === ts && r.name === name && !r.removed)) {
        throw new SlackRefusal('already_reacted');
      }
      ws.reactions.push({ channel, ts, name, removed: false });
      return {};
    },

    'reactions.remove': (args) => {
      const { channel, ts, name } = ws.reactionTarget(args);
      const r = ws.reactions.find(
        (x) => x.channel === channel && x.ts === ts && x.name === name && !x.removed,
      );
      if (!r) throw new SlackRefusal('no_reaction');
      r.removed = true;
      return {};
    },
  };
}
