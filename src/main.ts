#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { CONTROLLER_HELP, startController } from './app/controller.js';
import { FORGET_HELP, runForget } from './app/forget.js';
import { IDENTITY_KEY_HELP, runIdentityKey } from './app/identity-key.js';
import { startLocal } from './app/local.js';
import { runCheck } from './check/index.js';
import { KourierError } from './core/errors.js';
import { startDemoAgent } from './demo/demo-agent.js';
import { isLoopback } from './surfaces/webchat/security.js';

/**
 * The one binary, `agentkourier`. This file is the composition root: the only place that reads
 * the command line and the environment and wires the pieces together.
 */

export interface Io {
  out(line: string): void;
  err(line: string): void;
}

const USAGE = `Usage: agentkourier <command> [options]

Commands:
  local [--config F] [--port N] [--host H] [--token T] [--no-demo]
                                     run the broker on this machine: Bindings from a YAML file
                                     (default examples/local.yaml), SQLite, the web chat on
                                     http://127.0.0.1:8080, the demo agent; Slack too when its
                                     settings are in the environment. A --host other than
                                     loopback needs a web chat token: --token, or better
                                     AGENTKOURIER_WEBCHAT_TOKEN (a flag shows in ps)
  controller                         run in a cluster: AgentBackends and Bindings, Slack, the
                                     engine, /healthz /readyz /metrics (settings: environment)
  check <endpoint> [options]         check an agent against the agent contract (--help for options)
  demo-agent [--port N] [--host H]   run the built-in demo agent (A2A 1.0, streaming)
  forget (--user ID | --email A)     erase a person's threads and words from the broker's store
  identity-key [--add F | --retire F]  print a per-person identity key file, or rotate one
  version                            print the version
  help                               print this help`;

const LOCAL_HELP = `Usage: agentkourier local [options]

Runs the broker on this machine: Bindings from a YAML file (reloaded when it changes), state in
SQLite under ./.agentkourier/, the web chat, the demo agent, and Slack when its settings are in
the environment.

Options:
  --config F    the Bindings file (default examples/local.yaml)
  --port N      the web chat's port (default 8080; /healthz /readyz /metrics and trigger
                webhooks are served there too)
  --host H      the web chat's address (default 127.0.0.1); any other address needs a token
  --token T     the web chat's bearer token, at least 16 characters; better in
                AGENTKOURIER_WEBCHAT_TOKEN, since a flag shows in ps
  --no-demo     do not start the demo agent
  --help, -h    print this help`;

const DEMO_HELP = `Usage: agentkourier demo-agent [options]

Runs the built-in demo agent: A2A 1.0 over JSON-RPC with streaming, kagent's paths
(/agents/demo/assistant) and its human-in-the-loop extension. It keeps its tasks in memory:
a restart forgets them.

Options:
  --port N      the port (default 8090)
  --host H      the address (default 127.0.0.1)
  --help, -h    print this help`;

/** Whether the arguments ask for a command's help. */
function asksHelp(args: readonly string[]): boolean {
  return args.includes('--help') || args.includes('-h');
}

/** Thrown for a bad command line: the message is shown with the usage, exit code 2. */
export class UsageError extends KourierError {
  constructor(message: string) {
    super('usage', message);
  }
}

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
    version?: string;
  };
  return pkg.version ?? 'unknown';
}

function port(value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65_535)
    throw new UsageError(`--port must be a port number, not "${value}"`);
  return n;
}

/** Waits for SIGINT/SIGTERM, then runs `stop`. */
function untilSignal(stop: () => Promise<void>): Promise<number> {
  return new Promise((resolve) => {
    const onSignal = (): void => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      stop().then(
        () => resolve(0),
        () => resolve(1),
      );
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}

async function local(args: string[], io: Io): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      config: { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      token: { type: 'string' },
      'no-demo': { type: 'boolean' },
    },
    strict: true,
  });
  const host = values.host ?? '127.0.0.1';
  const fromEnv = process.env.AGENTKOURIER_WEBCHAT_TOKEN;
  const token = values.token ?? (fromEnv === undefined || fromEnv === '' ? undefined : fromEnv);
  // Off loopback, anyone who reaches the address could use the agents: a token is required.
  if (!isLoopback(host) && token === undefined) {
    throw new UsageError(
      `--host ${host} is not a loopback address, so the web chat needs a token: pass --token <at least 16 characters> or set AGENTKOURIER_WEBCHAT_TOKEN`,
    );
  }
  const running = await startLocal({
    config: values.config ?? 'examples/local.yaml',
    port: port(values.port, 8080),
    host,
    ...(token === undefined ? {} : { token }),
    demo: values['no-demo'] !== true,
    env: process.env,
    out: io.out,
  });
  return untilSignal(() => running.stop());
}

async function demoAgent(args: string[], io: Io): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { port: { type: 'string' }, host: { type: 'string' } },
    strict: true,
  });
  const agent = await startDemoAgent({ port: port(values.port, 8090), host: values.host ?? '127.0.0.1' });
  io.out(`demo agent listening: AgentBackend url ${agent.url} (dialect kagent-v1, agent demo/assistant)`);
  return untilSignal(() => agent.close());
}

export async function run(argv: readonly string[], io: Io): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'version':
      case '--version':
        if (asksHelp(rest)) {
          io.out('Usage: agentkourier version\n\nPrints the version of Agent Kourier.');
          return 0;
        }
        io.out(version());
        return 0;
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        io.out(USAGE);
        return 0;
      case 'demo-agent':
        if (asksHelp(rest)) {
          io.out(DEMO_HELP);
          return 0;
        }
        return await demoAgent(rest, io);
      case 'check':
        return await runCheck([...rest], io);
      case 'identity-key':
        if (asksHelp(rest)) {
          io.out(IDENTITY_KEY_HELP);
          return 0;
        }
        return await runIdentityKey(rest, io.out);
      case 'forget':
        if (asksHelp(rest)) {
          io.out(FORGET_HELP);
          return 0;
        }
        return await runForget(rest, process.env, io.out);
      case 'local':
        if (asksHelp(rest)) {
          io.out(LOCAL_HELP);
          return 0;
        }
        return await local(rest, io);
      case 'controller': {
        if (asksHelp(rest)) {
          io.out(CONTROLLER_HELP);
          return 0;
        }
        if (rest.length > 0) throw new UsageError('controller takes no arguments; it reads the environment');
        // A signal while it starts (informers still listing) stops the start, not the process.
        const early = new AbortController();
        const onEarly = (): void => early.abort();
        process.once('SIGTERM', onEarly);
        process.once('SIGINT', onEarly);
        const running = await startController({
          env: process.env,
          out: io.out,
          signal: early.signal,
        }).finally(() => {
          process.off('SIGTERM', onEarly);
          process.off('SIGINT', onEarly);
        });
        if (early.signal.aborted) {
          await running.stop();
          return 0;
        }
        return await untilSignal(() => running.stop());
      }
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (error) {
    if (
      error instanceof UsageError ||
      (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS'))
    ) {
      io.err(`agentkourier: ${error.message}\n\n${USAGE}`);
      return 2;
    }
    throw error;
  }
}

if (import.meta.main) {
  const io: Io = {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
  };
  run(process.argv.slice(2), io).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      io.err(`agentkourier: ${error instanceof Error ? error.message : String(error)}`);
      process.exitCode = 1;
    },
  );
}
