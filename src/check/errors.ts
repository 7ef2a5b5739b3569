import { KourierError } from '../core/errors.js';

/**
 * The checker's own failures. An agent's misbehaviour is never an error here: it is a rule's
 * FAIL. These are what stops the checker itself, each mapped to an exit code by run.ts.
 */

/** The command line is wrong: exit 2 before any call. The message never repeats a value. */
export class CheckArgumentError extends KourierError {
  constructor(message: string) {
    super('check_argument', message);
  }
}
