import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LocalManifestError } from '../../src/local/errors.js';
import { DEMO_AGENT_URL_PLACEHOLDER as DEMO } from '../../src/local/local-rules.js';
import { parseManifests, secretLookup } from '../../src/local/manifests.js';

const FILE = 'test.yaml';
const NO_DEMO = { demoAgentUrl: undefined };

const BACKEND = `apiVersion: agentkourier.dev/v1alpha1
kind: AgentBackend
metadata:
  name: agents
spec:
  dialect: a2a
  url: http://127.0.0.1:9/a2a
`;

function binding(spec: string, meta = 'name: chat'): string {
  return `apiVersion: agentkourier.dev/v1alpha1
kind: Binding
metadata:
  ${meta}
spec:
  backendRef:
    name: agents
${spec}`;
}

const USER = '  identity:\n    userId: U1\n';

/** The error a bad file gives, with its message lines. */
function problemsOf(text: string, options = NO_DEMO): { error: LocalManifestError; lines: string[] } {
  try {
    parseManifests(text, FILE, options);
  } catch (error) {
    if (error instanceof LocalManifestError) return { error, lines: error.message.split('\n') };
    throw error;
  }
  throw new Error('expected the file to be refused');
}

describe('local manifests: parsing and validation', () => {
  it(`reads examples/local.yaml, putting the demo agent URL in place of ${DEMO}`, () => {
    const text = readFileSync(new URL('../../examples/local.yaml', import.meta.url), 'utf8');
    const m = parseManifests(text, 'examples/local.yaml', { demoAgentUrl: 'http://127.0.0.1:4567/' });
    expect([...m.backends.values()].map((b) => [b.metadata.namespace, b.spec.dialect, b.spec.url])).toEqual([
      ['default', 'kagent-v1', 'http://127.0.0.1:4567'],
    ]);
    expect(m.bindings).toHaveLength(1);
    const [b] = m.bindings;
    expect(b?.metadata).toMatchObject({ name: 'demo', namespace: 'default' });
    expect(b?.spec.agent).toEqual({ namespace: 'demo', name: 'assistant' });
    expect(b?.spec.identity).toEqual({ userId: 'local-user' });
    // Enabled with no approver groups: local mode's one relaxation of the CRD rules.
    expect(b?.spec.interactions).toEqual({
      questionTimeout: '10m',
      toolApprovals: { enabled: true, approverGroups: [], approvers: [] },
    });
  });

  it(`refuses ${DEMO} when no demo agent runs, naming the field`, () => {
    const text = readFileSync(new URL('../../examples/local.yaml', import.meta.url), 'utf8');
    const { lines } = problemsOf(text);
    expect(lines).toEqual([
      `test.yaml: document 1 (AgentBackend default/demo): spec.url: ${DEMO} stands for the built-in demo agent, which is not running`,
    ]);
  });

  it('defaults metadata.namespace to "default" and keeps an explicit one', () => {
    const m = parseManifests(
      `${BACKEND}---\n${binding(USER, 'name: chat\n  namespace: team-a')}`,
      FILE,
      NO_DEMO,
    );
    expect(m.backends.get('default/agents')?.metadata.namespace).toBe('default');
    expect(m.bindings[0]?.metadata.namespace).toBe('team-a');
  });

  it('names the file, the document, its kind and name, and the field path of a CRD rule', () => {
    const spec = '  identity:\n    userId: U1\n    tokenSecretRef:\n      name: tok\n      key: token\n';
    const { error, lines } = problemsOf(`${BACKEND}---\n${binding(spec)}`);
    expect(lines).toEqual([
      'test.yaml: document 2 (Binding default/chat): spec.identity: exactly one of tokenSecretRef, userId and perPerson must be set',
    ]);
    expect(error.problems).toEqual([
      {
        document: 2,
        object: 'Binding default/chat',
        path: 'spec.identity',
        message: 'exactly one of tokenSecretRef, userId and perPerson must be set',
      },
    ]);
    expect(error.code).toBe('local_manifest_invalid');
  });

  it('gives list positions in the path, and every problem of every document', () => {
    const bad = binding(
      `${USER}  slack:\n    channels: [C123, general]\n  interactions:\n    questionTimeout: 2w\n`,
    );
    const badBackend = BACKEND.replace('dialect: a2a', 'dialect: grpc');
    const { lines } = problemsOf(`${badBackend}---\n${bad}`);
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(/^test\.yaml: document 1 \(AgentBackend default\/agents\): spec\.dialect: /);
    expect(lines[1]).toBe(
      'test.yaml: document 2 (Binding default/chat): spec.slack.channels[1]: must be a Slack channel id (C… or G…)',
    );
    expect(lines[2]).toBe(
      'test.yaml: document 2 (Binding default/chat): spec.interactions.questionTimeout: must be a duration such as 10m, 1h30m or 90s',
    );
  });

  it('checks metadata names as the API server does', () => {
    const { lines } = problemsOf(binding(USER, 'name: Chat_1'));
    expect(lines).toEqual(['test.yaml: document 1 (Binding): metadata.name: must be a DNS-1123 subdomain']);
  });

  it('refuses unknown fields, as kubectl apply does', () => {
    const { lines } = problemsOf(binding(`${USER}  interactions:\n    questionTimout: 5m\n`));
    expect(lines).toEqual([
      'test.yaml: document 1 (Binding default/chat): spec.interactions.questionTimout: unknown field',
    ]);
  });

  it('refuses a Secret reference into another namespace (tenancy)', () => {
    const spec =
      '  identity:\n    tokenSecretRef:\n      name: tok\n      key: token\n      namespace: other\n';
    const { error } = problemsOf(binding(spec));
    expect(error.problems).toEqual([
      {
        document: 1,
        object: 'Binding default/chat',
        path: 'spec.identity.tokenSecretRef.namespace',
        message:
          'a reference names an object in the resource’s own namespace only; it cannot name another namespace',
      },
    ]);
  });

  it('resolves Secrets in the asking namespace only', () => {
    const secret =
      'apiVersion: v1\nkind: Secret\nmetadata:\n  name: tok\n  namespace: other\nstringData:\n  token: s3cret\n';
    const m = parseManifests(secret, FILE, NO_DEMO);
    expect(secretLookup(m, 'team-a')('tok')).toEqual({ kind: 'missing' });
    expect(secretLookup(m, 'other')('tok')).toEqual({ kind: 'found', data: new Map([['token', 's3cret']]) });
  });

  it('reads Secret data as base64 and stringData as text (stringData wins), trimmed', () => {
    const secret = `apiVersion: v1
kind: Secret
metadata:
  name: tok
type: Opaque
data:
  token: ${Buffer.from('from-data\n').toString('base64')}
  other: ${Buffer.from('x').toString('base64')}
stringData:
  other: " from-string "
`;
    const m = parseManifests(secret, FILE, NO_DEMO);
    expect(m.secrets.get('default/tok')).toEqual(
      new Map([
        ['token', 'from-data'],
        ['other', 'from-string'],
      ]),
    );
  });

  it('refuses Secret data that is not base64', () => {
    const { lines } = problemsOf(
      'apiVersion: v1\nkind: Secret\nmetadata:\n  name: tok\ndata:\n  token: not base64!\n',
    );
    expect(lines).toEqual([
      'test.yaml: document 1 (Secret default/tok): data.token: must be base64 (use stringData for plain text)',
    ]);
  });

  it('refuses unknown kinds and wrong apiVersions clearly', () => {
    const { lines } = problemsOf(
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n---\napiVersion: v1\nkind: Binding\nmetadata:\n  name: y\n',
    );
    expect(lines).toEqual([
      'test.yaml: document 1: kind: unknown kind "ConfigMap" (apiVersion v1): local mode reads AgentBackend and Binding (agentkourier.dev/v1alpha1) and Secret (v1)',
      'test.yaml: document 2 (Binding default/y): apiVersion: Binding is agentkourier.dev/v1alpha1, not "v1"',
    ]);
  });

  it('refuses a document without kind, a list, a duplicate and broken YAML', () => {
    const { lines } = problemsOf(
      `${BACKEND}---\n- a\n- b\n---\nmetadata:\n  name: z\n---\n${BACKEND}---\nkind: [unclosed\n`,
    );
    expect(lines[0]).toBe(
      'test.yaml: document 2: must be a mapping (a Kubernetes object), not a list or a scalar',
    );
    expect(lines[1]).toMatch(/^test\.yaml: document 3: apiVersion: must be set/);
    expect(lines[3]).toBe('test.yaml: document 4 (AgentBackend default/agents): also defined by document 1');
    expect(lines[4]).toMatch(/^test\.yaml: document 5: YAML: /);
  });

  it('skips empty documents and ignores a status copied from the cluster', () => {
    const withStatus = `${BACKEND}status:\n  dialect: a2a\n  whatever: 1\n`;
    const m = parseManifests(`---\n# nothing here\n---\n${withStatus}---\n`, FILE, NO_DEMO);
    expect(m.backends.get('default/agents')?.status).toBeUndefined();
  });

  it('keeps approver groups when they are given', () => {
    const spec = `${USER}  interactions:\n    toolApprovals:\n      enabled: true\n      approverGroups: [S123]\n`;
    const m = parseManifests(binding(spec), FILE, NO_DEMO);
    expect(m.bindings[0]?.spec.interactions?.toolApprovals).toEqual({
      enabled: true,
      approverGroups: ['S123'],
      approvers: [],
    });
  });
});
