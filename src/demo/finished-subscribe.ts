import { TaskState } from '@a2a-js/sdk';
import type { NextFunction, Request, Response } from 'express';
import type { TaskMemory } from './memory.js';

/**
 * SubscribeToTask on a task that has finished: the demo agent refuses it with -32004
 * (unsupported operation, as A2A allows) before the SDK sees the call. The SDK answers the
 * same, but first prints the refusal's stack trace on the broker's terminal (it logs every
 * error raised before a stream starts), which `agentkourier check` would cause on every run.
 */

const FINISHED: ReadonlySet<TaskState> = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_REJECTED,
]);

export function refuseFinishedSubscribe(memory: TaskMemory) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const body = req.body as { id?: unknown; method?: unknown; params?: { id?: unknown } } | undefined;
    const taskId = body?.params?.id;
    if (body?.method !== 'SubscribeToTask' || typeof taskId !== 'string') {
      next();
      return;
    }
    const state = memory.stateOf(taskId);
    if (state === undefined || !FINISHED.has(state)) {
      next();
      return;
    }
    res.status(200).json({
      jsonrpc: '2.0',
      id: typeof body.id === 'string' || typeof body.id === 'number' ? body.id : null,
      error: { code: -32004, message: `Task ${taskId} has finished and cannot be subscribed to.` },
    });
  };
}
