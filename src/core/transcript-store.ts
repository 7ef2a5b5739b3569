/**
 * What a chat surface that keeps no history of its own (the web chat) showed in each thread,
 * kept in the engine's database so the thread list and each thread's messages come back after
 * a restart. Slack keeps its own history and does not use this.
 *
 * The store keeps each message as the surface's own JSON (`body`), opaque to it: the surface
 * owns that format and reads it back. Every key carries the surface and the workspace.
 */

export interface TranscriptScope {
  /** 'webchat', … */
  surface: string;
  /** 'local' for the web chat. */
  workspaceId: string;
}

export interface TranscriptThread {
  threadId: string;
  /** The Binding that owns the thread, 'namespace/name'. */
  binding: string;
  title: string;
  createdAt: number;
  updatedAt: number;
}

export interface TranscriptMessage {
  threadId: string;
  /** Position in the thread, from 1: a message is written again under the same seq as it changes. */
  seq: number;
  /** The surface's JSON of the message. */
  body: string;
  updatedAt: number;
}

/** One write: threads and messages upserted together, all or nothing. */
export interface TranscriptWrite {
  scope: TranscriptScope;
  threads: readonly TranscriptThread[];
  messages: readonly TranscriptMessage[];
  /** Only this many of a thread's newest messages are kept; older ones are deleted by the write. */
  keepPerThread: number;
}

export interface TranscriptLimits {
  /** The newest threads (by last change) read back. */
  threads: number;
  /** The newest messages of each thread read back. */
  messagesPerThread: number;
}

export interface StoredTranscript {
  thread: TranscriptThread;
  /** In seq order. */
  messages: TranscriptMessage[];
}

export interface TranscriptStore {
  saveTranscript(write: TranscriptWrite): Promise<void>;
  /** Newest thread first. */
  loadTranscripts(scope: TranscriptScope, limits: TranscriptLimits): Promise<StoredTranscript[]>;
}
