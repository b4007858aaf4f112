"""What a new AG-UI message does to the thread's run in progress.

AG-UI clients stop a reply by dropping its stream (``abortRun()``); the server
cannot tell that from a lost connection, so nothing stops then (the client may
re-attach and get the rest). When a new message comes from a client that followed
the run in progress and left it (it holds a part of a reply the thread does not
hold yet, or a stream of the session on this process ended with its client gone),
and nobody follows the run any more (no stream of the session on this process, see
``Hub.watching``), the client has moved on: the run stops at its next safe point
(``SessionHandle.stop``) and the new message runs at once. A run someone still
follows stays, and so does one the sender never followed (with several replicas,
someone may follow it on another): the message waits as the session's steering
says.

``forwardedProps.steering`` chooses: on the run that starts the thread it is the
session's steering (``SessionOptions.steering``); on a later one it applies to
that send: ``interrupt`` stops the run in progress even if someone follows it,
``reject`` refuses the message while a run is in progress, ``queue`` (the default)
waits for a run someone follows.
"""

from __future__ import annotations

from typing import Literal, cast, get_args

from ag_ui.core import RunAgentInput

from ratchet.client import SessionHandle
from ratchet.errors import InvalidInputError, SessionBusyError
from ratchet.types import AgentStatus
from ratchet.wire import SessionOptions, SessionStatus

from ._hub import Hub

Steering = Literal["queue", "interrupt", "reject"]
HANG_UP = 0.5
"""Seconds a send waits for a stream whose client has just hung up to be noticed
(its next request may come a moment before)."""


def steering_of(body: RunAgentInput) -> Steering | None:
    """``forwardedProps.steering``, checked (``None``: not given)."""
    props = body.forwarded_props if isinstance(body.forwarded_props, dict) else {}
    given = props.get("steering")
    if given is None:
        return None
    if given not in get_args(Steering):
        raise InvalidInputError(
            f"forwardedProps.steering must be one of {', '.join(get_args(Steering))}; "
            f"got {given!r}."
        )
    return cast(Steering, given)


def options(steering: Steering | None) -> SessionOptions | None:
    """The options a thread's session starts with."""
    return None if steering is None else SessionOptions(steering=steering)


async def make_way(
    hub: Hub,
    session: SessionHandle,
    status: SessionStatus,
    steering: Steering | None,
    *,
    left: bool,
) -> None:
    """Before a new message: stop the run in progress if its sender ``left`` it and
    nobody follows it (or the send says ``interrupt``); refuse the message for a send
    that says ``reject``."""
    if status.current_run is None or status.run_status != AgentStatus.RUNNING:
        return
    if steering == "reject":
        raise SessionBusyError(
            f"Session {session.id} is running {status.current_run}, and this run's "
            "forwardedProps.steering is 'reject': send again once it has ended."
        )
    left = hub.hung_up(session.id) or left
    if steering == "interrupt" or (left and await hub.unwatched(session.id, HANG_UP)):
        await session.stop()
