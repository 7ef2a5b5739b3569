import type { z } from 'zod';

/**
 * One rule, written once for both places that enforce it: `cel` is what the API server runs
 * (an `x-kubernetes-validations` entry of the CRD schema, so `kubectl apply` refuses a bad
 * resource), `check` is the same rule for zod, so the controller and local mode refuse the
 * same resources. The integration tests apply the fixtures of ../crds/fixtures.ts to a real
 * API server to prove that the two agree.
 */
export interface CelRule<T> {
  cel: string;
  message: string;
  check: (value: T) => boolean;
}

export interface KubernetesValidation {
  rule: string;
  message: string;
}

/** Adds the rules to a schema: as zod refinements and as the schema's CEL validations. */
export function withRules<S extends z.ZodType>(schema: S, rules: ReadonlyArray<CelRule<z.output<S>>>): S {
  let out = schema;
  for (const r of rules) out = out.refine((value) => r.check(value), { message: r.message });
  const validations: KubernetesValidation[] = rules.map((r) => ({ rule: r.cel, message: r.message }));
  return out.meta({ 'x-kubernetes-validations': validations });
}

/**
 * A list whose items must be distinct, as a `set` list for the API server (it refuses
 * duplicates itself) and as a zod refinement.
 */
export function uniqueList<S extends z.ZodArray>(schema: S, what: string): S {
  return schema
    .refine((items) => new Set(items).size === items.length, { message: `${what} must be distinct` })
    .meta({ 'x-kubernetes-list-type': 'set' });
}

/**
 * A list of objects keyed by one field (a `map` list for the API server, which refuses a
 * repeated key), and the same check for zod.
 */
export function keyedList<S extends z.ZodArray>(schema: S, key: string, what: string): S {
  return schema
    .refine(
      (items) => {
        const keys = items.map((item) => (item as Record<string, unknown>)[key]);
        return new Set(keys).size === keys.length;
      },
      { message: `${what} must have distinct ${key}s` },
    )
    .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': [key] });
}
