import { KourierError } from '../../core/errors.js';

/**
 * A request the web chat's API refuses: carries the HTTP status and a stable `code`, and a
 * message written for the person or script that sent it (never an agent's text).
 */
export class WebChatRequestError extends KourierError {
  readonly status: number;

  constructor(status: number, code: string, message: string, options: { cause?: unknown } = {}) {
    super(code, message, options);
    this.status = status;
  }
}

/** The page's script is missing (not built by `npm run build`). */
export class WebChatBuildError extends KourierError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super('webchat_build_failed', message, options);
  }
}
