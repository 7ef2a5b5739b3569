/** The local web chat: a ChatSurface for the engine, and the HTTP server with its page and API. */
export type { BindingDirectory, BindingReadiness } from './api.js';
export { WebChatBuildError, WebChatRequestError } from './errors.js';
export { createWebChat, DEFAULT_ACTOR, type WebChat, type WebChatOptions } from './server.js';
export { WebChatSurface, type WebChatSurfaceOptions } from './surface.js';
export { WEBCHAT_SURFACE, WEBCHAT_WORKSPACE } from './threads.js';
export { WebChatTriggerThreads } from './trigger-threads.js';
export type * from './view.js';
