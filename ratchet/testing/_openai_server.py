"""A local HTTP server speaking the OpenAI Chat Completions and Responses APIs, for tests
(``ratchet.testing.OpenAIServer``).

A test scripts the replies in order; each POST to ``/v1/chat/completions`` or
``/v1/responses`` is recorded and answered with the next one (as JSON, or as
server-sent events when the script says so), so the real ``openai`` client is tested
over real HTTP. When the script runs out the server answers 500, so a test that
makes more requests than it planned for fails instead of passing by accident.
With ``context_window`` it counts each request's tokens (``BYTES_PER_TOKEN``) and
refuses one over the window as OpenAI does (400 ``context_length_exceeded``),
without using a scripted reply. With ``rate_limit`` it answers 429 with
``retry-after`` beyond that many requests a second (a token bucket,
``ratchet.testing._rate_limit``), as a provider does. Standard library only.
"""

from __future__ import annotations

import itertools
import json
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ._rate_limit import Answer, TokenBucket, retry_headers

CHAT_PATH = "/v1/chat/completions"
RESPONSES_PATH = "/v1/responses"


@dataclass
class Request:
    """One request the server received: header names are lower-case."""

    path: str
    headers: dict[str, str]
    body: Any
    received_at: float
    """``time.monotonic()`` when it arrived."""
    size: int = 0
    """The body's length in bytes."""
    tokens: int | None = None
    """Its prompt tokens, as a server with a ``context_window`` counts them (and
    reports them in the reply's usage)."""


@dataclass
class Reply:
    """One HTTP response."""

    status: int
    body: bytes
    headers: dict[str, str]


def json_reply(status: int, payload: Any, headers: dict[str, str] | None = None) -> Reply:
    return Reply(
        status,
        json.dumps(payload).encode(),
        {"content-type": "application/json", **(headers or {})},
    )


def _error_reply(
    status: int, message: str, type: str, headers: dict[str, str] | None = None, **fields: str
) -> Reply:
    return json_reply(status, {"error": {"message": message, "type": type, **fields}}, headers)


def _counted(request: Request, usage: dict[str, int], prompt: str, total: str) -> dict[str, int]:
    """``usage`` with the prompt tokens the server counted, if it counts them."""
    if request.tokens is None:
        return usage
    completion = usage[total] - usage[prompt] if total in usage else 0
    counted = {**usage, prompt: request.tokens}
    return {**counted, total: request.tokens + completion} if total in usage else counted


def sse_reply(events: list[dict[str, Any]], *, named: bool = True) -> Reply:
    """Server-sent events: Responses events are named and numbered; chat chunks are
    bare ``data:`` lines ending with ``[DONE]``."""
    if named:
        body = "".join(
            f"event: {e['type']}\ndata: {json.dumps({**e, 'sequence_number': i})}\n\n"
            for i, e in enumerate(events)
        )
    else:
        body = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
    return Reply(200, body.encode(), {"content-type": "text/event-stream"})


def _chunks(
    head: dict[str, Any], message: dict[str, Any], finish_reason: str, usage: dict[str, int]
) -> list[dict[str, Any]]:
    """A chat completion as stream chunks: text word by word, each tool call in two parts."""
    deltas: list[dict[str, Any]] = [{"role": "assistant"}]
    words = (message.get("content") or "").split(" ")
    deltas += [{"content": w if i == 0 else " " + w} for i, w in enumerate(words) if w]
    for index, call in enumerate(message.get("tool_calls") or []):
        arguments = call["function"]["arguments"]
        half = len(arguments) // 2
        first = {"name": call["function"]["name"], "arguments": arguments[:half]}
        deltas.append({"tool_calls": [{"index": index, "id": call["id"], "function": first}]})
        rest = {"arguments": arguments[half:]}
        deltas.append({"tool_calls": [{"index": index, "function": rest}]})
    chunk = {**head, "object": "chat.completion.chunk"}
    chunks = [{**chunk, "choices": [{"index": 0, "delta": d}]} for d in deltas]
    chunks.append({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish_reason}]})
    chunks.append({**chunk, "choices": [], "usage": usage})
    return chunks


