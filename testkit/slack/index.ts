/**
 * A stand-in for Slack's Web API on loopback, behind the real Bolt, its WebClient and the surface's own Web API
 * transport (./server.ts says what it enforces and where each rule comes from). Shared by the tests and the bench.
 */
export * from './api.js';
export { startFakeSlack } from './server.js';
