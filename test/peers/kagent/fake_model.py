"""A scripted, OpenAI-compatible chat model for kagent's runtime in tests (no network, no key).

POST /v1/chat/completions answers from the conversation so far, so the same script drives a
turn and its resume:
  - no tool result since the last user message: ask for tools, chosen by the user's words
    ("approve" -> add_numbers and check_status in one parallel call, "steps" -> echo_text);
  - otherwise: a final text that quotes the tool results.
Prints "READY <port>" once it listens.
"""

import argparse
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCRIPTS = {
    "approve": [
        ("call_add", "add_numbers", {"a": 2, "b": 3}),
        ("call_status", "check_status", {"service": "payments"}),
    ],
    "steps": [("call_echo", "echo_text", {"text": "hello"})],
}


def text_of(message):
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def reply(messages):
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    results = [m for m in messages[last_user + 1 :] if m.get("role") == "tool"]
    if not results:
        words = text_of(messages[last_user]).lower() if last_user >= 0 else ""
        for keyword, calls in SCRIPTS.items():
            if keyword in words:
                return {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                        for cid, name, args in calls
                    ],
                }, "tool_calls"
        return {"role": "assistant", "content": "Nothing to do."}, "stop"
    summary = "; ".join(text_of(m) for m in results)
    return {"role": "assistant", "content": f"Done: {summary}"}, "stop"


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))) or b"{}")
        if not self.path.endswith("/chat/completions"):
            self.send_error(404)
            return
        message, finish = reply(body.get("messages", []))
        payload = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"READY {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
