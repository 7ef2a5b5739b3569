import { flag, SlackRefusal, str } from '../values.js';
import type { Handler, Workspace } from '../workspace.js';

/** auth.test, users.info, usergroups.users.list: who the app, the people and the groups are. */
export function directoryMethods(ws: Workspace): Record<string, Handler> {
  return {
    'auth.test': () => ({
      url: `https://${ws.teamName.toLowerCase().replace(/[^a-z0-9]+/g, '-')}.slack.com/`,
      team: ws.teamName,
      user: ws.users.get(ws.botUserId)?.name ?? 'kourier',
      team_id: ws.teamId,
      user_id: ws.botUserId,
      bot_id: ws.botId,
      app_id: ws.appId,
      is_enterprise_install: false,
    }),

    'users.info': (args) => {
      const id = str(args, 'user');
      const u = id !== undefined ? ws.users.get(id) : undefined;
      if (!u) throw new SlackRefusal('user_not_found');
      const profile: Record<string, unknown> = {
        real_name: u.realName ?? u.name,
        display_name: u.name,
        ...(u.email !== undefined ? { email: u.email } : {}),
      };
      return {
        user: {
          id: u.id,
          team_id: ws.teamId,
          name: u.name,
          real_name: u.realName ?? u.name,
          deleted: u.deleted ?? false,
          is_bot: u.isBot ?? false,
          is_app_user: false,
          profile,
        },
      };
    },

    'usergroups.users.list': (args) => {
      const id = str(args, 'usergroup');
      const g = id !== undefined ? ws.groups.get(id) : undefined;
      // Assumed: a disabled group is invisible unless include_disabled is passed.
      if (!g || (g.disabled && !flag(args, 'include_disabled'))) throw new SlackRefusal('no_such_subteam');
      return { users: [...g.users] };
    },
  };
}
