import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { A2AClient } from '../../../src/a2a/client.js';
import { loadTeamsConfig } from '../../../src/config/teams.js';
import type { ApprovalAudit } from '../../../src/core/approval-audit.js';
import type { EngineEvent } from '../../../src/core/events.js';
import type { SignOut } from '../../../src/core/ports.js';
import type { ToolApprovalSettings } from '../../../src/core/registry.js';
import { LiveRegistry } from '../../../src/core/registry.js';
import { SessionEngine } from '../../../src/core/session/engine.js';
import type { EngineTimings } from '../../../src/core/session/timings.js';
import { a2aDialect } from '../../../src/dialects/a2a.js';
import { dialectSpec } from '../../../src/dialects/index.js';
import type { AssertionSigner } from '../../../src/identity/index.js';
import { SqliteStore } from '../../../src/store/sqlite/sqlite-store.js';
import { TeamsConnection } from '../../../src/surfaces/teams/index.js';
import { FakeBotConnector, type FakeConversation, type Member } from '../../../testkit/teams/connector.js';
import { type FakeEntra, startFakeEntra } from '../../../testkit/teams/entra.js';
import { FakeGraph } from '../../../testkit/teams/graph.js';
import { FAST_TIMINGS } from '../../helpers/engine-harness.js';
import { type ContractAgent, startContractAgent } from '../../peers/contract-agent/contract-agent.js';

/**
 * Everything real but Microsoft's services: Microsoft's Agents SDK inside the broker's Teams
 * surface (its token checks against the fake Entra's keys and issuer, set through the SDK's own
 * authority setting), the session engine on SQLite in memory, a Binding whose client is an
 * A2AClient to the contract test agent — and the fake Entra and Bot Connector (testkit/teams/).
 */

export const BINDING = 'team-a/support';

/** The person who writes in the tests' conversations, as Teams' roster knows her. */
export const ADA: Member = {
  id: '29:ada',
  name: 'Ada Lovelace',
  aadObjectId: 'aaaaaaaa-0000-4000-8000-00000000ada0',
  email: 'ada@example.com',
  userPrincipalName: 'ada@example.com',
};

export interface TeamsHarnessOptions {
  timings?: Partial<EngineTimings>;
  /** Teams' streaming limit in the fake (default two minutes). */
  streamLimitMs?: number;
  editPaceMs?: number;
  /** Another harness's store and agent (a restart keeps them). */
  store?: SqliteStore;
  agent?: ContractAgent;
  entra?: FakeEntra;
  connector?: FakeBotConnector;
  /** The Binding's dialect (default a2a); kagent-v1: the agent's card lists kagent's HITL extension. */
  dialect?: 'a2a' | 'kagent-v1';
  toolApprovals?: ToolApprovalSettings;
  /** The app authenticates with this certificate (registered at the fake Entra) instead of its secret. */
  certificate?: { certificateFile: string; keyFile: string; pem: string };
  /** The Binding's identity is per person, its assertions signed by this signer (docs/identity.md). */
  perPerson?: AssertionSigner;
  /** The "sign out" command's port (the identity's sign-in links). */
  signOut?: SignOut;
  /** The agent works on when its client goes away, as a real one does (a restart reattaches). */
  agentWorksOn?: boolean;
}

export interface TeamsHarness {
  entra: FakeEntra;
  connector: FakeBotConnector;
  graph: FakeGraph;
  audits: ApprovalAudit[];
  agent: ContractAgent;
  store: SqliteStore;
  engine: SessionEngine;
  teams: TeamsConnection;
  events: EngineEvent[];
  endpoint: string;
  tenantId: string;
  appId: string;
  ada: Member;
  personal: FakeConversation;
  channel: FakeConversation;
  logs: Array<Record<string, unknown>>;
  settled(turnCount: number, timeoutMs?: number): Promise<void>;
  waitFor(what: string, predicate: () => boolean, timeoutMs?: number): Promise<void>;
  close(o?: { keep?: boolean }): Promise<void>;
}

