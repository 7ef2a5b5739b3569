import { describe, expect, it } from 'vitest';
import { v0_3 } from './v0_3/codec.js';
import { v1_0 } from './v1_0/codec.js';

// A state is looked up by the agent's own string: a name that every object inherits must not
// come back as a function or an object where the engine expects one of the model's states.

const inherited = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'];

describe('task states an agent names', () => {
  it.each(inherited)('reads a state named %s as unknown, at 1.0 and at 0.3', (name) => {
    const at10 = v1_0.decodeEvent({ statusUpdate: { taskId: 't', contextId: 'c', status: { state: name } } });
    const at03 = v0_3.decodeEvent({
      kind: 'status-update',
      taskId: 't',
      contextId: 'c',
      status: { state: name },
    });
    expect(at10).toMatchObject({ kind: 'status-update', status: { state: 'unknown' } });
    expect(at03).toMatchObject({ kind: 'status-update', status: { state: 'unknown' } });
  });

  it('still reads the proto enum names and numbers at 1.0', () => {
    const state = (s: string | number) =>
      v1_0.decodeEvent({ statusUpdate: { taskId: 't', contextId: 'c', status: { state: s } } });
    expect(state('TASK_STATE_INPUT_REQUIRED')).toMatchObject({ status: { state: 'input-required' } });
    expect(state(3)).toMatchObject({ status: { state: 'completed' } });
    expect(state('TASK_STATE_UNSPECIFIED')).toMatchObject({ status: { state: 'unknown' } });
  });
});
