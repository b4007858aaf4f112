"""Tracing and metrics against real parts: a dev server, an OTLP/HTTP receiver, a
Prometheus endpoint served by the Temporal runtime."""

from __future__ import annotations

import asyncio
import gzip
import re
import socket
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from ratchet.agents import ModelPrice, ScriptedModel, ToolCallingAgent, tool
from ratchet.client import AgentClient
from ratchet.devserver import DevServer
from ratchet.telemetry import create_tracer_provider, metrics_runtime
from ratchet.worker import build_worker

PROMPT = "PROMPT-MARKER-4d1f Oslo or Lisbon?"
CITY = "ARGUMENT-MARKER-9c2e"
TOOL_OUTPUT = "RESULT-MARKER-77ab light snow"
MARKERS = (b"PROMPT-MARKER-4d1f", b"ARGUMENT-MARKER-9c2e", b"RESULT-MARKER-77ab")
PRICE = ModelPrice(input_per_million=1000, output_per_million=2000)
"""Whole micro-dollars per token, so per-turn and per-run costs agree exactly."""


@tool
def weather(city: str) -> str:
    """Today's forecast for a city."""
    return TOOL_OUTPUT


@tool(durable=True)
def book(city: str) -> str:
    """Book a trip (its own activity)."""
    return f"booked {city}"


def travel_agent(model_name: str = "scripted-travel") -> ToolCallingAgent:
    script = [
        ScriptedModel.call("weather", city=CITY),
        ScriptedModel.call("book", city=CITY),
        "Go to Lisbon.",
    ]
    return ToolCallingAgent(ScriptedModel(script, name=model_name, price=PRICE), [weather, book])


@dataclass
class ExportedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    attributes: dict[str, Any]
    service: str


