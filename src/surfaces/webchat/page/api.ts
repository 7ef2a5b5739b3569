/// <reference lib="dom" />
import type { ApiErrorBody } from '../view.js';

/**
 * The page's client of the JSON API. With a token configured, every call carries it as a bearer
 * header; the token comes from the URL fragment once (`#token=…`, never sent to a server or
 * kept in history) or from a prompt, and is kept in sessionStorage for this tab only.
 */

const TOKEN_KEY = 'agentkourier.webchat.token';

export class ApiError extends Error {
  readonly status: number;
  readonly code: string;

  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function isErrorBody(value: unknown): value is ApiErrorBody {
  if (typeof value !== 'object' || value === null || !('error' in value)) return false;
  const error = value.error;
  return typeof error === 'object' && error !== null && 'code' in error && 'message' in error;
}

export function takeTokenFromUrl(): void {
  const match = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (match?.[1] === undefined) return;
  sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(match[1]));
  history.replaceState(null, '', location.pathname + location.search);
}

export class Api {
  headers(): Record<string, string> {
    // Read on every call: the token may arrive after the client was made (fragment, prompt).
    const token = sessionStorage.getItem(TOKEN_KEY);
    return token === null ? {} : { Authorization: `Bearer ${token}` };
  }

  get<T>(path: string): Promise<T> {
    return this.#call<T>('GET', path);
  }

  post<T>(path: string, body: unknown): Promise<T> {
    return this.#call<T>('POST', path, body);
  }

  /** After a 401: ask the person for the token once; false when they gave none. */
  askForToken(): boolean {
    const token = window.prompt('This web chat needs its access token:');
    if (token === null || token.trim() === '') return false;
    sessionStorage.setItem(TOKEN_KEY, token.trim());
    return true;
  }

  async #call<T>(method: string, path: string, body?: unknown, retried = false): Promise<T> {
    const headers: Record<string, string> = { ...this.headers() };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const init: RequestInit = { method, headers };
    if (body !== undefined) init.body = JSON.stringify(body);
    const res = await fetch(path, init);
    if (res.status === 401 && !retried && this.askForToken()) return this.#call<T>(method, path, body, true);
    const payload: unknown = await res.json().catch(() => undefined);
    if (!res.ok) {
      if (isErrorBody(payload)) throw new ApiError(res.status, payload.error.code, payload.error.message);
      throw new ApiError(res.status, 'http_error', `the server answered ${res.status}`);
    }
    // Our own server's JSON, shaped by view.ts: the page trusts its origin's API.
    return payload as T;
  }
}
