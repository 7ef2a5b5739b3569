import { validateBlocks, validateMetadata } from '../block-kit.js';
import { clone, SlackRefusal, type StoredMessage, str } from '../values.js';
import type { Handler, Workspace } from '../workspace.js';

/** chat.startStream, chat.appendStream, chat.stopStream: an answer streamed into one message. */
export function streamMethods(ws: Workspace): Record<string, Handler> {
  return {
    'chat.startStream': (args) => {
      const channel = ws.checkChannel(args);
      const rawThread = str(args, 'thread_ts');
      if (!rawThread)
        throw new SlackRefusal('invalid_arguments', ['[ERROR] missing required field: thread_ts']);
      const threadTs = ws.resolveThread(channel, args);
      const recipientUserId = str(args, 'recipient_user_id');
      const recipientTeamId = str(args, 'recipient_team_id');
      if (!channel.startsWith('D')) {
        // Required outside DMs (chat.startStream: missing_recipient_user_id / missing_recipient_team_id).
        if (!recipientUserId) throw new SlackRefusal('missing_recipient_user_id');
        if (!recipientTeamId) throw new SlackRefusal('missing_recipient_team_id');
      }
      if (recipientTeamId !== undefined && recipientTeamId !== ws.teamId)
        throw new SlackRefusal('team_not_found');
      if (recipientUserId !== undefined && !ws.users.has(recipientUserId))
        throw new SlackRefusal('user_not_found');
      const added = ws.readStreamText(args);
      const msg: StoredMessage = {
        channel,
        ts: ws.nextTs(),
        user: ws.botUserId,
        botId: ws.botId,
        appId: ws.appId,
        text: added.text,
        streaming: true,
        streamState: 'streaming',
        edits: 0,
        ...(threadTs !== undefined ? { threadTs } : {}),
        ...(added.other.length > 0 ? { chunks: added.other } : {}),
        ...(recipientUserId !== undefined ? { recipientUserId } : {}),
        ...(recipientTeamId !== undefined ? { recipientTeamId } : {}),
      };
      ws.insert(msg);
      return { channel, ts: msg.ts };
    },

    'chat.appendStream': (args) => {
      const m = ws.streamTarget(args, 'stopped_by_user');
      const added = ws.readStreamText(args);
      if (added.text === '' && added.other.length === 0) throw new SlackRefusal('no_text');
      m.text += added.text;
      if (added.other.length > 0) m.chunks = [...(m.chunks ?? []), ...added.other];
      m.edits += 1;
      return { channel: m.channel, ts: m.ts };
    },

    'chat.stopStream': (args) => {
      const m = ws.streamTarget(args);
      const added = ws.readStreamText(args);
      const blocks =
        args.blocks !== undefined
          ? validateBlocks(args.blocks, 'msg_blocks_too_many', ws.blocksTextLimit)
          : undefined;
      const metadata = args.metadata !== undefined ? validateMetadata(args.metadata) : undefined;
      const sessionStatus = str(args, 'session_status');
      if (sessionStatus !== undefined)
        ws.setSessionStatus(m.channel, m.threadTs ?? m.ts, sessionStatus, 'chat.stopStream');
      m.text += added.text;
      if (added.other.length > 0) m.chunks = [...(m.chunks ?? []), ...added.other];
      if (blocks && blocks.length > 0) m.blocks = [...(m.blocks ?? []), ...clone(blocks)];
      if (metadata) m.metadata = metadata;
      m.streaming = false;
      m.streamState = 'stopped';
      return { channel: m.channel, ts: m.ts, message: ws.messageJson(m, false) };
    },
  };
}
