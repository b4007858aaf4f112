"""The activity of a schedule's firing (``ratchet.workflows._scheduled_send``): it
sends one message to a session and returns once the session has taken it."""

from __future__ import annotations

from temporalio import activity
from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowUpdateFailedError,
    WorkflowUpdateStage,
)
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from ratchet.types import Message
from ratchet.wire import (
    DELIVER_ACTIVITY,
    SEND_UPDATE,
    Delivery,
    SendOutcome,
    SendRequest,
    paused_note,
    send_digest,
)


@activity.defn(name=DELIVER_ACTIVITY)
async def deliver_scheduled_message(delivery: Delivery) -> str:
    """Send ``delivery`` to its session as request ``delivery.request_id`` (the
    session runs a request id once, so a retry is harmless)."""
    client = activity.client()
    message = Message(role="user", content=delivery.prompt, id=f"msg-{delivery.request_id}")
    request = SendRequest(messages=[message], request_id=delivery.request_id)
    handle = client.get_workflow_handle(delivery.session_id)
    try:
        await handle.start_update(
            SEND_UPDATE,
            request,
            id=f"send-{request.request_id}-{send_digest(request.messages)}",
            wait_for_stage=WorkflowUpdateStage.ACCEPTED,
            result_type=SendOutcome,
        )
    except RPCError as e:
        if e.status == RPCStatusCode.INVALID_ARGUMENT:  # the same request fails the same way
            raise ApplicationError(
                f"Temporal refused the scheduled message to session {delivery.session_id}: "
                f"{e.message}",
                type="InvalidInput",
                non_retryable=True,
            ) from None
        if e.status != RPCStatusCode.NOT_FOUND or not await _closed(client, delivery):
            raise  # Temporal out of reach, a busy session, a continue-as-new: retried
        paused = await _pause(client, delivery)
        raise ApplicationError(
            f"Session {delivery.session_id} is closed (or does not exist): the scheduled "
            f"message was not sent{paused}.",
            type="SessionClosed",
            non_retryable=True,
        ) from None
    except WorkflowUpdateFailedError as e:  # the session refused it: sending again won't help
        cause = getattr(e.cause, "message", None) or str(e.cause or e)
        raise ApplicationError(
            f"Session {delivery.session_id} refused the scheduled message: {cause}",
            type="InvalidInput",
            non_retryable=True,
        ) from None
    return delivery.request_id


async def _closed(client: Client, delivery: Delivery) -> bool:
    try:
        description = await client.get_workflow_handle(delivery.session_id).describe()
    except RPCError as e:
        if e.status == RPCStatusCode.NOT_FOUND:
            return True
        raise
    return description.status != WorkflowExecutionStatus.RUNNING


async def _pause(client: Client, delivery: Delivery) -> str:
    """Pause the schedule that fired; returns what became of it, for the failure."""
    if not delivery.schedule_id:
        return ""
    try:
        await client.get_schedule_handle(delivery.schedule_id).pause(
            note=paused_note(delivery.session_id)
        )
    except RPCError as e:
        if e.status == RPCStatusCode.NOT_FOUND:  # deleted meanwhile: nothing to pause
            return ""
        if e.status != RPCStatusCode.INVALID_ARGUMENT:
            raise
        return f"; schedule {delivery.schedule_id} could not be paused: {e.message}"
    return f"; schedule {delivery.schedule_id} is paused"
