import type { FakeMessage } from './api.js';

/** Small values every part of the fake shares: arguments, refusals, timestamps, characters. */

export type Args = Record<string, unknown>;
export type Result = Record<string, unknown>;

/** Thrown by a method handler: answers `{ok: false, error, response_metadata?: {messages}}`. */
export class SlackRefusal extends Error {
  constructor(
    readonly code: string,
    readonly messages: string[] = [],
    readonly extra: Record<string, unknown> = {},
  ) {
    super(code);
  }
}

export interface StoredMessage extends FakeMessage {
  appId?: string;
  /** A person pressed the session's stop button while this streamed. */
  stoppedByUser?: boolean;
}

export interface StoredUser {
  id: string;
  name: string;
  realName?: string;
  email?: string;
  isBot?: boolean;
  deleted?: boolean;
}

/** Length in characters (code points), as Slack counts, not UTF-16 units. */
export function chars(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

export function tsToMicros(ts: string): bigint {
  const [s = '0', f = ''] = ts.split('.');
  return BigInt(s) * 1_000_000n + BigInt(f.padEnd(6, '0').slice(0, 6) || '0');
}
export function compareTs(a: string, b: string): number {
  const x = tsToMicros(a);
  const y = tsToMicros(b);
  return x < y ? -1 : x > y ? 1 : 0;
}
export const TS_RE = /^\d+\.\d{6}$/;

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
export function str(args: Args, key: string): string | undefined {
  const v = args[key];
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return undefined;
}
export function flag(args: Args, key: string): boolean {
  const v = args[key];
  return v === true || v === 'true' || v === '1' || v === 1;
}
export function problem(code: string, message: string, pointer: string): SlackRefusal {
  return new SlackRefusal(code, [`[ERROR] ${message} [json-pointer:${pointer}]`]);
}
export function clone<T>(v: T): T {
  return structuredClone(v);
}
