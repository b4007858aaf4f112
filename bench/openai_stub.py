"""A scripted OpenAI Chat Completions server for the third-party integration benchmarks.

    with start_stub(steps=50) as stub:
        client = AsyncOpenAI(base_url=stub.base_url, api_key="x")

It answers ``POST /v1/chat/completions`` statelessly from the request body: with
fewer than ``steps`` assistant messages in ``messages`` it replies with one tool
call ``fetch({"page": <count>})``; otherwise with the content ``"done"``. Both
plain JSON and streaming (SSE) replies are supported. Stdlib only, one
``ThreadingHTTPServer`` on a free port of 127.0.0.1 in a daemon thread.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOOL_NAME = "fetch"
FINAL_TEXT = "done"


def reply_for(body: dict[str, Any], steps: int) -> dict[str, Any]:
    """The assistant message (role, content, tool_calls) the script gives for this request."""
    count = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
    if count < steps:
        call_id = f"call_{uuid.uuid4().hex[:24]}"  # unique, fixed length
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": TOOL_NAME, "arguments": json.dumps({"page": count})},
                }
            ],
        }
    return {"role": "assistant", "content": FINAL_TEXT}


def _usage(body_bytes: int) -> dict[str, int]:
    prompt = max(1, body_bytes // 4)
    return {"prompt_tokens": prompt, "completion_tokens": 10, "total_tokens": prompt + 10}


@dataclass
class StubServer:
    steps: int
    server: ThreadingHTTPServer = field(repr=False)
    thread: threading.Thread = field(repr=False)
    requests: int = 0
    streamed_requests: int = 0

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)

    def __enter__(self) -> StubServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start_stub(steps: int) -> StubServer:
    """Start the scripted server for a workload of ``steps`` tool calls."""
    holder: dict[str, StubServer] = {}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            # Headers and body go out as two writes: without TCP_NODELAY, Nagle's
            # algorithm and the client's delayed ACK add about 40 ms to every reply.
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _send_json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send_json(200, {"object": "list", "data": []})
            else:
                self._send_json(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if self.path.split("?")[0].rstrip("/") not in (
                "/v1/chat/completions",
                "/chat/completions",
            ):
                self._send_json(404, {"error": {"message": f"no route {self.path}"}})
                return
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError as e:
                self._send_json(400, {"error": {"message": f"bad json: {e}"}})
                return
            stub = holder["stub"]
            with lock:
                stub.requests += 1
                if body.get("stream"):
                    stub.streamed_requests += 1
            message = reply_for(body, stub.steps)
            model = body.get("model", "stub")
            completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
            created = int(time.time())
            finish = "tool_calls" if message.get("tool_calls") else "stop"
            usage = _usage(len(raw))
            if body.get("stream"):
                self._stream(body, message, model, completion_id, created, finish, usage)
                return
            self._send_json(
                200,
                {
                    "id": completion_id,
                    "object": "chat.completion",
                    "created": created,
                    "model": model,
                    "choices": [
                        {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
                    ],
                    "usage": usage,
                },
            )

        def _stream(self, body, message, model, completion_id, created, finish, usage) -> None:
            def chunk(delta: dict[str, Any], finish_reason: str | None, **extra: Any) -> bytes:
                payload = {
                    "id": completion_id,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
                    if delta is not None
                    else [],
                    **extra,
                }
                return f"data: {json.dumps(payload)}\n\n".encode()

            parts = [chunk({"role": "assistant", "content": None}, None)]
            if message.get("tool_calls"):
                call = message["tool_calls"][0]
                parts.append(
                    chunk(
                        {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": call["id"],
                                    "type": "function",
                                    "function": {
                                        "name": call["function"]["name"],
                                        "arguments": call["function"]["arguments"],
                                    },
                                }
                            ]
                        },
                        None,
                    )
                )
            else:
                parts.append(chunk({"content": message["content"]}, None))
            parts.append(chunk({}, finish))
            if (body.get("stream_options") or {}).get("include_usage"):
                parts.append(chunk(None, None, usage=usage))
            parts.append(b"data: [DONE]\n\n")
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in parts:
                self.wfile.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="openai-stub", daemon=True)
    stub = StubServer(steps=steps, server=server, thread=thread)
    holder["stub"] = stub
    thread.start()
    return stub
