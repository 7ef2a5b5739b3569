/**
 * Field paths and unknown fields. The CRD schemas (zod objects) drop fields they do not know,
 * as the API server prunes them; but `kubectl apply` refuses unknown fields by default (strict
 * field validation), and a silently dropped field is worse in a file people edit by hand: a
 * misspelt `questionTimout` would just not apply, and a `namespace:` added to a Secret
 * reference would look like it reached into another namespace. So local mode refuses them.
 */

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `spec.slack.channels[0]`, from a prefix and a zod issue path. */
export function fieldPath(prefix: string, path: readonly PropertyKey[]): string {
  let out = prefix;
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out === '' ? String(key) : `.${String(key)}`;
  }
  return out;
}

/** Paths present in `input` that parsing left out of `output`. */
export function unknownFields(input: unknown, output: unknown, path: string): string[] {
  if (Array.isArray(input) && Array.isArray(output)) {
    return input.flatMap((item, i) => unknownFields(item, output[i], `${path}[${i}]`));
  }
  if (!isRecord(input) || !isRecord(output)) return [];
  return Object.entries(input).flatMap(([key, value]) => {
    const child = fieldPath(path, [key]);
    return Object.hasOwn(output, key) ? unknownFields(value, output[key], child) : [child];
  });
}

/** Why a field is refused: references carry no namespace (tenancy), anything else is unknown. */
export function unknownFieldMessage(path: string): string {
  if (/(?:^|\.)[A-Za-z]*[Rr]ef\.namespace$/.test(path)) {
    return 'a reference names an object in the resource’s own namespace only; it cannot name another namespace';
  }
  return 'unknown field';
}
