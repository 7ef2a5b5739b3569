import { z } from 'zod';
import { KourierError } from '../../core/errors.js';

/**
 * Turns the zod schemas into a CRD's structural OpenAPI v3 schema. zod writes OpenAPI 3.0;
 * this pass removes what a structural schema may not hold and fails loudly on anything the API
 * server would refuse or read differently, so a schema change that cannot be expressed is
 * caught by the generator, not by a cluster.
 */

export type OpenApiSchema = { [key: string]: unknown };

/** A zod schema that no structural CRD schema can express: a bug in src/control/crds/, caught by the generator. */
export class NotStructuralError extends KourierError {
  constructor(
    /** Where in the schema, dotted ('' for the root). */
    readonly path: string,
    problem: string,
  ) {
    super('not_structural', `schema at ${path === '' ? '(root)' : path} cannot be a CRD schema: ${problem}`);
  }
}

const FORBIDDEN_KEYS = ['anyOf', 'oneOf', 'allOf', 'not', '$ref', '$defs', 'definitions', 'nullable'];

/** Go's regexp (RE2) has no look-around or back-references; a pattern using them would break. */
const NOT_RE2 = /\(\?[=!<]|\\[1-9]/;

function isRecord(value: unknown): value is OpenApiSchema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function clean(node: OpenApiSchema, path: string): OpenApiSchema {
  for (const key of FORBIDDEN_KEYS) {
    if (key in node) throw new NotStructuralError(path, `"${key}" is not structural`);
  }
  if (typeof node.type !== 'string') throw new NotStructuralError(path, 'every node needs a type');
  if (typeof node.pattern === 'string' && NOT_RE2.test(node.pattern)) {
    throw new NotStructuralError(path, `pattern ${node.pattern} needs look-around or back-references`);
  }
  const out: OpenApiSchema = {};
  for (const [key, value] of Object.entries(node)) {
    // Unknown fields are pruned by the API server: that is its additionalProperties: false.
    if (key === 'additionalProperties' && value === false) continue;
    // zod bounds every integer by the JS safe range; int64 needs no such bound.
    if (
      (key === 'maximum' && value === Number.MAX_SAFE_INTEGER) ||
      (key === 'minimum' && value === Number.MIN_SAFE_INTEGER)
    ) {
      continue;
    }
    if (key === 'properties' && isRecord(value)) {
      out.properties = Object.fromEntries(
        Object.entries(value).map(([name, child]) => {
          if (!isRecord(child)) throw new NotStructuralError(`${path}.${name}`, 'not a schema');
          return [name, clean(child, `${path}.${name}`)];
        }),
      );
      continue;
    }
    if ((key === 'items' || key === 'additionalProperties') && isRecord(value)) {
      out[key] = clean(value, `${path}[]`);
      continue;
    }
    out[key] = value;
  }
  if (out.properties !== undefined && out.additionalProperties !== undefined) {
    throw new NotStructuralError(path, 'properties and additionalProperties together');
  }
  return out;
}

/** The structural OpenAPI v3 schema of a zod schema, as it accepts input (defaults optional). */
export function toStructuralSchema(schema: z.ZodType): OpenApiSchema {
  const raw = z.toJSONSchema(schema, { target: 'openapi-3.0', io: 'input', unrepresentable: 'throw' });
  if (!isRecord(raw)) throw new NotStructuralError('', 'not an object schema');
  return clean(raw, '');
}
