/**
 * A stand-in for Slack's Web API on loopback, behind the real Bolt, its WebClient and the surface's own Web API
 * transport, and for Socket Mode's WebSocket behind the real @slack/socket-mode client (./server.ts and
 * ./socket-mode.ts say what they enforce and where each rule comes from). Shared by the tests and the bench.
 */
export * from './api.js';
export { startFakeSlack } from './server.js';
export { SOCKET_LIMITS, SocketAckTimeoutError } from './socket-mode.js';