class OtlpReceiver:
    """An OTLP/HTTP collector: keeps every ``POST /v1/traces`` request, answers 200."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.requests: list[ExportTraceServiceRequest] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                if self.path != "/v1/traces":
                    self.send_error(404)
                    return
                request = ExportTraceServiceRequest.FromString(body)
                receiver.bodies.append(body)
                receiver.requests.append(request)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def spans(self) -> list[ExportedSpan]:
        found = []
        for request in self.requests:
            for resource_spans in request.resource_spans:
                resource = _attributes(resource_spans.resource.attributes)
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        found.append(
                            ExportedSpan(
                                name=span.name,
                                trace_id=span.trace_id.hex(),
                                span_id=span.span_id.hex(),
                                parent_id=span.parent_span_id.hex(),
                                kind=span.kind,
                                attributes=_attributes(span.attributes),
                                service=resource.get("service.name", ""),
                            )
                        )
        return found

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _attributes(pairs: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in pairs}


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


@pytest.fixture
def otlp() -> Any:
    receiver = OtlpReceiver()
    yield receiver
    receiver.close()


SPAN_KIND_CLIENT = 3


async def test_run_is_one_trace_with_model_and_tool_spans_and_no_content(
    temporal_server: DevServer, task_queue: str, otlp: OtlpReceiver
):
    provider = create_tracer_provider(otlp.url, service_name="ratchet-test")
    try:
        client = await AgentClient.connect(
            temporal_server.address, task_queue=task_queue, tracing=provider
        )
        async with build_worker(client, {"travel": travel_agent}):
            result = await client.run("travel", PROMPT)
        assert await asyncio.to_thread(provider.force_flush, 10_000)
    finally:
        provider.shutdown()

    spans = otlp.spans()
    by_id = {s.span_id: s for s in spans}
    names = [s.name for s in spans]

    def ancestors(span: ExportedSpan) -> list[str]:
        chain = []
        while span.parent_id:
            span = by_id[span.parent_id]  # a missing parent fails here
            chain.append(span.name)
        return chain

    assert {s.trace_id for s in spans} == {spans[0].trace_id}, "one trace for the whole run"
    assert {s.service for s in spans} == {"ratchet-test"}
    roots = [s for s in spans if not s.parent_id]
    assert [r.name for r in roots] == ["StartWorkflow:AgentRun"]
    # Temporal's TracingInterceptor: the workflow's own spans (run, schedule an
    # activity, complete) are instants under the client's span; each activity's span
    # runs under the span that scheduled it.
    for name in ("RunWorkflow:AgentRun", "CompleteWorkflow:AgentRun"):
        [workflow_span] = [s for s in spans if s.name == name]
        assert ancestors(workflow_span) == ["StartWorkflow:AgentRun"]
    assert names.count("RunActivity:ratchet.turn") == 3
    assert names.count("RunActivity:ratchet.tool") == 1

    chats = sorted(
        (s for s in spans if s.name == "chat scripted-travel"),
        key=lambda s: s.attributes["ratchet.turn"],
    )
    assert len(chats) == 3
    for turn, chat in enumerate(chats, start=1):
        assert ancestors(chat) == [
            "RunActivity:ratchet.turn",
            "StartActivity:ratchet.turn",
            "StartWorkflow:AgentRun",
        ]
        assert chat.kind == SPAN_KIND_CLIENT
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.provider.name"] == "scripted"
        assert chat.attributes["gen_ai.system"] == "scripted"
        assert chat.attributes["gen_ai.request.model"] == "scripted-travel"
        assert chat.attributes["gen_ai.response.model"] == "scripted-travel"
        assert chat.attributes["gen_ai.agent.name"] == "travel"
        assert chat.attributes["ratchet.turn"] == turn
        assert chat.attributes["ratchet.attempt"] == 1
        assert chat.attributes["gen_ai.usage.input_tokens"] > 0
        assert "error.type" not in chat.attributes
    assert sum(c.attributes["gen_ai.usage.input_tokens"] for c in chats) == (
        result.usage.input_tokens
    )
    assert sum(c.attributes["gen_ai.usage.output_tokens"] for c in chats) == (
        result.usage.output_tokens
    )
    assert sum(c.attributes["ratchet.usage.cost_usd"] for c in chats) == pytest.approx(
        result.usage.cost_usd
    )
    # Each turn's spans hang under their own activity.
    assert len({c.parent_id for c in chats}) == 3

    [in_turn] = [s for s in spans if s.name == "execute_tool weather"]
    assert in_turn.parent_id == chats[0].parent_id, "the in-turn tool runs in turn 1's activity"
    assert in_turn.attributes["gen_ai.operation.name"] == "execute_tool"
    assert in_turn.attributes["gen_ai.tool.name"] == "weather"
    assert in_turn.attributes["gen_ai.tool.call.id"] == "call_0_0"
    assert in_turn.attributes["ratchet.turn"] == 1

    [durable] = [s for s in spans if s.name == "execute_tool book"]
    assert ancestors(durable) == [
        "RunActivity:ratchet.tool",
        "StartActivity:ratchet.tool",
        "StartWorkflow:AgentRun",
    ]
    assert durable.attributes["gen_ai.tool.call.id"] == "call_1_0"

    # Privacy: neither the prompt, nor tool arguments, nor tool results are exported
    # anywhere (attributes, events, status), only names, ids and counts.
    assert otlp.bodies
    for body in otlp.bodies:
        for marker in MARKERS:
            assert marker not in body


async def test_failed_tool_call_marks_its_span_with_the_error_type(
    temporal_server: DevServer, task_queue: str, otlp: OtlpReceiver
):
    @tool
    def broken(city: str) -> str:
        """Always fails."""
        raise LookupError(f"no forecast for {city}")

    script = [ScriptedModel.call("broken", city=CITY), "Sorry."]
    provider = create_tracer_provider(otlp.url)
    try:
        client = await AgentClient.connect(
            temporal_server.address, task_queue=task_queue, tracing=provider
        )
        agent = ToolCallingAgent(ScriptedModel(script), [broken])
        async with build_worker(client, {"broken": agent}):
            await client.run("broken", PROMPT)
        assert await asyncio.to_thread(provider.force_flush, 10_000)
    finally:
        provider.shutdown()

    [span] = [s for s in otlp.spans() if s.name == "execute_tool broken"]
    assert span.attributes["error.type"] == "LookupError"
    assert all(marker not in body for body in otlp.bodies for marker in MARKERS)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


Sample = tuple[str, dict[str, str], float]


def _scrape(url: str) -> list[Sample]:
    with urllib.request.urlopen(url, timeout=5) as response:
        text = response.read().decode()
    samples = []
    for line in text.splitlines():
        match = re.match(r"^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$", line)
        if match and not line.startswith("#"):
            labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match.group(2) or ""))
            samples.append((match.group(1), labels, float(match.group(3))))
    return samples


def _value_of(samples: list[Sample], name: str, **labels: str) -> float | None:
    values = [v for n, have, v in samples if n == name and labels.items() <= have.items()]
    return sum(values) if values else None


async def _poll_metrics(
    address: str, ready: Callable[[list[Sample]], bool], within: float = 30
) -> list[Sample]:
    """Scrape until ``ready`` holds or ``within`` seconds pass (the runtime may publish a
    counter a little after the activity recorded it); the caller asserts."""
    deadline = time.monotonic() + within
    while True:
        samples = await asyncio.to_thread(_scrape, f"http://{address}/metrics")
        if ready(samples) or time.monotonic() > deadline:
            return samples
        await asyncio.sleep(0.2)


async def test_prometheus_serves_temporal_metrics_and_ratchet_usage_per_agent(
    temporal_server: DevServer, task_queue: str
):
    # The Temporal runtime is process-wide state: this test gets its own runtime
    # (and so its own client), serving Prometheus on a free port.
    address = f"127.0.0.1:{_free_port()}"
    client = await AgentClient.connect(
        temporal_server.address, task_queue=task_queue, runtime=metrics_runtime(address)
    )
    async with build_worker(client, {"priced": travel_agent}):
        result = await client.run("priced", PROMPT)
    assert result.usage.cost_usd > 0

    expected = {
        ("ratchet_turns", ()): result.turns,
        ("ratchet_model_requests", ()): result.usage.requests,
        ("ratchet_tokens", (("token_type", "input"),)): result.usage.input_tokens,
        ("ratchet_tokens", (("token_type", "output"),)): result.usage.output_tokens,
        ("ratchet_cost_microusd", ()): round(result.usage.cost_usd * 1_000_000),
    }

    def observed(samples: list[Sample]) -> dict[tuple[str, tuple], float | None]:
        return {
            (name, labels): _value_of(samples, name, agent="priced", **dict(labels))
            for name, labels in expected
        }

    samples = await _poll_metrics(address, lambda samples: observed(samples) == expected)
    assert observed(samples) == expected

    turn_labels = {"agent": "priced", "task_queue": task_queue, "activity_type": "ratchet.turn"}
    assert _value_of(samples, "ratchet_turns", **turn_labels) == result.turns
    assert _value_of(samples, "temporal_workflow_completed", task_queue=task_queue) == 1
    assert (
        _value_of(
            samples, "temporal_activity_execution_latency_count", activity_type="ratchet.turn"
        )
        == result.turns
    )


AGENTS = {"travel": travel_agent}
"""For the ``ratchet worker`` process below."""


async def test_worker_command_traces_from_env_and_serves_metrics(
    temporal_server: DevServer,
    task_queue: str,
    otlp: OtlpReceiver,
    worker_processes: Any,
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.url)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    address = f"127.0.0.1:{_free_port()}"
    worker = worker_processes(
        "--agents", "tests.client.test_telemetry:AGENTS", "--metrics-address", address
    )
    provider = create_tracer_provider(otlp.url, service_name="ratchet-client")
    try:
        client = await AgentClient.connect(
            temporal_server.address, task_queue=task_queue, tracing=provider
        )
        result = await client.run("travel", PROMPT)
        assert await asyncio.to_thread(provider.force_flush, 10_000)
    finally:
        provider.shutdown()
    samples = await _poll_metrics(
        address, lambda samples: _value_of(samples, "ratchet_turns", agent="travel") is not None
    )
    assert _value_of(samples, "ratchet_turns", agent="travel") == result.turns
    await asyncio.to_thread(worker.stop)  # SIGTERM: the worker flushes its spans and exits

    spans = otlp.spans()
    [start] = [s for s in spans if s.service == "ratchet-client"]
    assert start.name == "StartWorkflow:AgentRun"
    from_worker = [s for s in spans if s.service == "ratchet-worker"]
    assert {s.trace_id for s in from_worker} == {start.trace_id}
    assert [s.name for s in from_worker].count("chat scripted-travel") == 3
    assert [s.name for s in from_worker].count("execute_tool weather") == 1
