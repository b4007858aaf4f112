"""A turn queue's server-side settings and statistics, through Temporal's
``UpdateTaskQueueConfig`` and ``DescribeTaskQueue`` (activity tasks: the turns)."""

from __future__ import annotations

from dataclasses import dataclass, field

from temporalio.api.enums.v1 import RateLimitSource, TaskQueueType
from temporalio.api.taskqueue.v1 import RateLimit, RateLimitConfig, TaskQueue
from temporalio.api.workflowservice.v1 import (
    DescribeTaskQueueRequest,
    UpdateTaskQueueConfigRequest,
)
from temporalio.client import Client

ACTIVITIES = TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY
IDENTITY = "ratchet fleet"


@dataclass
class QueueReport:
    """What the server says of one turn queue."""

    limit: float | None
    """The rate limit set on the queue (dispatches per second), if one is."""
    reason: str
    effective: float
    """The limit the server enforces (its own default when none is set)."""
    source: str
    """Where ``effective`` comes from: ``api`` (a set limit), ``worker``, ``system``."""
    backlog: int
    backlog_age: float
    add_rate: float
    dispatch_rate: float
    limiting: bool
    """The server is holding back tasks because of the rate limit now."""
    pollers: int
    weights: dict[str, float] = field(default_factory=dict[str, float])
    key_limit: float | None = None
    """The rate limit of each fairness key, if one is set."""
    key_reason: str = ""


async def set_limit(
    client: Client, queue: str, rps: float | None, reason: str, *, per_key: bool = False
) -> None:
    """Set the queue's dispatch rate limit (``None``: remove it); ``per_key``: the
    limit of each fairness key instead of the whole queue's."""
    update = UpdateTaskQueueConfigRequest.RateLimitUpdate(reason=reason)
    if rps is not None:
        update.rate_limit.CopyFrom(RateLimit(requests_per_second=rps))
    which = "update_fairness_key_rate_limit_default" if per_key else "update_queue_rate_limit"
    await _update(client, queue, **{which: update})


async def set_weights(
    client: Client, queue: str, weights: dict[str, float], unset: list[str]
) -> None:
    """Pin fairness keys' weights on the queue (above what turns ask for), or unpin them."""
    await _update(
        client, queue, set_fairness_weight_overrides=weights, unset_fairness_weight_overrides=unset
    )


async def _update(client: Client, queue: str, **change: object) -> None:
    await client.workflow_service.update_task_queue_config(
        UpdateTaskQueueConfigRequest(
            namespace=client.namespace,
            identity=IDENTITY,
            task_queue=queue,
            task_queue_type=ACTIVITIES,
            **change,  # pyright: ignore[reportArgumentType]
        )
    )


async def describe(client: Client, queue: str) -> QueueReport:
    found = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=client.namespace,
            task_queue=TaskQueue(name=queue),
            task_queue_type=ACTIVITIES,
            report_stats=True,
            report_config=True,
        )
    )
    stats, config, effective = found.stats, found.config, found.effective_rate_limit
    limit = config.queue_rate_limit if config.HasField("queue_rate_limit") else None
    source = RateLimitSource.Name(effective.rate_limit_source)
    return QueueReport(
        limit=limit.rate_limit.requests_per_second
        if limit and limit.HasField("rate_limit")
        else None,
        reason=limit.metadata.reason if limit else "",
        effective=effective.requests_per_second,
        source=source.removeprefix("RATE_LIMIT_SOURCE_").lower(),
        backlog=stats.approximate_backlog_count,
        backlog_age=stats.approximate_backlog_age.ToTimedelta().total_seconds(),
        add_rate=stats.tasks_add_rate,
        dispatch_rate=stats.tasks_dispatch_rate,
        limiting=stats.rate_limiting_active,
        pollers=len(found.pollers),
        weights=dict(config.fairness_weight_overrides),
        key_limit=_rps(config.fairness_keys_rate_limit_default)
        if config.HasField("fairness_keys_rate_limit_default")
        else None,
        key_reason=config.fairness_keys_rate_limit_default.metadata.reason,
    )


def _rps(limit: RateLimitConfig) -> float | None:
    return limit.rate_limit.requests_per_second if limit.HasField("rate_limit") else None
