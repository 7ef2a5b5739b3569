import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';

/**
 * kagent's real ADK runtime (`kagent-adk run --local`, from .venv-kagent) serving the agent in
 * ./agents/conf_agent on loopback, with its model pointed at the scripted fake model
 * (./fake_model.py). Both are their own processes. `ran()` reads the agent's tool log: which
 * tools really executed.
 */
export interface KagentRuntime {
  /** The runtime pod's A2A endpoint (JSON-RPC at the root, card below it). */
  endpoint: string;
  ran(): Array<{ tool: string; args: Record<string, unknown> }>;
  close(): Promise<void>;
}

const HERE = resolve('test/peers/kagent');
const VENV = resolve('.venv-kagent/bin');

function waitForLine(child: ChildProcess, stream: 'stdout' | 'stderr', pattern: RegExp, what: string) {
  const source = child[stream];
  if (source === null) throw new Error(`${what} has no ${stream}`);
  const lines = createInterface({ input: source });
  const seen: string[] = [];
  return new Promise<string>((ok, fail) => {
    const timer = setTimeout(
      () => fail(new Error(`${what} did not start in 90 s:\n${seen.join('\n')}`)),
      90_000,
    );
    child.once('exit', (code) => fail(new Error(`${what} exited with ${code}:\n${seen.join('\n')}`)));
    lines.on('line', (line) => {
      seen.push(line);
      if (seen.length > 50) seen.shift();
      const match = pattern.exec(line);
      if (match?.[1] !== undefined) {
        clearTimeout(timer);
        ok(match[1]);
      }
    });
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  await exited;
}

export async function startKagentRuntime(): Promise<KagentRuntime> {
  const dir = mkdtempSync(join(tmpdir(), 'kagent-runtime-'));
  const toolLog = join(dir, 'tools.jsonl');
  const model = spawn(join(VENV, 'python'), [join(HERE, 'fake_model.py'), '--port', '0'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const children: ChildProcess[] = [model];
  try {
    const modelPort = await waitForLine(model, 'stdout', /^READY (\d+)$/, 'the fake model');
    const runtime = spawn(
      join(VENV, 'kagent-adk'),
      ['run', 'conf_agent', '--working-dir', '.', '--local', '--host', '127.0.0.1', '--port', '0'],
      {
        cwd: join(HERE, 'agents'),
        stdio: ['ignore', 'ignore', 'pipe'],
        env: {
          ...process.env,
          PYTHONPATH: join(HERE, 'agents'),
          FAKE_MODEL_URL: `http://127.0.0.1:${modelPort}/v1`,
          TOOL_LOG: toolLog,
          // KAgentConfig needs these even in local mode; nothing is called at KAGENT_URL.
          KAGENT_URL: 'http://127.0.0.1:1',
          KAGENT_NAME: 'conf-agent',
          KAGENT_NAMESPACE: 'test',
          OPENAI_API_KEY: 'dummy',
          OTEL_SDK_DISABLED: 'true',
        },
      },
    );
    children.push(runtime);
    // uvicorn picks the port (0) and says which on stderr.
    const endpoint = await waitForLine(
      runtime,
      'stderr',
      /Uvicorn running on (http:\/\/127\.0\.0\.1:\d+)/,
      'the kagent runtime',
    );
    runtime.stderr?.resume();
    return {
      endpoint,
      ran: () => {
        let text = '';
        try {
          text = readFileSync(toolLog, 'utf8');
        } catch {
          return [];
        }
        return text
          .split('\n')
          .filter((line) => line !== '')
          .map((line) => JSON.parse(line) as { tool: string; args: Record<string, unknown> });
      },
      close: async () => {
        await Promise.all(children.map(stop));
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await Promise.all(children.map(stop));
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}
