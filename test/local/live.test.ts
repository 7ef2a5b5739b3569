import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { LiveRegistry } from '../../src/core/registry.js';
import { type DemoAgent, startDemoAgent } from '../../src/demo/demo-agent.js';
import {
  LocalFileError,
  LocalManifestError,
  type LocalManifestsHandle,
  type ReloadOutcome,
  startLocalManifests,
} from '../../src/local/index.js';
import { answerText, collect, lastState } from '../helpers/stream.js';
import { type ContractAgent, startContractAgent } from '../peers/contract-agent/contract-agent.js';

const logger = pino({ level: 'silent' });
const EXAMPLE = fileURLToPath(new URL('../../examples/local.yaml', import.meta.url));

function backendDoc(url: string, namespace = 'default'): string {
  return `apiVersion: agentkourier.dev/v1alpha1
kind: AgentBackend
metadata: {name: agents, namespace: ${namespace}}
spec: {dialect: a2a, url: "${url}"}
`;
}

function bindingDoc(name: string, identity = 'userId: U1', namespace = 'default'): string {
  return `apiVersion: agentkourier.dev/v1alpha1
kind: Binding
metadata: {name: ${name}, namespace: ${namespace}}
spec:
  backendRef: {name: agents}
  identity: {${identity}}
`;
}

function secretDoc(namespace: string, token: string): string {
  return `apiVersion: v1
kind: Secret
metadata: {name: tok, namespace: ${namespace}}
stringData: {token: ${token}}
`;
}

const file = (...docs: string[]): string => docs.join('---\n');

function cardReads(agent: ContractAgent): Array<string | string[] | undefined> {
  return agent.requests
    .filter((r) => r.httpMethod === 'GET' && r.path.endsWith('/.well-known/agent-card.json'))
    .map((r) => r.headers.authorization ?? r.headers['x-user-id']);
}

describe('local mode: the example file and the demo agent', () => {
  let demo: DemoAgent;
  let local: LocalManifestsHandle | undefined;
  beforeAll(async () => {
    demo = await startDemoAgent({ chunkDelayMs: 0 });
  });
  afterAll(async () => {
    await local?.close();
    await demo.close();
  });

  it('examples/local.yaml binds the demo agent, ready, and a turn goes through the registry', async () => {
    const registry = new LiveRegistry();
    local = await startLocalManifests({
      file: EXAMPLE,
      registry,
      logger,
      demoAgentUrl: demo.url,
      watch: false,
    });
    await local.idle();
    const [status] = local.bindings();
    expect(status).toMatchObject({
      ref: 'default/demo',
      ready: true,
      reason: 'Ready',
      backend: { name: 'demo', dialect: 'kagent-v1', endpoint: demo.endpoint },
      card: { protocolVersion: '1.0', streaming: true },
    });
    expect(status?.conditions.map((c) => `${c.type}=${c.status}`)).toEqual([
      'Ready=True',
      'BackendResolved=True',
      'CredentialsResolved=True',
      'CardAccepted=True',
      'ChannelsAssigned=True',
    ]);

    const live = registry.get('default/demo');
    if (live === undefined) throw new Error('the demo Binding is not in the registry');
    expect(live.dialect.name).toBe('kagent-v1');
    expect(live.settings).toEqual({ questionTimeoutMs: 600_000 });
    expect(live.toolApprovals).toEqual({ enabled: true, approverGroups: [], approvers: [] });
    const events = await collect(
      live.client.sendStreamingMessage({ messageId: 'local-1', text: 'hello local' }),
    );
    expect(lastState(events)).toBe('completed');
    expect(answerText(events)).toContain('hello local');
  });
});

