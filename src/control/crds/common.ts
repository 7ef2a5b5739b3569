import { z } from 'zod';

/** Shapes both custom resources share. Descriptions become `kubectl explain` text. */

export const GROUP = 'agentkourier.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;

/** A Kubernetes object name (DNS-1123 subdomain). */
export const objectName = z
  .string()
  .min(1)
  .max(253)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/, 'must be a DNS-1123 subdomain');

/** A namespace name (DNS-1123 label). */
export const namespaceName = z
  .string()
  .min(1)
  .max(63)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a DNS-1123 label');

export const secretKeyRef = z
  .object({
    name: objectName.meta({ description: 'Name of a Secret in the same namespace.' }),
    key: z
      .string()
      .min(1)
      .max(253)
      .regex(/^[-._a-zA-Z0-9]+$/, 'must be a valid Secret key')
      .meta({ description: 'Key in the Secret; its value is used with surrounding whitespace trimmed.' }),
  })
  .meta({ description: 'A key of a Secret in the resource’s own namespace (never another).' });

export type SecretKeyRef = z.output<typeof secretKeyRef>;

export const CONDITION_STATUSES = ['True', 'False', 'Unknown'] as const;

/** metav1.Condition, as the API conventions define it. */
export const condition = z.object({
  type: z
    .string()
    .min(1)
    .max(316)
    .meta({ description: 'Ready, or the specific aspect this condition reports.' }),
  status: z.enum(CONDITION_STATUSES),
  reason: z
    .string()
    .min(1)
    .max(1024)
    .regex(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/, 'must be a CamelCase reason'),
  message: z.string().max(32768),
  lastTransitionTime: z.string().meta({ format: 'date-time' }),
  observedGeneration: z.number().int().nonnegative().optional(),
});

export type Condition = z.output<typeof condition>;

export const conditions = z
  .array(condition)
  .max(16)
  .meta({
    description: 'Ready, plus one condition per aspect that can fail.',
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': ['type'],
  });

/** What the controller reports of an agent card it accepted. */
export const cardSummary = z.object({
  name: z.string().max(1024),
  version: z.string().max(256).meta({ description: 'The agent’s own version, as its card says.' }),
  protocolVersion: z
    .string()
    .max(16)
    .meta({ description: 'The A2A wire version every call uses: 1.0 or 0.3.' }),
  streaming: z.boolean(),
  extensions: z
    .array(z.object({ uri: z.string().max(2048), required: z.boolean() }))
    .max(64)
    .meta({ description: 'Extensions the card lists.' }),
  fetchedAt: z.string().meta({ format: 'date-time', description: 'When this card was read.' }),
});

export type CardSummary = z.output<typeof cardSummary>;

/** The metadata fields the controller reads; the API server owns the rest. */
export const objectMeta = z.object({
  name: z.string(),
  namespace: z.string(),
  uid: z.string().optional(),
  generation: z.number().int().optional(),
  resourceVersion: z.string().optional(),
});

export type ObjectMeta = z.output<typeof objectMeta>;

/** A whole object of one of our kinds, as the API server stores it: apiVersion, kind, metadata, spec, status. */
export function resourceSchema<const K extends string, S extends z.ZodType, T extends z.ZodType>(
  kind: K,
  spec: S,
  status: T,
) {
  return z.object({
    apiVersion: z.literal(API_VERSION),
    kind: z.literal(kind),
    metadata: objectMeta,
    spec,
    status: status.optional(),
  });
}
