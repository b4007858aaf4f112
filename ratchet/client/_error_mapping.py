"""What the client raises instead of raw temporalio errors.

Every call the client makes to Temporal for a run or a session goes through
``translated``: a missing workflow, a closed session, a full session, a payload
over Temporal's limit and a payload the client cannot decrypt each become the
Ratchet error that says what to change (see ``ratchet.errors``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any, Literal

from temporalio.client import (
    Client,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
)
from temporalio.exceptions import ApplicationError, FailureError, WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from ratchet.errors import (
    PAYLOAD_LIMIT,
    AlreadyStartedError,
    InvalidInputError,
    NotFoundError,
    PayloadDecryptionError,
    PayloadTooLargeError,
    RunFailedError,
    RunNotFoundError,
    SessionNotFoundError,
    run_failed,
)
from ratchet.types import PART_LIMIT, Message, approximate_size, describe_part, part_size

Noun = Literal["run", "session", "run or session"]
PAYLOAD_LIMIT_TEXT = (
    "Temporal refuses payloads over 2 MB. Send less (store large data elsewhere and "
    "pass a reference), or give the client external payload storage: "
    "AgentClient.connect(..., payload_storage=...)."
)


def check_agent_name(agent: str) -> None:
    """Refuse an empty agent name before anything starts (a workflow started with one
    would fail only on its worker)."""
    _not_empty(
        agent,
        "agent's name",
        "name an agent your workers host (the names `ratchet worker` prints when it is ready)",
    )


def check_id(noun: str, workflow_id: str) -> None:
    """Refuse an empty id at once (Temporal answers "WorkflowId is not set")."""
    _not_empty(
        workflow_id,
        f"{noun} id",
        f"pass the id of a {noun} (`ratchet sessions list` lists them)",
    )


def _not_empty(value: str, what: str, fix: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"The {what} is empty ({value!r}): {fix}.")


def check_prompt_size(client: Client, messages: Sequence[Message], noun: Noun, id: str) -> None:
    """Refuse a prompt over Temporal's payload limit before it is sent: a server
    refuses a workflow input that large, but takes an Update's, and the workflow
    could then never pass the message on."""
    if client.data_converter.external_storage is not None:
        return
    for part in (p for m in messages for p in m.parts):
        if part_size(part) > PART_LIMIT:
            raise PayloadTooLargeError(
                f"The prompt for {noun} {id} has a part over 256 KiB: {describe_part(part)}. "
                "Parts that large travel by reference through external payload storage: "
                "connect with payload_storage=... (AgentClient.connect, RatchetClientPlugin), "
                "or send a smaller part, or a link to it (url=...)."
            )
    size = sum(approximate_size(m) for m in messages)
    if size > PAYLOAD_LIMIT:
        raise PayloadTooLargeError(
            f"The prompt for {noun} {id} is {size / 1024 / 1024:.1f} MB. " + PAYLOAD_LIMIT_TEXT
        )


@contextlib.contextmanager
def translated(noun: Noun, workflow_id: str) -> Iterator[None]:
    """Raise Ratchet errors for what Temporal says about ``workflow_id``."""
    try:
        yield
    except WorkflowAlreadyStartedError as e:
        raise AlreadyStartedError(
            f"A {noun} with id {workflow_id!r} exists already; pick another id "
            f"(or leave it out for a generated one), or open it with get_{noun}() "
            f"(ratchet sessions show {workflow_id})."
        ) from e
    except RPCError as e:
        raise _from_rpc(e, noun, workflow_id) from e
    except WorkflowQueryFailedError as e:
        if "expected but not found" not in str(e):
            raise
        other = "run" if noun == "session" else "session"
        cls = SessionNotFoundError if noun == "session" else RunNotFoundError
        raise cls(
            f"{workflow_id!r} is not a {noun} (it answers none of a {noun}'s queries): a "
            f"{other}? Open it with get_{other}() (over HTTP, /v1/{other}s/{workflow_id})."
        ) from e
    except KeyError as e:
        if "payload encoding" not in str(e):
            raise
        raise PayloadDecryptionError(
            f"The {noun} {workflow_id!r} holds encrypted payloads and this client has no "
            "key for them: set RATCHET_ENCRYPTION_KEYS (as the workers have it) or pass "
            "codec=EncryptionCodec(...) to AgentClient.connect."
        ) from e


def _from_rpc(e: RPCError, noun: Noun, workflow_id: str) -> BaseException:
    text = e.message or ""
    if e.status == RPCStatusCode.NOT_FOUND and "completed" in text and noun == "session":
        return run_failed(
            workflow_id,
            f"Session {workflow_id} is closed: it takes no more messages ({text}). "
            "Start a new session, or fork this one.",
            "SessionClosedError",
        )
    if e.status == RPCStatusCode.NOT_FOUND and "completed" not in text:
        cls = {"session": SessionNotFoundError, "run": RunNotFoundError}.get(noun, NotFoundError)
        return cls(
            f"No {noun} with id {workflow_id!r} in this namespace ({text}); check the id "
            f"(`ratchet sessions list` lists them) and the namespace the client connects to."
        )
    if e.status == RPCStatusCode.RESOURCE_EXHAUSTED:
        return run_failed(
            workflow_id,
            f"The {noun} {workflow_id} cannot take more requests now ({text}): Temporal "
            "admits 10 Updates in flight per workflow. Send again shortly.",
            "SessionBusyError",
        )
    if e.status == RPCStatusCode.INVALID_ARGUMENT and "size exceeds" in text:
        return PayloadTooLargeError(
            f"The request to {noun} {workflow_id} is too large ({text}). " + PAYLOAD_LIMIT_TEXT
        )
    return e


_WRAPPED = frozenset(
    {"query", "result", "execute_update", "describe", "cancel", "signal", "terminate"}
)


_ENDING = frozenset({"cancel", "terminate"})


def already_ended(e: RPCError) -> bool:
    return e.status == RPCStatusCode.NOT_FOUND and "completed" in (e.message or "")


class GuardedHandle:
    """A ``WorkflowHandle`` whose calls raise Ratchet errors (see ``translated``);
    everything else is the handle's own. Cancelling or terminating a workflow that
    has ended already does nothing."""

    def __init__(self, handle: WorkflowHandle[Any, Any], noun: Noun) -> None:
        self._handle = handle
        self._noun: Noun = noun

    @property
    def unguarded(self) -> WorkflowHandle[Any, Any]:
        return self._handle

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._handle, name)
        if name not in _WRAPPED:
            return attr

        async def call(*args: Any, **kwargs: Any) -> Any:
            with translated(self._noun, self._handle.id):
                try:
                    return await attr(*args, **kwargs)
                except RPCError as e:
                    if name in _ENDING and already_ended(e):
                        return None  # ending what has ended is done already
                    raise

        return call


def failed_run(
    workflow_id: str, error: WorkflowFailureError | WorkflowUpdateFailedError
) -> RunFailedError:
    """The first application failure under ``error`` (or the deepest cause), as a
    RunFailedError naming its message and type."""
    cause: BaseException | None = error.cause
    while (
        isinstance(cause, FailureError)
        and cause.cause is not None
        and not isinstance(cause, ApplicationError)
    ):
        cause = cause.cause
    message = cause.message if isinstance(cause, FailureError) else str(error)
    kind = cause.type if isinstance(cause, ApplicationError) else type(cause).__name__
    return run_failed(workflow_id, message, kind)
