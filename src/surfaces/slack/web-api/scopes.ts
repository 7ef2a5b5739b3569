/**
 * What the surface asks of Slack, for the app manifest (manifests/slack-app.yaml) to ask for
 * exactly that: the bot scope each Web API method and event subscription needs
 * (docs.slack.dev/reference/methods/*, docs.slack.dev/reference/events/*). A test holds the
 * manifest, this list and the calls in client.ts together.
 */

export const METHOD_SCOPES: Readonly<Record<string, string | null>> = {
  'auth.test': null,
  'chat.postMessage': 'chat:write',
  'chat.update': 'chat:write',
  'chat.delete': 'chat:write',
  'chat.postEphemeral': 'chat:write',
  'chat.startStream': 'chat:write',
  'chat.appendStream': 'chat:write',
  'chat.stopStream': 'chat:write',
  'reactions.add': 'reactions:write',
  'reactions.remove': 'reactions:write',
  'users.info': 'users:read',
  // Who may approve a tool call: the members of the Binding's approverGroups (Q-5).
  'usergroups.users.list': 'usergroups:read',
  // The modal that asks a denial's reason, or an answer to the agent's question.
  'views.open': null,
  // Public channels, private channels and DMs: history of each kind of conversation.
  'conversations.replies': 'channels:history',
  // A trigger's thread root, looked for after a crash before it is posted again.
  'conversations.history': 'channels:history',
  // An agent session's status and title (the stop button shows while it is processing).
  'agents.sessions.setStatus': 'chat:write',
  'agents.sessions.rename': 'chat:write',
  // A DM's suggested prompts, from the agent card's skills.
  'assistant.threads.setSuggestedPrompts': 'assistant:write',
  // Who may stop a task: the members of the thread's channel.
  'conversations.members': 'channels:read',
};

/** Scopes a method needs beyond its own, depending on where it is used. */
export const EXTRA_SCOPES: readonly string[] = [
  // users.info returns profile.email only with it: the label line names the person's email.
  'users:read.email',
  // conversations.replies and conversations.history in private channels and DMs.
  'groups:history',
  'im:history',
  // conversations.members of private channels, DMs and group DMs.
  'groups:read',
  'im:read',
  'mpim:read',
];

export const EVENT_SCOPES: Readonly<Record<string, string | null>> = {
  app_mention: 'app_mentions:read',
  'message.channels': 'channels:history',
  'message.groups': 'groups:history',
  'message.im': 'im:history',
  // The stop button of an agent session.
  agent_session_stopped: 'chat:write',
  // A person opened the app's Messages tab: the DM's suggested prompts.
  app_home_opened: null,
  // A person deactivated in the workspace: their data is erased (inbound/departures.ts).
  user_change: 'users:read',
};

/**
 * Events that need no scope but must be subscribed: with several workspaces (OAuth), an
 * uninstall and a revoked bot token remove the workspace's installation and stop its sessions.
 */
export const SCOPELESS_EVENTS: readonly string[] = ['app_uninstalled', 'tokens_revoked'];

export function requiredScopes(): string[] {
  const scopes = new Set<string>(EXTRA_SCOPES);
  for (const scope of Object.values(METHOD_SCOPES)) if (scope !== null) scopes.add(scope);
  for (const scope of Object.values(EVENT_SCOPES)) if (scope !== null) scopes.add(scope);
  return [...scopes].sort();
}
