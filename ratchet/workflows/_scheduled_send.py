"""ScheduledSendWorkflow: a schedule's firing that sends one message to a session.

A Temporal Schedule can only start workflows, and a session takes messages by
Update, which workflow code cannot send. So each firing starts this workflow, and
its one activity sends the message. The request id is the firing's workflow id,
which the schedule makes from its own id and the scheduled time: a retried
delivery (a worker killed mid-send) is the same request, and the session runs it
once. A closed session pauses the schedule, saying why, and fails the firing; a
delivery that keeps failing gives up after ``DELIVERY_ATTEMPTS``.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy, SearchAttributeKey

with workflow.unsafe.imports_passed_through():
    from ratchet.wire import (
        DELIVER_ACTIVITY,
        MAX_REQUEST_ID,
        SCHEDULED_SEND_WORKFLOW,
        Delivery,
        ScheduledMessage,
    )

    from ._patches import ATTEMPTS_CAPPED
    from ._sandbox import SANDBOXED

SCHEDULED_BY = SearchAttributeKey.for_keyword("TemporalScheduledById")
DELIVERY_TIMEOUT = timedelta(seconds=60)
NOT_RETRIED = ["SessionClosed", "InvalidInput"]
"""Failures a delivery does not retry: the session is gone, or it refused the message."""
DELIVERY_ATTEMPTS = 20
"""A delivery's attempts, about 15 minutes of them: one that retried for ever would keep
its schedule (overlap SKIP) from ever firing again."""


@workflow.defn(name=SCHEDULED_SEND_WORKFLOW, sandboxed=SANDBOXED)
class ScheduledSendWorkflow:
    @workflow.run
    async def run(self, message: ScheduledMessage) -> str:
        """Send ``message`` to its session; returns the request id it was sent with."""
        info = workflow.info()
        delivery = Delivery(
            session_id=message.session_id,
            prompt=message.prompt,
            request_id=request_id(info.workflow_id),
            schedule_id=info.typed_search_attributes.get(SCHEDULED_BY),
        )
        return await workflow.execute_activity(
            DELIVER_ACTIVITY,
            delivery,
            result_type=str,
            start_to_close_timeout=DELIVERY_TIMEOUT,
            retry_policy=RetryPolicy(
                maximum_interval=timedelta(minutes=1),
                maximum_attempts=DELIVERY_ATTEMPTS if workflow.patched(ATTEMPTS_CAPPED) else 0,
                non_retryable_error_types=NOT_RETRIED,
            ),
            summary=f"send to {message.session_id}",
        )


def request_id(workflow_id: str) -> str:
    """The firing's workflow id (``<schedule's id>-<scheduled time>``), shortened to a
    hash past a session's 200-character limit."""
    if len(workflow_id) <= MAX_REQUEST_ID:
        return workflow_id
    return "schedule-" + hashlib.sha256(workflow_id.encode()).hexdigest()