def _completion_reply(
    request: Request,
    message: dict[str, Any],
    finish_reason: str,
    usage: dict[str, int],
    stream: bool,
) -> Reply:
    body = request.body if isinstance(request.body, dict) else {}
    usage = _counted(request, usage, "prompt_tokens", "total_tokens")
    head = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
        "created": int(time.time()),
        "model": body.get("model"),
    }
    if stream:
        return sse_reply(_chunks(head, message, finish_reason, usage), named=False)
    choice = {"index": 0, "message": message, "finish_reason": finish_reason}
    return json_reply(
        200, {**head, "object": "chat.completion", "choices": [choice], "usage": usage}
    )


class OpenAIServer:
    """Answers OpenAI API requests from a FIFO script; use it as a context manager.

    ``answer`` answers every request the script does not (``tool_loop`` is one);
    ``record=False`` keeps counts only, not the requests (long benchmarks send
    whole conversations, megabytes each). ``context_window`` (tokens) refuses
    longer prompts with the service's own error (``refused`` counts them).
    ``rate_limit`` (requests per second, a token bucket of one second's worth)
    answers the requests beyond it 429 with ``retry-after``, before the script
    or ``answer`` sees them; ``answers`` records every status with its time.
    """

    paths: tuple[str, ...] = (CHAT_PATH, RESPONSES_PATH)
    """The paths it answers (others get 404)."""
    BYTES_PER_TOKEN = 3
    """How a server with a ``context_window`` counts a prompt: its request body's
    bytes, three to a token (denser than Ratchet's estimate, as JSON-heavy prompts are)."""

    def __init__(
        self,
        *,
        answer: Callable[[Request], Reply] | None = None,
        record: bool = True,
        context_window: int | None = None,
        rate_limit: float | None = None,
    ) -> None:
        self.requests: list[Request] = []
        """The requests received, in order (with ``record``)."""
        self.context_window = context_window
        self.refused = 0
        """Requests refused as over the context window."""
        self.request_count = 0
        self.answers: list[Answer] = []
        """What it answered, in order: each status with its time (kept with or
        without ``record``)."""
        self.limit = TokenBucket(rate_limit) if rate_limit is not None else None
        self._fallback = answer
        self._record = record
        self._response_ids = itertools.count(1)
        self._script: deque[Callable[[Request], Reply]] = deque()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.owner = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def ok(self) -> int:
        """Requests answered 200."""
        return sum(a.status == 200 for a in self.answers)

    @property
    def throttled(self) -> int:
        """Requests answered 429 (over ``rate_limit``)."""
        return sum(a.status == 429 for a in self.answers)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def _serve(self) -> None:
        # A short poll interval: closing the server waits for at most one interval.
        self._httpd.serve_forever(poll_interval=0.02)

    def __enter__(self) -> OpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def text(
        self,
        content: str,
        *,
        prompt_tokens: int = 10,
        completion_tokens: int = 5,
        stream: bool = False,
    ) -> None:
        """Script a reply with assistant text (``stream``: as chunks, word by word)."""
        self._completion(
            {"role": "assistant", "content": content},
            "stop",
            prompt_tokens,
            completion_tokens,
            stream,
        )

    def tool_calls(
        self,
        *calls: tuple[str, str, str],
        prompt_tokens: int = 10,
        completion_tokens: int = 5,
        stream: bool = False,
    ) -> None:
        """Script a reply asking for tools; each call is ``(id, name, arguments JSON text)``."""
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}
                for id, name, arguments in calls
            ],
        }
        self._completion(message, "tool_calls", prompt_tokens, completion_tokens, stream)

    def error(
        self,
        status: int,
        message: str,
        *,
        type: str = "api_error",
        headers: dict[str, str] | None = None,
    ) -> None:
        """Script an HTTP error with an OpenAI-style JSON body and optional extra headers."""
        self._script.append(lambda request: _error_reply(status, message, type, headers))

    def raw(self, body: str, *, status: int = 200, content_type: str = "application/json") -> None:
        """Script a response with exactly this body, e.g. malformed JSON."""
        self._script.append(
            lambda request: Reply(status, body.encode(), {"content-type": content_type})
        )

    def response(
        self,
        text: str | None = None,
        *calls: tuple[str, str, str],
        input_tokens: int = 10,
        output_tokens: int = 5,
        stream: bool = False,
    ) -> str:
        """Script a Responses API reply: text and/or function calls ``(call_id, name,
        arguments)``. Returns the response id; ``stream`` sends it as server-sent events."""
        response_id = f"resp_{next(self._response_ids)}"
        output: list[dict[str, Any]] = []
        if text is not None:
            output.append(
                {
                    "type": "message",
                    "id": f"msg_{response_id}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            )
        for call_id, name, arguments in calls:
            output.append(
                {
                    "type": "function_call",
                    "id": f"fc_{call_id}",
                    "call_id": call_id,
                    "name": name,
                    "arguments": arguments,
                    "status": "completed",
                }
            )

        def reply(request: Request) -> Reply:
            body = {
                "id": response_id,
                "object": "response",
                "created_at": int(time.time()),
                "model": request.body.get("model"),
                "status": "completed",
                "output": output,
                "parallel_tool_calls": True,
                "tool_choice": "auto",
                "tools": [],
                "previous_response_id": request.body.get("previous_response_id"),
                "usage": _counted(
                    request,
                    {
                        "input_tokens": input_tokens,
                        "output_tokens": output_tokens,
                        "total_tokens": input_tokens + output_tokens,
                    },
                    "input_tokens",
                    "total_tokens",
                ),
            }
            if not stream:
                return json_reply(200, body)
            events = [
                {"type": "response.created", "response": {**body, "status": "in_progress"}},
                *(
                    {"type": "response.output_text.delta", "delta": word, "output_index": 0}
                    for word in (text or "").split(" ")
                ),
                {"type": "response.completed", "response": body},
            ]
            return sse_reply(events)

        self._script.append(reply)
        return response_id

    def _completion(
        self,
        message: dict[str, Any],
        finish_reason: str,
        prompt_tokens: int,
        completion_tokens: int,
        stream: bool = False,
    ) -> None:
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }

        self._script.append(
            lambda request: _completion_reply(request, message, finish_reason, usage, stream)
        )

    def rate_limited(self, wait: float) -> Reply:
        """The answer to a request over ``rate_limit``, as OpenAI words it."""
        message = (
            f"Rate limit reached for requests per second (RPS): Limit {self.limit.rate:g}. "
            if self.limit is not None
            else "Rate limit reached. "
        ) + f"Please try again in {wait * 1000:.0f}ms."
        return _error_reply(
            429, message, "requests", retry_headers(wait), code="rate_limit_exceeded"
        )

    def refusal(self, request: Request) -> Reply | None:
        """The error the real service answers ``request`` with, if it refuses it
        whatever the script says (``None``: it does not)."""
        return None

    def overflow(self, path: str, tokens: int, window: int) -> Reply:
        """The refusal of a prompt of ``tokens`` over ``window``, as OpenAI words it."""
        if path == RESPONSES_PATH:
            message = (
                "Your input exceeds the context window of this model. Please adjust your "
                "input and try again."
            )
            param = "input"
        else:
            message = (
                f"This model's maximum context length is {window} tokens. However, your "
                f"messages resulted in {tokens} tokens. Please reduce the length of the messages."
            )
            param = "messages"
        return _error_reply(
            400, message, "invalid_request_error", param=param, code="context_length_exceeded"
        )

    @classmethod
    def answering(
        cls, text: str, *, rate_limit: float | None = None, record: bool = False
    ) -> OpenAIServer:
        """A server that needs no script: every chat completion gets the assistant
        text ``text`` (streamed when the request asks); for benchmarks and fleets
        of any size (counted, not recorded, unless ``record``)."""

        def answer(request: Request) -> Reply:
            body = request.body if isinstance(request.body, dict) else {}
            message = {"role": "assistant", "content": text}
            usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
            return _completion_reply(request, message, "stop", usage, bool(body.get("stream")))

        return cls(answer=answer, record=record, rate_limit=rate_limit)

    @classmethod
    def tool_loop(cls, steps: int, *, tool: str = "fetch", final: str = "done") -> OpenAIServer:
        """A server that needs no script: a chat completion whose ``messages`` hold
        fewer than ``steps`` assistant messages since the last user message gets one
        call ``tool({"page": n})``, any other the text ``final`` (so each message to
        a session runs the loop too). Stateless, so any number of runs (of any
        framework) can share it; usage grows with the request's size."""

        def answer(request: Request) -> Reply:
            body = request.body if isinstance(request.body, dict) else {}
            roles = [m.get("role") for m in body.get("messages", [])]
            since = roles[len(roles) - roles[::-1].index("user") :] if "user" in roles else roles
            count = since.count("assistant")
            if count < steps:
                call = {
                    "id": f"call_{uuid.uuid4().hex[:24]}",
                    "type": "function",
                    "function": {"name": tool, "arguments": json.dumps({"page": count})},
                }
                message: dict[str, Any] = {"role": "assistant", "content": None}
                message["tool_calls"] = [call]
                finish = "tool_calls"
            else:
                message, finish = {"role": "assistant", "content": final}, "stop"
            prompt = max(1, request.size // 4)
            usage = {"prompt_tokens": prompt, "completion_tokens": 10, "total_tokens": prompt + 10}
            return _completion_reply(request, message, finish, usage, bool(body.get("stream")))

        return cls(answer=answer, record=False)

    def _answer(self, request: Request) -> Reply:
        reply = self._reply(request)
        with self._lock:
            self.answers.append(Answer(time.monotonic(), reply.status))
        return reply

    def _reply(self, request: Request) -> Reply:
        with self._lock:
            self.request_count += 1
            if self._record:
                self.requests.append(request)
            if request.path not in self.paths:
                served = " and ".join(self.paths)
                return _error_reply(404, f"The test server serves {served}.", "not_found")
            wait = self.limit.take() if self.limit is not None else 0.0
            if wait:
                return self.rate_limited(wait)
            refusal = self.refusal(request)
            if refusal is not None:
                self.refused += 1
                return refusal
            if self.context_window is not None:
                request.tokens = max(1, request.size // self.BYTES_PER_TOKEN)
                if request.tokens > self.context_window:
                    self.refused += 1
                    return self.overflow(request.path, request.tokens, self.context_window)
            if not self._script and self._fallback is not None:
                make = self._fallback
            elif not self._script:
                return _error_reply(
                    500,
                    f"The test server's script ran out at request {self.request_count}.",
                    "script_exhausted",
                )
            else:
                make = self._script.popleft()
        return make(request)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: clients reuse the connection

    def setup(self) -> None:
        super().setup()
        # Headers and body go out as two writes: without TCP_NODELAY, Nagle's
        # algorithm and the client's delayed ACK add about 40 ms to every reply.
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send(json_reply(200, {"object": "list", "data": []}))
        else:
            self._send(_error_reply(404, f"No route {self.path}.", "not_found"))

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length", 0)))
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw.decode(errors="replace")
        headers = {name.lower(): value for name, value in self.headers.items()}
        reply = self.server.owner._answer(  # type: ignore[attr-defined]
            Request(self.path, headers, body, time.monotonic(), len(raw))
        )
        self._send(reply)

    def _send(self, reply: Reply) -> None:
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(reply.body)))
        self.end_headers()
        self.wfile.write(reply.body)

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""
