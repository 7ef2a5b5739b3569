import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';

/** The Python a2a-sdk peer (test/peers/python/agent.py) in its own process. */
export interface PythonPeer {
  endpoint: string;
  close(): Promise<void>;
}

/** `streaming: false`: the card does not advertise streaming and the SDK refuses those methods. */
export async function startPythonPeer(
  versions: string,
  options: { streaming?: boolean } = {},
): Promise<PythonPeer> {
  // Errors only: the tests make the SDK refuse calls on purpose, and it logs each refusal as a
  // warning (`Request Error … Task not found`); a passing run should read clean.
  const args = ['test/peers/python/agent.py', '--port', '0', '--versions', versions, '--log-level', 'error'];
  if (options.streaming === false) args.push('--no-streaming');
  const child: ChildProcess = spawn('.venv-peers/bin/python', args, {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const stdout = child.stdout;
  if (stdout === null) throw new Error('python peer has no stdout');
  const lines = createInterface({ input: stdout });
  const endpoint = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('python peer did not start in 30 s')), 30_000);
    child.once('exit', (code) => reject(new Error(`python peer exited with ${code}`)));
    lines.on('line', (line) => {
      const match = /^READY (\S+)$/.exec(line);
      if (match?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
  });
  return {
    endpoint,
    async close() {
      if (child.exitCode !== null) return;
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
    },
  };
}