export async function startTeamsHarness(o: TeamsHarnessOptions = {}): Promise<TeamsHarness> {
  const appId = '11111111-2222-4333-8444-555555555555';
  const entra = o.entra ?? (await startFakeEntra());
  const tenantId = entra.tenantId;
  const graph = await new FakeGraph(entra).start();
  entra.register({
    clientId: appId,
    ...(o.certificate === undefined ? { secret: 'app-secret' } : { certificates: [o.certificate.pem] }),
    resources: ['https://api.botframework.com', graph.url],
  });
  const connector =
    o.connector ??
    (await new FakeBotConnector({
      entra,
      botId: appId,
      ...(o.streamLimitMs === undefined ? {} : { streamLimitMs: o.streamLimitMs }),
    }).start());
  const ada = ADA;
  const personal = connector.conversation({
    id: 'a:ada-personal',
    type: 'personal',
    tenantId,
    members: [ada],
  });
  const channel = connector.conversation({
    id: '19:support0channel@thread.tacv2',
    type: 'channel',
    tenantId,
    teamId: '19:team0general@thread.tacv2',
    members: [ada],
  });
  const kagent = o.dialect === 'kagent-v1';
  const agent =
    o.agent ??
    (await startContractAgent({
      version: '1.0',
      ...(o.agentWorksOn === true ? { workOn: true } : {}),
      ...(kagent ? { card: { extensions: [{ uri: dialectSpec('kagent-v1').extensions[0] ?? '' }] } } : {}),
    }));
  const store = o.store ?? new SqliteStore(':memory:');
  await store.migrate();
  const registry = new LiveRegistry();
  registry.upsert({
    ref: BINDING,
    client: new A2AClient({
      endpoint: agent.endpoint,
      identity:
        o.perPerson === undefined
          ? { kind: 'bearer', token: 'binding-token' }
          : {
              kind: 'person',
              audience: 'urn:test:teams-agent',
              header: 'Authorization',
              userIdHeader: false,
            },
      ...(o.perPerson === undefined ? {} : { assertions: o.perPerson.sourceFor(BINDING) }),
      timeouts: { headersMs: 10_000, streamIdleMs: 10_000 },
      ...(kagent ? { extensions: [...dialectSpec('kagent-v1').extensions] } : {}),
    }),
    dialect: kagent ? dialectSpec('kagent-v1').dialect : a2aDialect,
    settings: { questionTimeoutMs: null },
    routes: { teams: { channels: [channel.id], allowDirectMessages: true, workspaceId: tenantId } },
    toolApprovals: o.toolApprovals ?? { enabled: false, approverGroups: [], approvers: [] },
  });
  const logs: Array<Record<string, unknown>> = [];
  const logger = pino(
    { level: 'debug' },
    new Writable({
      write(chunk: Buffer, _enc, done) {
        for (const line of chunk.toString('utf8').split('\n')) if (line !== '') logs.push(JSON.parse(line));
        done();
      },
    }),
  );
  const config = loadTeamsConfig({
    TEAMS_APP_ID: appId,
    ...(o.certificate === undefined
      ? { TEAMS_APP_SECRET: 'app-secret' }
      : {
          TEAMS_APP_CERTIFICATE_FILE: o.certificate.certificateFile,
          TEAMS_APP_KEY_FILE: o.certificate.keyFile,
        }),
    TEAMS_APP_TENANT_ID: tenantId,
    TEAMS_TENANTS: tenantId,
    TEAMS_HOST: '127.0.0.1',
    TEAMS_PORT: '0',
    TEAMS_AUTHORITY: entra.url,
    TEAMS_SERVICE_URL_HOSTS: '127.0.0.1',
    TEAMS_GRAPH_URL: graph.url,
  });
  const audits: ApprovalAudit[] = [];
  const teams = new TeamsConnection({
    config,
    logger,
    bindings: registry,
    addresses: store.addresses(),
    audit: { record: (a) => audits.push(a) },
    editPaceMs: o.editPaceMs ?? 300,
  });
  const events: EngineEvent[] = [];
  const engine = new SessionEngine({
    store,
    registry,
    surface: teams.surface,
    events: { emit: (e) => events.push(e) },
    timings: { ...FAST_TIMINGS, ...o.timings },
  });
  await engine.start();
  await teams.listen({ inbound: engine, ...(o.signOut === undefined ? {} : { signOut: o.signOut }) });
  const waitFor = async (what: string, predicate: () => boolean, timeoutMs = 10_000): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  return {
    entra,
    connector,
    graph,
    audits,
    agent,
    store,
    engine,
    teams,
    events,
    endpoint: teams.url ?? '',
    tenantId,
    appId,
    ada,
    personal,
    channel,
    logs,
    waitFor,
    async settled(turnCount, timeoutMs = 15_000) {
      await waitFor(
        `${turnCount} settled turns`,
        () => events.filter((e) => e.type === 'turn.settled').length >= turnCount,
        timeoutMs,
      );
      await engine.idle();
    },
    async close(c = {}) {
      if (process.env.TEAMS_E2E_LOGS === '1')
        for (const line of logs) if (Number(line.level) >= 40) console.error(JSON.stringify(line));
      await teams.stop();
      await engine.stop();
      await graph.close();
      if (c.keep === true) return;
      await store.close();
      await agent.close();
      await connector.close();
      await entra.close();
    },
  };
}

export const newId = (): string => randomUUID();
