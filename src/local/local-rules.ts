import { z } from 'zod';
import type { Binding } from '../control/crds/binding.js';

/**
 * The two places where a local file differs from what `kubectl apply` takes, both applied
 * before the CRD schema runs so everything else is validated exactly as in a cluster:
 *
 * - `${DEMO_AGENT_URL}` in an AgentBackend's spec.url stands for the built-in demo agent's base
 *   URL (its port is chosen at start), so examples/local.yaml works with no setup.
 * - Tool approvals may be enabled with no approverGroups or approvers. Those name Slack people, required
 *   in a cluster so someone specific approves; in local mode the person at the web chat is the
 *   approver. The CRD rule is met with a stand-in group that is removed again after parsing.
 */

// biome-ignore lint/suspicious/noTemplateCurlyInString: the literal text written in the YAML file
export const DEMO_AGENT_URL_PLACEHOLDER = '${DEMO_AGENT_URL}';

/** Satisfies the CRD's "approverGroups must name a group" rule; never reaches the registry. */
const STAND_IN_GROUP = 'SLOCALMODE';

export interface LocalAdaptation {
  /** The document as the CRD schema should see it. */
  input: Record<string, unknown>;
  problems: Array<{ path: string; message: string }>;
  /** Undoes, on the parsed Binding, what was only there to pass the CRD schema. */
  restoreBinding: (b: Binding) => Binding;
}

const withUrl = z.looseObject({ spec: z.looseObject({ url: z.string() }) });

const openApprovals = z.looseObject({
  spec: z.looseObject({
    interactions: z.looseObject({
      toolApprovals: z.looseObject({
        enabled: z.literal(true),
        approverGroups: z.array(z.unknown()).max(0).optional(),
        approvers: z.array(z.unknown()).max(0).optional(),
      }),
    }),
  }),
});

const keep = (b: Binding): Binding => b;

export function localAdaptations(
  kind: string,
  input: Record<string, unknown>,
  options: { demoAgentUrl: string | undefined },
): LocalAdaptation {
  if (kind === 'AgentBackend') {
    const doc = withUrl.safeParse(input);
    if (!doc.success || !doc.data.spec.url.includes(DEMO_AGENT_URL_PLACEHOLDER)) {
      return { input, problems: [], restoreBinding: keep };
    }
    if (options.demoAgentUrl === undefined) {
      return {
        input,
        problems: [
          {
            path: 'spec.url',
            message: `${DEMO_AGENT_URL_PLACEHOLDER} stands for the built-in demo agent, which is not running`,
          },
        ],
        restoreBinding: keep,
      };
    }
    const base = options.demoAgentUrl.replace(/\/+$/, '');
    const url = doc.data.spec.url.replaceAll(DEMO_AGENT_URL_PLACEHOLDER, base);
    return { input: { ...doc.data, spec: { ...doc.data.spec, url } }, problems: [], restoreBinding: keep };
  }
  if (kind === 'Binding') {
    const doc = openApprovals.safeParse(input);
    if (!doc.success) return { input, problems: [], restoreBinding: keep };
    const { spec } = doc.data;
    const toolApprovals = { ...spec.interactions.toolApprovals, approverGroups: [STAND_IN_GROUP] };
    return {
      input: { ...doc.data, spec: { ...spec, interactions: { ...spec.interactions, toolApprovals } } },
      problems: [],
      restoreBinding: (b) => ({
        ...b,
        spec: {
          ...b.spec,
          interactions: {
            ...b.spec.interactions,
            toolApprovals: { enabled: true, approverGroups: [], approvers: [] },
          },
        },
      }),
    };
  }
  return { input, problems: [], restoreBinding: keep };
}
