import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';

interface Message {
  author: string;
  kind: string;
  text: string;
  final?: boolean;
  noticeKind?: string;
}

// The README's promise: on a fresh clone, `npm start` answers in the web chat within seconds.
// This starts the real command (build included) and talks to its JSON API.
describe('npm start', () => {
  let child: ChildProcess | undefined;
  let dir: string | undefined;
  let url = '';
  afterAll(async () => {
    if (child?.pid !== undefined) {
      // Whatever is left of npm's process group (all of it when a test failed early, or the
      // broker if the SIGTERM did not reach it): it would outlive the test and keep the worker.
      const exited = child.exitCode === null ? once(child, 'exit') : undefined;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // The group is gone already.
      }
      await exited;
    }
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('runs local mode with the demo agent and answers in the web chat', async () => {
    dir = await mkdtemp(join(tmpdir(), 'ak-start-'));
    child = spawn('npm', ['start', '--', '--port', '0'], {
      env: { ...process.env, AGENTKOURIER_STORE: `sqlite:${join(dir, 'state.db')}`, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'inherit'],
      detached: true,
    });
    const stdout = child.stdout;
    if (stdout === null) throw new Error('no stdout');
    const lines = createInterface({ input: stdout });
    url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('npm start printed no URL in 90 s')), 90_000);
      child?.once('exit', (code) => reject(new Error(`npm start exited with ${code}`)));
      lines.on('line', (line) => {
        const match = /open (http:\/\/127\.0\.0\.1:\d+\/)/.exec(line);
        if (match?.[1] !== undefined) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      });
    });
    const headers = { 'content-type': 'application/json', origin: url.replace(/\/$/, '') };
    const bindings = (await (await fetch(`${url}api/bindings`)).json()) as {
      bindings: Array<{ ref: string }>;
    };
    expect(bindings.bindings.map((b) => b.ref)).toEqual(['default/demo']);
    const created = await fetch(`${url}api/threads`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ binding: 'default/demo', text: 'hello from the test' }),
    });
    expect(created.status).toBe(201);
    const { thread } = (await created.json()) as { thread: { id: string } };
    const started = Date.now();
    let messages: Message[] = [];
    while (Date.now() - started < 20_000) {
      const read = (await (await fetch(`${url}api/threads/${thread.id}`)).json()) as { messages: Message[] };
      messages = read.messages;
      if (messages.some((m) => m.kind === 'answer' && m.final === true)) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const answer = messages.find((m) => m.kind === 'answer');
    expect(answer?.final).toBe(true);
    expect(answer?.text).toContain('hello from the test');
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('stops on a SIGTERM to the npm process itself, as a supervisor sends it, and frees its port', async () => {
    const npm = child as ChildProcess;
    const exited = once(npm, 'exit');
    // To npm only, not its process group: npm passes it to the script, whose last command is
    // exec'd so the broker is the one that gets it.
    npm.kill('SIGTERM');
    await exited;
    await expect
      .poll(
        async () =>
          fetch(`${url}healthz`).then(
            () => 'still served',
            () => 'closed',
          ),
        { timeout: 15_000, interval: 200 },
      )
      .toBe('closed');
  });
});
