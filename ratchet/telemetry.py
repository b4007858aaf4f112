"""Tracing (OpenTelemetry, OTLP/HTTP) and metrics (Prometheus, from the Temporal runtime).

Nothing here runs unless configured. Tracing is on when ``OTEL_EXPORTER_OTLP_ENDPOINT``
or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set (or when asked for in code); it needs
``pip install 'ratchet[otel]'``. Metrics are on when the worker is given
``--metrics-address`` or ``RATCHET_METRICS_ADDRESS``.

Spans: Temporal's ``TracingInterceptor`` on the client (and so on every worker built
from it) traces the run's workflow, each turn and tool activity, and carries the trace
from the client through the workflow into the activities; inside a turn
``ratchet.agents._tracing`` adds ``chat {model}`` and ``execute_tool {name}`` spans.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from opentelemetry import trace
from temporalio import activity

from ratchet.agents import use_tracer
from ratchet.errors import ConfigurationError
from ratchet.types import Usage

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
    from temporalio.client import Interceptor
    from temporalio.runtime import Runtime

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
METRICS_ADDRESS_VARIABLE = "RATCHET_METRICS_ADDRESS"
DEFAULT_SERVICE_NAME = "ratchet-worker"
TRACER_NAME = "ratchet"


def tracing_configured(env: Mapping[str, str] | None = None) -> bool:
    """Whether the environment names an OTLP endpoint for traces."""
    env = os.environ if env is None else env
    return any(env.get(name) for name in ENDPOINT_VARIABLES)


def create_tracer_provider(
    endpoint: str | None = None, *, service_name: str | None = None
) -> SdkTracerProvider:
    """A TracerProvider exporting over OTLP/HTTP in batches; not made global.

    ``endpoint`` is a collector's base URL (``http://localhost:4318``) or its full
    traces URL; without it the exporter reads the standard ``OTEL_EXPORTER_OTLP_*``
    variables. The service name is ``service_name``, else ``OTEL_SERVICE_NAME``, else
    ``ratchet-worker``.
    """
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as e:
        raise ConfigurationError(
            f"Tracing needs the OpenTelemetry SDK and OTLP exporter ({e.name} is missing): "
            "pip install 'ratchet[otel]', or unset OTEL_EXPORTER_OTLP_ENDPOINT."
        ) from e
    name = service_name or os.environ.get("OTEL_SERVICE_NAME") or DEFAULT_SERVICE_NAME
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: name}))
    exporter = OTLPSpanExporter(endpoint=_traces_url(endpoint) if endpoint else None)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def setup_tracing(
    endpoint: str | None = None, *, service_name: str | None = None
) -> trace.TracerProvider:
    """The process's tracer provider: the one already set if it is an SDK provider
    (an application's own), else a new :func:`create_tracer_provider`, made global."""
    current = trace.get_tracer_provider()
    if _is_sdk_provider(current):
        return current
    provider = create_tracer_provider(endpoint, service_name=service_name)
    trace.set_tracer_provider(provider)
    return provider


def tracing_interceptor(provider: trace.TracerProvider | None = None) -> Interceptor:
    """Temporal's tracing interceptor, using ``provider`` (default: the global one) for
    Temporal's spans and for the model and tool spans of the turns a worker runs."""
    try:
        from temporalio.contrib.opentelemetry import TracingInterceptor
    except ImportError as e:
        raise ConfigurationError(
            f"Tracing needs the OpenTelemetry SDK ({e.name} is missing): "
            "pip install 'ratchet[otel]'."
        ) from e
    from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput

    agents_tracer = trace.get_tracer("ratchet.agents", tracer_provider=provider)

    class _AgentSpans(ActivityInboundInterceptor):
        async def execute_activity(self, input: ExecuteActivityInput) -> Any:
            with use_tracer(agents_tracer):
                return await super().execute_activity(input)

    class _Tracing(TracingInterceptor):
        def intercept_activity(
            self, next: ActivityInboundInterceptor
        ) -> ActivityInboundInterceptor:
            return super().intercept_activity(_AgentSpans(next))

    return _Tracing(trace.get_tracer(TRACER_NAME, tracer_provider=provider))


def client_interceptors(tracing: bool | trace.TracerProvider | None) -> list[Interceptor]:
    """The interceptors ``AgentClient.connect(tracing=...)`` adds: ``None`` follows the
    environment, ``True`` uses the global provider (setting one up if there is none),
    a ``TracerProvider`` uses that one."""
    if tracing is None:
        tracing = tracing_configured()
    if tracing is False:
        return []
    if tracing is True:
        return [tracing_interceptor(setup_tracing())]
    return [tracing_interceptor(tracing)]


def flush_tracing(timeout_millis: int = 5000) -> None:
    """Export the spans still buffered by the global provider (before ``os._exit``)."""
    force_flush = getattr(trace.get_tracer_provider(), "force_flush", None)
    if force_flush is not None:
        force_flush(timeout_millis)


def metrics_address(address: str | None = None) -> str | None:
    """``address``, else ``RATCHET_METRICS_ADDRESS``, else ``None`` (metrics off)."""
    return address or os.environ.get(METRICS_ADDRESS_VARIABLE) or None


def metrics_runtime(address: str) -> Runtime:
    """A Temporal runtime serving Prometheus metrics on ``address`` (``host:port``,
    path ``/metrics``). Give it to the client: ``AgentClient.connect(runtime=...)``."""
    return worker_runtime(address)


CORE_LOGGER = "temporalio.core"
_EXPIRED_QUERY = "Query not found when attempting to respond"


def worker_runtime(metrics_address: str | None = None) -> Runtime:
    """A worker's Temporal runtime: the SDK core's warnings go to Python's logging
    (logger ``temporalio.core``, in the worker's format, where they went to stderr in
    colour), and Prometheus metrics are served on ``metrics_address`` if given."""
    from temporalio.runtime import (
        LogForwardingConfig,
        LoggingConfig,
        PrometheusConfig,
        Runtime,
        TelemetryConfig,
        TelemetryFilter,
    )

    metrics = None
    if metrics_address is not None:
        host, _, port = metrics_address.rpartition(":")
        if not host or not port.isdigit():
            raise ConfigurationError(
                f"Metrics address {metrics_address!r} must look like 'host:port', "
                "e.g. '0.0.0.0:9464'."
            )
        metrics = PrometheusConfig(
            bind_address=metrics_address, histogram_bucket_overrides=WAIT_BUCKETS
        )
    logger = logging.getLogger(CORE_LOGGER)
    if not any(isinstance(f, _ExpiredQueries) for f in logger.filters):
        logger.addFilter(_ExpiredQueries())
    forwarding = LogForwardingConfig(logger=logger, append_target_to_name=False)
    filter = TelemetryFilter(core_level="WARN", other_level="ERROR")
    logs = LoggingConfig(filter=filter, forwarding=forwarding)
    return Runtime(telemetry=TelemetryConfig(logging=logs, metrics=metrics))


class _ExpiredQueries(logging.Filter):
    """The core warns when it answers a query the server no longer holds (its caller
    timed out or went away: the caller was told). Nothing for an operator to do, so it
    is shown at INFO."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _EXPIRED_QUERY in record.getMessage() and record.levelno > logging.INFO:
            return logging.getLogger(CORE_LOGGER).isEnabledFor(logging.INFO)
        return True


SCHEDULE_TO_START = "ratchet_turn_schedule_to_start"
THROTTLES = "ratchet_turn_throttles"
WAIT_BUCKETS = {
    SCHEDULE_TO_START: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800]
}
"""Seconds from a queue that keeps up to one backlogged for half an hour (the runtime's
default buckets, 50 to 10,000, are for milliseconds)."""


def record_turn(agent: str, usage: Usage) -> None:
    """Count a finished turn of ``agent`` and what it used, on the activity's metric
    meter (a no-op unless the worker's client runtime exports metrics).

    Temporal counters hold integers, so cost is counted in millionths of a dollar.
    """
    if not activity.in_activity():
        return
    meter = activity.metric_meter().with_additional_attributes({"agent": agent})
    meter.create_counter("ratchet_turns", "Agent turns completed.").add(1)
    meter.create_counter("ratchet_model_requests", "Model calls made by turns.").add(usage.requests)
    tokens = meter.create_counter("ratchet_tokens", "Model tokens used by turns.", "tokens")
    tokens.add(usage.input_tokens, {"token_type": "input"})
    tokens.add(usage.output_tokens, {"token_type": "output"})
    meter.create_counter(
        "ratchet_cost_microusd",
        "Model cost of turns in millionths of a US dollar (models given a ModelPrice).",
        "microusd",
    ).add(round(usage.cost_usd * 1_000_000))


def record_attempt_start(info: activity.Info, agent: str) -> None:
    """Observe how long a turn attempt waited for a worker (schedule-to-start: the
    queue's backlog, its rate limit and its fairness), by fairness key."""
    wait = info.started_time - info.current_attempt_scheduled_time
    meter = activity.metric_meter().with_additional_attributes(_labels(info, agent))
    meter.create_histogram_float(
        SCHEDULE_TO_START,
        "Seconds each turn attempt waited between being scheduled and starting.",
        "s",
    ).record(max(0.0, wait.total_seconds()))


def record_throttle(info: activity.Info, agent: str) -> None:
    """Count a turn attempt its model's provider throttled (429, 529), by fairness key."""
    meter = activity.metric_meter().with_additional_attributes(_labels(info, agent))
    meter.create_counter(
        THROTTLES,
        "Turn attempts the model's provider throttled (429, 529); retried after its delay.",
    ).add(1)


def _labels(info: activity.Info, agent: str) -> dict[str, str]:
    # The meter labels task_queue already. One series per fairness key: their number
    # grows with the keys the fleet serves.
    return {"fairness_key": info.priority.fairness_key or "", "agent": agent}


def _traces_url(endpoint: str) -> str:
    # A bare collector address gets the OTLP/HTTP traces path, as the exporter does
    # for OTEL_EXPORTER_OTLP_ENDPOINT.
    if urlsplit(endpoint).path.strip("/"):
        return endpoint
    return endpoint.rstrip("/") + "/v1/traces"


def _is_sdk_provider(provider: trace.TracerProvider) -> bool:
    return not isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider)