describe('local mode: reading, tenancy and reloading', () => {
  let dir: string;
  let path: string;
  let agent1: ContractAgent;
  let agent2: ContractAgent;
  const handles: LocalManifestsHandle[] = [];
  beforeAll(async () => {
    agent1 = await startContractAgent({ version: '1.0' });
    agent2 = await startContractAgent({ version: '1.0' });
  });
  afterAll(async () => {
    await Promise.all([agent1.close(), agent2.close()]);
  });
  afterEach(async () => {
    await Promise.all(handles.splice(0).map((h) => h.close()));
    await rm(dir, { recursive: true, force: true });
  });
  const start = async (
    text: string,
    options: { watch?: boolean; onReload?: (o: ReloadOutcome) => void } = {},
  ) => {
    dir = await mkdtemp(join(tmpdir(), 'kourier-local-'));
    path = join(dir, 'local.yaml');
    await writeFile(path, text);
    const registry = new LiveRegistry();
    const local = await startLocalManifests({
      file: path,
      registry,
      logger,
      debounceMs: 20,
      watch: options.watch ?? false,
      ...(options.onReload === undefined ? {} : { onReload: options.onReload }),
    });
    handles.push(local);
    return { registry, local };
  };

  it('fails at start on an invalid file, naming the file, document and field', async () => {
    dir = await mkdtemp(join(tmpdir(), 'kourier-local-'));
    path = join(dir, 'bad.yaml');
    await writeFile(path, file(backendDoc('ftp://nowhere'), bindingDoc('one')));
    const started = startLocalManifests({ file: path, registry: new LiveRegistry(), logger, watch: false });
    await expect(started).rejects.toBeInstanceOf(LocalManifestError);
    await expect(started).rejects.toThrow(
      `${path}: document 1 (AgentBackend default/agents): spec.url: must be an http or https URL`,
    );
    const missing = startLocalManifests({
      file: join(dir, 'nope.yaml'),
      registry: new LiveRegistry(),
      logger,
    });
    await expect(missing).rejects.toBeInstanceOf(LocalFileError);
    await expect(missing).rejects.toThrow(/nope\.yaml: cannot be read \(ENOENT\)/);
  });

  it('reads a Binding’s Secrets in its own namespace only', async () => {
    const elsewhere = file(
      backendDoc(agent1.endpoint, 'team-a'),
      bindingDoc('chat', 'tokenSecretRef: {name: tok, key: token}', 'team-a'),
      secretDoc('team-b', 'from-b'),
    );
    const { registry, local } = await start(elsewhere);
    await local.idle();
    expect(local.bindings()).toEqual([
      expect.objectContaining({
        ref: 'team-a/chat',
        ready: false,
        reason: 'SecretNotFound',
        message: 'identity.tokenSecretRef: Secret "tok" not found',
      }),
    ]);
    expect(registry.get('team-a/chat')).toBeUndefined();
    const before = cardReads(agent1).length;

    await writeFile(path, `${elsewhere}---\n${secretDoc('team-a', 'from-a')}`);
    await local.reload();
    await local.idle();
    expect(local.bindings()[0]).toMatchObject({ ready: true, reason: 'Ready' });
    expect(registry.get('team-a/chat')).toBeDefined();
    expect(cardReads(agent1).slice(before)).toEqual(['Bearer from-a']);
  });

  it('spec.slack.feedback.toAgent reaches the registry’s Slack routing; a wrong type names the field', async () => {
    const withFeedback = (value: string): string =>
      `${bindingDoc('one')}  slack: {channels: [C1AAA], feedback: {toAgent: ${value}}}\n`;
    const { registry } = await start(
      file(backendDoc(agent1.endpoint), withFeedback('true'), bindingDoc('two')),
    );
    expect(registry.get('default/one')?.routes.slack?.feedbackToAgent).toBe(true);
    expect(registry.get('default/two')?.routes.slack?.feedbackToAgent).toBeUndefined();
    await writeFile(path, file(backendDoc(agent1.endpoint), withFeedback('"yes"')));
    const bad = startLocalManifests({ file: path, registry: new LiveRegistry(), logger, watch: false });
    await expect(bad).rejects.toBeInstanceOf(LocalManifestError);
    await expect(bad).rejects.toThrow(/spec\.slack\.feedback\.toAgent/);
  });

  it('reload() rejects a bad file and keeps the last good configuration', async () => {
    const { registry, local } = await start(file(backendDoc(agent1.endpoint), bindingDoc('one')));
    await writeFile(path, file(backendDoc(agent1.endpoint), bindingDoc('one', 'userId: ""')));
    await expect(local.reload()).rejects.toThrow(
      /document 2 \(Binding default\/one\): spec\.identity\.userId: /,
    );
    expect(registry.get('default/one')).toBeDefined();
    expect(local.bindings().map((b) => b.ref)).toEqual(['default/one']);
  });

  it('reloads on edit: adds, reconfigures, removes, survives a broken edit and a replace by rename', async () => {
    const outcomes: ReloadOutcome[] = [];
    const { registry, local } = await start(file(backendDoc(agent1.endpoint), bindingDoc('one')), {
      watch: true,
      onReload: (o) => outcomes.push(o),
    });
    await local.idle();
    expect(local.bindings()).toEqual([expect.objectContaining({ ref: 'default/one', ready: true })]);
    const client = registry.get('default/one')?.client;
    expect(client).toBeDefined();
    expect(cardReads(agent1)).toContain('U1');

    // A new Binding appears.
    await writeFile(path, file(backendDoc(agent1.endpoint), bindingDoc('one'), bindingDoc('two')));
    await vi.waitFor(() => expect(registry.get('default/two')).toBeDefined());

    // A new URL reconfigures the same client, which reads the new agent's card.
    const reads2 = cardReads(agent2).length;
    await writeFile(path, file(backendDoc(agent2.endpoint), bindingDoc('one'), bindingDoc('two')));
    await vi.waitFor(() => expect(cardReads(agent2).length).toBeGreaterThanOrEqual(reads2 + 2));
    expect(registry.get('default/one')?.client).toBe(client);
    await local.idle();
    expect(local.bindings().map((b) => [b.ref, b.ready, b.backend?.endpoint])).toEqual([
      ['default/one', true, agent2.endpoint],
      ['default/two', true, agent2.endpoint],
    ]);

    // A Binding removed from the file leaves the registry.
    await writeFile(path, file(backendDoc(agent2.endpoint), bindingDoc('one')));
    await vi.waitFor(() => expect(registry.get('default/two')).toBeUndefined());
    expect(local.bindings().map((b) => b.ref)).toEqual(['default/one']);

    // A broken edit is reported and changes nothing.
    outcomes.length = 0;
    await writeFile(path, file(backendDoc(agent1.endpoint), bindingDoc('one'), 'kind: Binding\n'));
    await vi.waitFor(() => expect(outcomes.some((o) => !o.ok)).toBe(true));
    const failed = outcomes.find((o) => !o.ok);
    expect(failed?.ok === false && failed.error.message).toMatch(/document 3: apiVersion: must be set/);
    expect(registry.list().map((b) => b.ref)).toEqual(['default/one']);
    expect(local.bindings()[0]?.backend?.endpoint).toBe(agent2.endpoint);

    // An empty file mid-save is not taken for "no Bindings".
    outcomes.length = 0;
    await writeFile(path, '');
    await vi.waitFor(() => expect(outcomes).toEqual([{ ok: true, changed: false, bindings: 1 }]));
    expect(registry.list().map((b) => b.ref)).toEqual(['default/one']);

    // An editor that writes a new file and renames it over the old one.
    const temp = join(dir, '.local.yaml.swp');
    await writeFile(temp, file(backendDoc(agent2.endpoint), bindingDoc('one'), bindingDoc('three')));
    await rename(temp, path);
    await vi.waitFor(() => expect(registry.get('default/three')).toBeDefined());

    // And the watch still works on the replaced file.
    await writeFile(path, file(backendDoc(agent2.endpoint), bindingDoc('three')));
    await vi.waitFor(() => expect(registry.get('default/one')).toBeUndefined());
  });
});
