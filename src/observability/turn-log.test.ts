import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { EngineEvent } from '../core/events.js';
import { createLogger } from './logging.js';
import { TurnLog } from './turn-log.js';

function capture(): { log: TurnLog; lines: () => Array<Record<string, unknown>> } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      chunks.push(String(chunk));
      done();
    },
  });
  return {
    log: new TurnLog(createLogger({ destination: stream, level: 'info' })),
    lines: () =>
      chunks
        .join('')
        .trim()
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

const base = { sessionId: 'slack:T1:C1:1.5', binding: 'team-a/support', at: 0 };

function settled(
  outcome: string,
  extra: Partial<Extract<EngineEvent, { type: 'turn.settled' }>> = {},
): EngineEvent {
  return {
    ...base,
    type: 'turn.settled',
    turnId: 'turn-1',
    outcome,
    taskId: 'task-1',
    durationMs: 1234,
    answerLength: 5,
    ...extra,
  };
}

describe('turn log', () => {
  it('writes one info line per settled turn, with the stable shape and no text', () => {
    const { log, lines } = capture();
    log.emit(settled('completed'));
    const [line] = lines();
    expect(line).toMatchObject({
      level: 30,
      msg: 'turn settled',
      component: 'engine',
      binding: 'team-a/support',
      session: 'slack:T1:C1:1.5',
      turn: 'turn-1',
      task: 'task-1',
      outcome: 'completed',
      durationMs: 1234,
    });
    expect(lines()).toHaveLength(1);
  });

  it('writes one warn line per failed turn, with its category: the failure category or the error code', () => {
    const { log, lines } = capture();
    log.emit(settled('failed', { category: 'rate limit' }));
    log.emit(settled('failed'));
    log.emit(settled('error:credentials_rejected', { taskId: null }));
    log.emit(settled('rejected'));
    expect(lines().map((l) => [l.level, l.msg, l.outcome, l.category])).toEqual([
      [40, 'turn failed', 'failed', 'rate limit'],
      [40, 'turn failed', 'failed', 'uncategorized'],
      [40, 'turn failed', 'error:credentials_rejected', 'credentials_rejected'],
      [40, 'turn failed', 'rejected', 'rejected'],
    ]);
  });

  it('keeps the life of a turn below info, and warns of rejected credentials and failed cancels', () => {
    const { log, lines } = capture();
    log.emit({ ...base, type: 'turn.received', turnId: 't', kind: 'message', queued: false });
    log.emit({ ...base, type: 'stream.lost', turnId: 't', taskId: 'x', code: 'lost_connection' });
    log.emit({ ...base, type: 'credentials.rejected', status: 401 });
    log.emit({ ...base, type: 'task.cancel', taskId: 'x', reason: 'no-sign-of-life', ok: false });
    expect(lines().map((l) => [l.level, l.msg])).toEqual([
      [40, 'the agent rejected the credentials'],
      [40, 'a task could not be canceled'],
    ]);
  });

  it('warns, with the Binding, of a stream cut at the event size bound', () => {
    const { log, lines } = capture();
    log.emit({ ...base, type: 'stream.lost', turnId: 't', taskId: 'x', code: 'size_limit' });
    expect(lines().map((l) => [l.level, l.msg, l.binding, l.task])).toEqual([
      [40, 'the agent sent an event over the size limit; its stream was cut', 'team-a/support', 'x'],
    ]);
  });
});
