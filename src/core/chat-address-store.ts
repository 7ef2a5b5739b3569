/**
 * The chat address port: how a surface reaches a conversation again, long after the message
 * that showed it the way. A surface whose platform hands it the way back with each inbound
 * activity (Microsoft Teams: the service URL, the conversation and the bot, together a
 * conversation reference) keeps it here, so an answer after a restart, an alert's thread and a
 * proactive message all find the conversation. Keyed by surface, workspace (a tenant) and
 * conversation; `groupId` is what the conversation belongs to (a team), so removing the app
 * from it removes all its conversations at once. The address itself is opaque to the store.
 * The store implements it (src/store/chat-address-rows.ts holds its SQL).
 */

export interface ChatAddressRow {
  surface: string;
  workspaceId: string;
  conversationId: string;
  /** The group the conversation is in (a team), or null (a personal or group chat). */
  groupId: string | null;
  /** The surface's own record of the way back, as it wrote it. */
  address: string;
  /**
   * The thread new messages of the conversation belong to now, when the surface moved it (a
   * "new" command in a chat that is one thread); null: the conversation's first.
   */
  threadId: string | null;
  updatedAt: number;
}

export interface ChatAddressRows {
  /** Writes the address (and group), keeping the row's thread: an upsert. */
  put(row: Omit<ChatAddressRow, 'threadId'>): Promise<void>;
  get(surface: string, workspaceId: string, conversationId: string): Promise<ChatAddressRow | undefined>;
  /** Moves the conversation to a new thread; false when the conversation has no row. */
  setThread(surface: string, workspaceId: string, conversationId: string, threadId: string): Promise<boolean>;
  /** Removes one conversation's row; false when there was none. */
  delete(surface: string, workspaceId: string, conversationId: string): Promise<boolean>;
  /** Removes every conversation of a group (the app removed from a team): how many went. */
  deleteGroup(surface: string, workspaceId: string, groupId: string): Promise<number>;
}
