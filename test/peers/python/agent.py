"""Independent A2A test peer built on the official Python SDK (a2a-sdk 1.3.0).

Serves A2A 1.0 and 0.3 (compat) over JSON-RPC with SSE streaming:

  POST /a2a                                  JSON-RPC endpoint (1.0 + 0.3 methods)
  GET  /a2a/.well-known/agent-card.json      agent card
  GET  /.well-known/agent-card.json          agent card (same document)

Usage:  python agent.py [--port 0] [--log-level warning] [--no-streaming]

--no-streaming: the card says capabilities.streaming false, so the SDK refuses the streaming
methods (-32004) and a client must send with SendMessage and poll GetTask.

Prints exactly one line on stdout once listening:  READY http://127.0.0.1:<port>/a2a
Exits 0 on SIGTERM / SIGINT.

Behaviour, keyed on the last line of the first text part of the user message:
  (default)  task, working, 3 chunks of artifact "answer" ("chunk 0 " ...), completed
  "ask"      task, input-required ("What is your name?"); the follow-up message on
             that taskId gets artifact "hello <answer>" and completes
  "slow"     task, working, one chunk, waits up to 3 s (cancellable), second chunk,
             completed; CancelTask publishes canceled
  "fail"     task, failed with status message "rate limit exceeded"
  "message"  a bare Message reply "just a message" (no task)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys

from collections.abc import AsyncIterator, Iterator


# opentelemetry-api arrives transitively (via google-api-core), which switches on
# the SDK's tracing wrappers; they only add noisy "Failed to detach context"
# tracebacks to stderr here. Must be set before `a2a` is imported.
os.environ.setdefault('OTEL_INSTRUMENTATION_A2A_SDK_ENABLED', 'false')

import uvicorn  # noqa: E402

from starlette.applications import Starlette  # noqa: E402

from a2a.helpers import new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    Role,
    TaskState,
)


logger = logging.getLogger('python-peer')

RPC_PATH = '/a2a'
CARD_PATH = '/.well-known/agent-card.json'
ARTIFACT_ID = 'answer'
SLOW_WAIT_SECONDS = 3.0


def first_text(message: Message | None) -> str:
    """The text of the first text part of a message ('' if none)."""
    if message is None:
        return ''
    for part in message.parts:
        if part.HasField('text'):
            return part.text
    return ''


class PeerExecutor(AgentExecutor):
    """Scripted executor; see the module docstring for the behaviours."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        # The last line: a broker puts a label line in front of what the person wrote.
        lines = first_text(context.message).strip().splitlines()
        text = lines[-1].strip() if lines else ''
        task = context.current_task

        # Follow-up on a task waiting for input: answer it and complete.
        if task is not None and task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            updater = TaskUpdater(event_queue, task.id, task.context_id)
            await updater.start_work()
            await updater.add_artifact(
                [new_text_part(f'hello {text}')],
                artifact_id=ARTIFACT_ID,
                last_chunk=True,
            )
            await updater.complete()
            return

        if text == 'message' and task is None:
            await event_queue.enqueue_event(
                new_text_message(
                    'just a message',
                    context_id=context.context_id,
                    role=Role.ROLE_AGENT,
                )
            )
            return

        if task is None:
            # context.message already carries the server-generated task/context ids.
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)

        if text == 'ask':
            await updater.requires_input(
                updater.new_agent_message([new_text_part('What is your name?')])
            )
            return

        if text == 'fail':
            await updater.failed(
                updater.new_agent_message([new_text_part('rate limit exceeded')])
            )
            return

        await updater.start_work()

        if text == 'slow':
            await updater.add_artifact(
                [new_text_part('chunk 0 ')], artifact_id=ARTIFACT_ID, append=False
            )
            # The framework cancels this coroutine (CancelledError) on CancelTask,
            # after calling self.cancel(), which publishes the canceled status.
            await asyncio.sleep(SLOW_WAIT_SECONDS)
            await updater.add_artifact(
                [new_text_part('chunk 1 ')],
                artifact_id=ARTIFACT_ID,
                append=True,
                last_chunk=True,
            )
            await updater.complete()
            return

        for i in range(3):
            await updater.add_artifact(
                [new_text_part(f'chunk {i} ')],
                artifact_id=ARTIFACT_ID,
                append=i > 0,
                last_chunk=i == 2,
            )
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        task_id = context.task_id or (task.id if task else '')
        context_id = context.context_id or (task.context_id if task else '')
        await TaskUpdater(event_queue, task_id, context_id).cancel()


