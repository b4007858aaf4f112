"""Spans for model calls and tool calls, after the OpenTelemetry GenAI conventions.

Only ``opentelemetry-api`` is used: without an SDK (or with tracing off) every span
is a no-op. Message contents and tool arguments are never recorded.
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, StatusCode, Tracer

if TYPE_CHECKING:
    from ratchet.types import Usage

    from ._context import RunContext

_global_tracer = trace.get_tracer("ratchet.agents")
_tracer: ContextVar[Tracer | None] = ContextVar("ratchet_agents_tracer", default=None)


@contextmanager
def use_tracer(tracer: Tracer) -> Generator[None]:
    """Make spans of the calls inside go to ``tracer`` instead of the global provider's
    (the worker sets it per activity, so a client can bring its own provider)."""
    token = _tracer.set(tracer)
    try:
        yield
    finally:
        _tracer.reset(token)


@contextmanager
def chat_span(provider: str, model: str | None, context: RunContext) -> Generator[Span]:
    """A ``chat {model}`` span around one model call; see :func:`record_response`."""
    name = f"chat {model}" if model else "chat"
    with _span(name, SpanKind.CLIENT) as span:
        if span.is_recording():
            span.set_attributes(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": provider,
                    "gen_ai.system": provider,  # the name before semconv 1.37, for older backends
                    **({"gen_ai.request.model": model} if model else {}),
                    **_ratchet_attributes(context),
                }
            )
        yield span


def record_response(span: Span, model: str | None, usage: Usage) -> None:
    if not span.is_recording():
        return
    if model:
        span.set_attribute("gen_ai.response.model", model)
    span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
    span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
    if usage.cost_usd:
        span.set_attribute("ratchet.usage.cost_usd", usage.cost_usd)


@contextmanager
def tool_span(tool: str, call_id: str, context: RunContext) -> Generator[Span]:
    """An ``execute_tool {tool}`` span around one tool call."""
    with _span(f"execute_tool {tool}", SpanKind.INTERNAL) as span:
        if span.is_recording():
            span.set_attributes(
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": tool,
                    "gen_ai.tool.call.id": call_id,
                    "gen_ai.tool.type": "function",
                    **_ratchet_attributes(context),
                }
            )
        yield span


def mark_failed(span: Span, error_type: str) -> None:
    """Mark a call that failed without raising (e.g. a tool error the model will read)."""
    if span.is_recording():
        span.set_attribute("error.type", error_type)
        span.set_status(StatusCode.ERROR)


@contextmanager
def _span(name: str, kind: SpanKind) -> Generator[Span]:
    tracer = _tracer.get() or _global_tracer
    # Exception messages and stack traces can quote prompts or arguments: only the
    # exception's type is recorded.
    span = tracer.start_span(name, kind=kind, record_exception=False)
    if not span.get_span_context().is_valid:
        yield span  # no SDK: skip making it current, which costs more than the rest
        return
    with trace.use_span(span, end_on_exit=True, record_exception=False):
        try:
            yield span
        except BaseException as e:
            mark_failed(span, type(e).__qualname__)
            raise


def _ratchet_attributes(context: RunContext) -> dict[str, str | int]:
    attributes: dict[str, str | int] = {
        "gen_ai.agent.name": context.agent,
        "ratchet.agent": context.agent,
        "ratchet.run_id": context.run_id,
        "ratchet.turn": context.turn,
        "ratchet.attempt": context.attempt,
    }
    thread_id = getattr(context.thread, "id", None)
    if thread_id:
        attributes["gen_ai.conversation.id"] = thread_id
    return attributes
