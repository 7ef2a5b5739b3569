import { stringify } from 'yaml';
import type { z } from 'zod';
import { agentBackendSpec, agentBackendStatus } from './agent-backend.js';
import { bindingSpec, bindingStatus } from './binding.js';
import { GROUP, VERSION } from './common.js';
import { type OpenApiSchema, toStructuralSchema } from './openapi.js';

/**
 * The CustomResourceDefinitions, built from the zod schemas. `crds/*.yaml` is this output,
 * written by ./generate.ts; a unit test fails when the committed files differ.
 */

export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'date' | 'boolean';
  jsonPath: string;
  description?: string;
  priority?: number;
}

export interface CrdDefinition {
  kind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  description: string;
  spec: z.ZodType;
  status: z.ZodType;
  columns: PrinterColumn[];
}

const readyColumns: PrinterColumn[] = [
  { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
  { name: 'Reason', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].reason' },
];

const age: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };

export const AGENT_BACKEND_CRD: CrdDefinition = {
  kind: 'AgentBackend',
  plural: 'agentbackends',
  singular: 'agentbackend',
  shortNames: ['ab'],
  description: 'Where and how Agent Kourier reaches agents: a dialect, a URL and static headers.',
  spec: agentBackendSpec,
  status: agentBackendStatus,
  columns: [
    { name: 'Dialect', type: 'string', jsonPath: '.spec.dialect' },
    { name: 'URL', type: 'string', jsonPath: '.spec.url' },
    { name: 'Polling', type: 'boolean', jsonPath: '.spec.polling.enabled' },
    ...readyColumns,
    age,
  ],
};

export const BINDING_CRD: CrdDefinition = {
  kind: 'Binding',
  plural: 'bindings',
  singular: 'binding',
  shortNames: ['akb'],
  description: 'Ties Slack channels, direct messages and alert triggers to one agent on one AgentBackend.',
  spec: bindingSpec,
  status: bindingStatus,
  columns: [
    { name: 'Backend', type: 'string', jsonPath: '.spec.backendRef.name' },
    { name: 'Agent', type: 'string', jsonPath: '.spec.agent.name' },
    { name: 'Channels', type: 'string', jsonPath: '.spec.slack.channels' },
    ...readyColumns,
    age,
  ],
};

export const CRD_DEFINITIONS = [AGENT_BACKEND_CRD, BINDING_CRD] as const;

export function crdName(def: CrdDefinition): string {
  return `${def.plural}.${GROUP}`;
}

export function crdManifest(def: CrdDefinition): OpenApiSchema {
  const spec = toStructuralSchema(def.spec);
  const status = toStructuralSchema(def.status);
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: crdName(def) },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: {
        kind: def.kind,
        listKind: `${def.kind}List`,
        plural: def.plural,
        singular: def.singular,
        shortNames: def.shortNames,
        categories: ['agentkourier'],
      },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: def.columns,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: def.description,
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec,
                status,
              },
            },
          },
        },
      ],
    },
  };
}

export const GENERATED_HEADER =
  '# Generated from src/control/crds/*.ts by `npx tsx src/control/crds/generate.ts`. Do not edit by hand.\n';

/** The YAML file of one CRD, byte for byte what is committed in crds/. */
export function crdYaml(def: CrdDefinition): string {
  return GENERATED_HEADER + stringify(crdManifest(def), { lineWidth: 0 });
}

export function crdFileName(def: CrdDefinition): string {
  return `${GROUP}_${def.plural}.yaml`;
}