def build_card(url: str, versions: list[str], streaming: bool = True) -> AgentCard:
    return AgentCard(
        name='python-peer',
        description='Scripted A2A test peer on the official Python SDK (a2a-sdk).',
        version='1.0.0',
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding='JSONRPC', protocol_version=v)
            for v in versions
        ],
        capabilities=AgentCapabilities(streaming=streaming, push_notifications=False),
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain'],
        skills=[
            AgentSkill(
                id='scripted',
                name='Scripted replies',
                description=(
                    'Replies by the first text part: default (3 chunks), ask, slow, '
                    'fail, message.'
                ),
                tags=['test'],
                examples=['hello', 'ask', 'slow', 'fail', 'message'],
            )
        ],
    )


def build_app(url: str, versions: list[str], streaming: bool = True) -> Starlette:
    card = build_card(url, versions, streaming)
    handler = DefaultRequestHandler(
        agent_executor=PeerExecutor(),
        task_store=InMemoryTaskStore(),
        agent_card=card,
    )

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        yield
        await handler.aclose()

    routes = [
        *create_agent_card_routes(card, card_url=RPC_PATH + CARD_PATH),
        *create_agent_card_routes(card, card_url=CARD_PATH),
        *create_jsonrpc_routes(handler, rpc_url=RPC_PATH, enable_v0_3_compat=True),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


class PeerServer(uvicorn.Server):
    """uvicorn.Server that exits 0 on SIGTERM/SIGINT.

    Stock uvicorn re-raises the captured signal after a graceful shutdown, so
    the process would die "by signal". We keep uvicorn's own handler (so
    sse-starlette still sees the shutdown and closes open streams) but do not
    re-raise.
    """

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        originals = {
            sig: signal.signal(sig, self.handle_exit)
            for sig in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            yield
        finally:
            for sig, handler in originals.items():
                signal.signal(sig, handler)


async def serve(port: int, log_level: str, versions: list[str], streaming: bool = True) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(('127.0.0.1', port))
    except OSError as e:
        sock.close()
        sys.stderr.write(f'python-peer: cannot bind 127.0.0.1:{port}: {e}\n')
        sys.exit(1)
    sock.listen(128)
    sock.setblocking(False)
    real_port = sock.getsockname()[1]
    url = f'http://127.0.0.1:{real_port}{RPC_PATH}'

    config = uvicorn.Config(
        build_app(url, versions, streaming),
        log_level=log_level,
        access_log=log_level in ('debug', 'trace'),
        lifespan='on',
        timeout_graceful_shutdown=3,
    )
    server = PeerServer(config)
    serve_task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started and not serve_task.done():
        await asyncio.sleep(0.01)
    if server.started:
        sys.stdout.write(f'READY {url}\n')
        sys.stdout.flush()
    await serve_task


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--port', type=int, default=0, help='0 = pick a free port')
    parser.add_argument(
        '--versions',
        default='1.0,0.3',
        help='protocol versions the card lists, in order (e.g. "0.3" to make clients speak 0.3)',
    )
    parser.add_argument(
        '--no-streaming',
        action='store_true',
        help='advertise capabilities.streaming false (the streaming methods answer -32004)',
    )
    parser.add_argument(
        '--log-level',
        default='warning',
        choices=['critical', 'error', 'warning', 'info', 'debug', 'trace'],
    )
    args = parser.parse_args()
    logging.basicConfig(level=args.log_level.upper() if args.log_level != 'trace' else 'DEBUG',
                        stream=sys.stderr)
    versions = [v.strip() for v in args.versions.split(",") if v.strip()]
    asyncio.run(serve(args.port, args.log_level, versions, not args.no_streaming))


if __name__ == '__main__':
    main()
