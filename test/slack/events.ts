/** The signed Slack traffic of the tests lives in testkit/slack/events.ts, shared with the bench. */
export * from '../../testkit/slack/events.js';
