import type { z } from 'zod';
import { CardFetchError, MalformedResponseError } from '../../core/agent/errors.js';

/** Turns a zod failure into our typed error, naming the first bad path (never the value). */
export function malformed(what: string, error: z.ZodError): MalformedResponseError {
  const issue = error.issues[0];
  const where = issue === undefined || issue.path.length === 0 ? '' : ` at ${issue.path.join('.')}`;
  return new MalformedResponseError(
    `the agent sent a malformed ${what}${where}: ${issue?.message ?? 'invalid'}`,
  );
}

/** The card is JSON but not an agent card. */
export function malformedCard(error: z.ZodError): CardFetchError {
  const issue = error.issues[0];
  const where = issue === undefined || issue.path.length === 0 ? '' : ` at ${issue.path.join('.')}`;
  return new CardFetchError(`the agent card is malformed${where}: ${issue?.message ?? 'invalid'}`);
}
