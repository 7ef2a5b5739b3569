import { randomUUID } from 'node:crypto';
import { type Artifact, type Message, type Task, TaskState } from '@a2a-js/sdk';
import {
  AgentEvent,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from '@a2a-js/sdk/server';
import { type Decision, decisionsOf } from './decisions.js';
import { TaskMemory } from './memory.js';
import { agentMessage, data, firstText, text } from './parts.js';
import {
  APPROVAL_TOOLS,
  answerChunks,
  type DemoTool,
  HITL_URI,
  longAnswerChunks,
  personWords,
  QUESTION,
  scenarioFor,
} from './scenarios.js';

/**
 * What the demo agent does with a turn (the texts and tools are ./scenarios.ts): answer in
 * artifact chunks with a tool step, fail, ask a question, or ask to run two tools through
 * kagent's human-in-the-loop extension and then run the approved ones.
 */

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

export class DemoExecutor implements AgentExecutor {
  /** What the R-8 answer to a repeated messageId reads (./memory.ts). */
  readonly memory = new TaskMemory();
  readonly #running = new Map<string, AbortController>();
  readonly #asked = new Map<string, 'question' | 'approval'>();

  constructor(private readonly chunkDelayMs: number) {}

  abortAll(): void {
    for (const c of this.#running.values()) c.abort();
  }

  execute = async (ctx: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const controller = new AbortController();
    this.#running.set(ctx.taskId, controller);
    const signal = controller.signal;
    const task: Task = ctx.task ?? {
      id: ctx.taskId,
      contextId: ctx.contextId,
      status: {
        state: TaskState.TASK_STATE_SUBMITTED,
        message: undefined,
        timestamp: new Date().toISOString(),
      },
      artifacts: [],
      history: [ctx.userMessage],
      metadata: undefined,
    };
    bus.publish(AgentEvent.task(task));
    if (ctx.task === undefined) this.memory.begin(ctx.userMessage.messageId, task.id, task.contextId);
    try {
      const asked = this.#asked.get(task.id);
      this.#asked.delete(task.id);
      const words = firstText(ctx.userMessage);
      if (asked === 'question') {
        await this.#stream(task, bus, signal, [
          `Looking at **${words.split('\n').at(-1)?.trim() || 'that'}**. `,
          'All services are healthy there.',
        ]);
        this.#status(task, bus, TaskState.TASK_STATE_COMPLETED);
      } else if (asked === 'approval') {
        await this.#runApproved(task, bus, signal, decisionsOf(ctx.userMessage));
      } else {
        await this.#start(
          task,
          bus,
          signal,
          words,
          ctx.context.requestedExtensions?.includes(HITL_URI) === true,
        );
      }
    } finally {
      this.#running.delete(task.id);
      bus.finished();
    }
  };

  cancelTask = async (taskId: string, bus: ExecutionEventBus): Promise<void> => {
    this.#running.get(taskId)?.abort();
    this.#asked.delete(taskId);
    this.memory.state(taskId, TaskState.TASK_STATE_CANCELED);
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId: this.memory.contextOf(taskId) ?? '',
        status: {
          state: TaskState.TASK_STATE_CANCELED,
          message: undefined,
          timestamp: new Date().toISOString(),
        },
        metadata: undefined,
      }),
    );
    bus.finished();
  };

  async #start(
    task: Task,
    bus: ExecutionEventBus,
    signal: AbortSignal,
    words: string,
    hitl: boolean,
  ): Promise<void> {
    this.#status(task, bus, TaskState.TASK_STATE_WORKING);
    switch (scenarioFor(words)) {
      case 'failure':
        this.#status(
          task,
          bus,
          TaskState.TASK_STATE_FAILED,
          agentMessage([text('Simulated failure: rate limit exceeded.')], task),
        );
        return;
      case 'question':
        await this.#stream(task, bus, signal, ['I can check that. ']);
        this.#asked.set(task.id, 'question');
        this.#status(task, bus, TaskState.TASK_STATE_INPUT_REQUIRED, agentMessage([text(QUESTION)], task));
        return;
      case 'approval': {
        await this.#stream(task, bus, signal, ['To do that I need to run two tools. ']);
        this.#asked.set(task.id, 'approval');
        const hint = 'The demo agent asks to run restart_deployment and delete_pod.';
        // Like kagent: the payload only when the client asked for the extension; otherwise a
        // text hint that cannot be answered as an approval.
        const message = hitl
          ? agentMessage([text(hint)], task, {
              extensions: [HITL_URI],
              metadata: {
                [HITL_URI]: {
                  type: 'tool_approval_request',
                  hint,
                  tools: APPROVAL_TOOLS.map((t) => ({
                    id: t.id,
                    call_id: t.callId,
                    name: t.name,
                    args: t.args,
                  })),
                },
              },
            })
          : agentMessage([text(`${hint} Reply "yes" to run both.`)], task);
        this.#status(task, bus, TaskState.TASK_STATE_INPUT_REQUIRED, message);
        return;
      }
      case 'long':
        await this.#stream(task, bus, signal, longAnswerChunks());
        // A cancel stopped the stream: the cancel's own status is the task's last word.
        if (!signal.aborted) this.#status(task, bus, TaskState.TASK_STATE_COMPLETED);
        return;
      default:
        this.#toolStep(task, bus, {
          id: 'call-search',
          callId: 'call-search',
          name: 'search_docs',
          args: { query: personWords(words).slice(0, 60) },
        });
        await this.#stream(task, bus, signal, answerChunks(personWords(words)));
        this.#status(task, bus, TaskState.TASK_STATE_COMPLETED);
    }
  }

  async #runApproved(
    task: Task,
    bus: ExecutionEventBus,
    signal: AbortSignal,
    decisions: Decision[] | undefined,
  ): Promise<void> {
    this.#status(task, bus, TaskState.TASK_STATE_WORKING);
    if (decisions === undefined) {
      await this.#stream(task, bus, signal, ['No approval decision came back, so I ran nothing.']);
      this.#status(task, bus, TaskState.TASK_STATE_COMPLETED);
      return;
    }
    const lines: string[] = [];
    for (const tool of APPROVAL_TOOLS) {
      const decision = decisions.find((d) => d.id === tool.id);
      if (decision?.approved === true) {
        this.#toolStep(task, bus, tool);
        lines.push(`- Ran \`${tool.name}\`.\n`);
      } else {
        lines.push(
          `- Did not run \`${tool.name}\`${decision?.reason ? ` (denied: ${decision.reason})` : ' (denied)'}.\n`,
        );
      }
    }
    await this.#stream(task, bus, signal, ['Done.\n\n', ...lines]);
    this.#status(task, bus, TaskState.TASK_STATE_COMPLETED);
  }

  #toolStep(task: Task, bus: ExecutionEventBus, tool: DemoTool): void {
    const call = data(
      { id: tool.callId, name: tool.name, args: tool.args },
      { kagent_type: 'function_call' },
    );
    const result = data(
      { id: tool.callId, name: tool.name, response: { result: `${tool.name} ok (simulated)` } },
      { kagent_type: 'function_response' },
    );
    this.#status(task, bus, TaskState.TASK_STATE_WORKING, agentMessage([call], task));
    this.#status(task, bus, TaskState.TASK_STATE_WORKING, agentMessage([result], task));
  }

  async #stream(task: Task, bus: ExecutionEventBus, signal: AbortSignal, chunks: string[]): Promise<void> {
    const artifactId = `answer-${randomUUID().slice(0, 8)}`;
    for (const [i, chunk] of chunks.entries()) {
      if (signal.aborted) return;
      const artifact: Artifact = {
        artifactId,
        name: 'answer',
        description: '',
        parts: [text(chunk)],
        metadata: undefined,
        extensions: [],
      };
      this.memory.chunk(task.id, artifactId, chunk);
      bus.publish(
        AgentEvent.artifactUpdate({
          taskId: task.id,
          contextId: task.contextId,
          artifact,
          append: i > 0,
          lastChunk: i === chunks.length - 1,
          metadata: undefined,
        }),
      );
      if (this.chunkDelayMs > 0) await sleep(this.chunkDelayMs, signal);
    }
  }

  #status(task: Task, bus: ExecutionEventBus, state: TaskState, message?: Message): void {
    this.memory.state(task.id, state);
    bus.publish(
      AgentEvent.statusUpdate({
        taskId: task.id,
        contextId: task.contextId,
        status: { state, message, timestamp: new Date().toISOString() },
        metadata: undefined,
      }),
    );
  }
}
