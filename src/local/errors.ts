import { KourierError } from '../core/errors.js';

/**
 * What goes wrong with a local manifest file. Every problem names the file, the document (its
 * 1-based position, and its kind and name when they could be read) and the field path, so the
 * line to fix can be found without guessing.
 */

export interface ManifestProblem {
  /** The document's position in the file, counting from 1. */
  document: number;
  /** 'Binding default/chat', or undefined when the kind or name could not be read. */
  object: string | undefined;
  /** Field path inside the document ('spec.identity.userId'); '' for the document itself. */
  path: string;
  message: string;
}

/** Past this many, further problems are counted rather than listed: fix the first ones first. */
const MAX_LISTED = 20;

export function describeProblem(file: string, p: ManifestProblem): string {
  const what = p.object === undefined ? `document ${p.document}` : `document ${p.document} (${p.object})`;
  return `${file}: ${what}: ${p.path === '' ? '' : `${p.path}: `}${p.message}`;
}

function describeAll(file: string, problems: readonly ManifestProblem[]): string {
  const lines = problems.slice(0, MAX_LISTED).map((p) => describeProblem(file, p));
  if (problems.length > MAX_LISTED)
    lines.push(`${file}: … and ${problems.length - MAX_LISTED} more problems`);
  return lines.join('\n');
}

/** The file parsed but does not hold a valid configuration; nothing of it was applied. */
export class LocalManifestError extends KourierError {
  readonly file: string;
  readonly problems: readonly ManifestProblem[];

  constructor(file: string, problems: readonly ManifestProblem[]) {
    super('local_manifest_invalid', describeAll(file, problems));
    this.file = file;
    this.problems = problems;
  }
}

/** The file could not be read at all (missing, unreadable, too large). */
export class LocalFileError extends KourierError {
  readonly file: string;

  constructor(file: string, message: string, options: { cause?: unknown } = {}) {
    super('local_manifest_unreadable', `${file}: ${message}`, options);
    this.file = file;
  }
}
