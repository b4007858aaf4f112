"""SessionHandle: a session seen from outside (client side).

Every call goes to the session's latest workflow run (handles carry no run id),
so continue-as-new is invisible to callers. A send holds one Update: the session
answers it with the result when few sends are waiting, else at once with a
ticket, and the client then polls ``send_result`` (a query: no history). One
client keeps at most ``UPDATES_IN_FLIGHT`` Updates open per session, well under
Temporal's 10; past any limit the caller gets a ``RunFailedError``, never a raw
``ResourceExhausted``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any

from temporalio.client import (
    WorkflowExecutionStatus,
    WorkflowHandle,
    WorkflowUpdateFailedError,
    WorkflowUpdateStage,
)

from ratchet._temporal_internals import update_settled
from ratchet.errors import (
    AnswerUnavailableError,
    InvalidInputError,
    ResultExpiredError,
    SessionBusyError,
    run_failed,
)
from ratchet.types import (
    ClientTool,
    Message,
    PendingView,
    RunEvent,
    ThreadData,
    new_id,
    tool_problems,
)
from ratchet.wire import (
    OFFSET_QUERY,
    REANCHOR_UPDATE,
    SESSION_WORKFLOW,
    Anchored,
    RunResult,
    SendOutcome,
    SendRequest,
    SessionStatus,
    new_messages,
    new_request_id,
    request_id_problem,
    send_digest,
)
from ratchet.workflows import AgentSessionWorkflow

from ._error_mapping import GuardedHandle, check_prompt_size, failed_run, translated
from ._event_reader import session_events, start_offset
from ._handle import AgentHandle, Refused, as_refused
from ._retries import deadline, passing, retrying
from ._thread_reader import iter_messages, log_info, read_messages, read_thread

if TYPE_CHECKING:
    from ._client import AgentClient
    from ._deletion import SessionDeletion

UPDATES_IN_FLIGHT = 3
MIN_POLL = 0.02
MAX_POLL = 1.0
BUSY_RETRIES = 5


class ResultPoller:
    """Waits for the results of one client's queued sends to one session with one
    query at a time (a workflow answers a few queries at once, not hundreds). A
    query that fails for a moment (no worker answers) is asked again until each
    send's deadline."""

    def __init__(self, handle: WorkflowHandle[Any, Any]) -> None:
        self._handle = handle
        self._waiting: dict[int, tuple[asyncio.Future[SendOutcome], float]] = {}
        self._task: asyncio.Task[None] | None = None

    async def wait(self, ticket: int, until: float) -> SendOutcome:
        future = asyncio.get_running_loop().create_future()
        self._waiting[ticket] = (future, until)
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._poll())
        return await future

    async def _poll(self) -> None:
        delay = MIN_POLL
        while self._waiting:
            await asyncio.sleep(delay)
            try:
                outcomes = await self._handle.query(
                    "send_results", sorted(self._waiting), result_type=list[SendOutcome]
                )
            except Exception as e:
                now = time.monotonic()
                for ticket, (future, until) in list(self._waiting.items()):
                    if not passing(e) or now > until:
                        del self._waiting[ticket]
                        if not future.done():
                            future.set_exception(e)
                delay = min(MAX_POLL, delay * 1.5)
                continue
            settled = [o for o in outcomes if o.state not in ("queued", "running")]
            for outcome in settled:
                future, _ = self._waiting.pop(outcome.ticket, (None, 0.0))
                if future is not None and not future.done():
                    future.set_result(outcome)
            delay = MIN_POLL if settled else min(MAX_POLL, delay * 1.5)


class SessionHandle(AgentHandle):
    """A started session: send messages, read its thread and state, close it."""

    noun = "session"

    def __init__(self, handle: WorkflowHandle[Any, Any], client: AgentClient) -> None:
        # The latest run, always (a handle with a run id would stay on one run).
        self._handle = GuardedHandle(
            client.temporal.get_workflow_handle(handle.id, result_type=SessionStatus), "session"
        )
        self.first_temporal_run_id = handle.first_execution_run_id or handle.result_run_id
        """The session's first workflow run, when this handle started it."""
        self._client = client
        self._thread_id: str | None = None
        """The session's thread id, once read (it keeps it for ever)."""

    def events(
        self, *, after: int | None = None, from_offset: int = 0, strict: bool = True
    ) -> AsyncIterator[RunEvent]:
        """The session's live events: each run's start and finish and the run's own
        events in between (see ``RunHandle.events``). Ends when the session closes.

        Every event from ``from_offset`` on, each once, across continue-as-new; a
        reader more than 500 events behind the end that can no longer have the next
        one gets ``EventsExpiredError`` there (``strict=False``: skips ahead to what
        the session still holds). Each event carries its ``offset``: resume after the
        last one you handled with ``events(after=offset)``."""
        temporal = self._client.temporal
        start = start_offset(after, from_offset)
        return session_events(temporal, self.id, from_offset=start, strict=strict)

    async def event_offset(self) -> int:
        """Where the session's event stream ends now: ``events(from_offset=...)``
        with it follows only what happens next."""
        return await self._handle.query(OFFSET_QUERY, result_type=int)

    async def send(
        self,
        prompt: str | Sequence[Message],
        *,
        request_id: str | None = None,
        client_tools: Sequence[ClientTool] = (),
    ) -> RunResult:
        """Run the agent on ``prompt`` as the session's next execution and wait for it.

        Durable: the session records the message before it runs. Raises
        ``RunFailedError`` if the session refuses the message or the run fails.

        ``request_id`` (1-200 characters; ``new_request_id()`` makes one) makes a
        retried send idempotent: the session remembers the ids of its sends for 24
        hours (its latest 500), across continue-as-new, and a send with one of them
        returns that message's outcome instead of running it again; the same id
        with other messages raises ``ConversationConflictError``, and a UUIDv7 id
        older than what the session remembers ``RequestExpiredError``. Without one,
        the send makes its own, so its own retries never run the message twice; an
        empty or longer one raises ``InvalidInputError`` (it is never replaced).
        Failures that pass (no worker answers, Temporal out of reach) are retried
        for up to two minutes; past that ``AnswerUnavailableError`` says whether the
        message was taken and carries the request id to send again with.

        ``client_tools`` are tools the caller runs, offered to the model for this
        message's run (``ratchet.agents._client_tools``): the run waits for each call's
        result (``pending()`` lists it; send it with ``provide_tool_result``).
        """
        request = self._send_request(prompt, request_id, client_tools)
        until = deadline()
        rid = request.request_id or ""
        try:
            outcome = await retrying(
                lambda: self._request(AgentSessionWorkflow.send, request, _update_id(request)),
                until=until,
            )
        except Exception as e:
            if not passing(e):
                raise
            raise AnswerUnavailableError(self.id, rid, None, str(e)) from e
        try:
            if outcome.state in ("queued", "running"):
                outcome = await self._client._result_poller(self.id).wait(outcome.ticket, until)
            return await self._result(outcome, until)
        except Exception as e:
            if not passing(e):
                raise
            raise AnswerUnavailableError(self.id, rid, True, str(e)) from e

    async def submit(
        self,
        prompt: str | Sequence[Message],
        *,
        request_id: str | None = None,
        client_tools: Sequence[ClientTool] = (),
    ) -> str:
        """``send`` without waiting for the run: returns the request id once the
        session has accepted the message (it is in history; bad input raises here, as
        with ``send``). ``send`` with the same prompt and id waits for its answer."""
        request = self._send_request(prompt, request_id, client_tools)
        stage = WorkflowUpdateStage.ACCEPTED
        try:
            await retrying(
                lambda: self._request(
                    AgentSessionWorkflow.send, request, _update_id(request), wait_for_stage=stage
                ),
                until=deadline(),
            )
        except Exception as e:
            if not passing(e):
                raise
            raise AnswerUnavailableError(self.id, request.request_id or "", None, str(e)) from e
        return request.request_id or ""

    def _send_request(
        self,
        prompt: str | Sequence[Message],
        request_id: str | None,
        tools: Sequence[ClientTool] = (),
    ) -> SendRequest:
        if request_id is not None and (problem := request_id_problem(request_id)):
            raise InvalidInputError(
                f"{problem} Retry a send with the request id it was sent with, or leave "
                "request_id out (None) and the send makes a fresh one."
            )
        request = SendRequest(
            messages=new_messages(prompt, new_id),
            request_id=new_request_id() if request_id is None else request_id,
            client_tools=list(tools),
        )
        check_prompt_size(self._client.temporal, request.messages, "session", self.id)
        if wrong := tool_problems(request.client_tools):
            raise InvalidInputError(f"{wrong[0]}.")
        return request

    async def _result(self, outcome: SendOutcome, until: float) -> RunResult:
        if outcome.state == "failed":
            raise run_failed(self.id, outcome.error or "failed", outcome.error_type or "")
        if outcome.result is None:
            raise ResultExpiredError(
                f"Session {self.id} took and ran message {outcome.ticket} but no longer "
                "holds its result (it keeps its latest results only); its answer is in the "
                "thread: read it with thread()."
            )
        result = outcome.result.model_copy(update={"session_id": self.id})
        if result.final_response is None and outcome.final_at is not None:
            # Large, older, or from a worker before answers came inline: a query.
            at = outcome.final_at
            if self._thread_id is None:  # a session's thread keeps its id for ever
                info = await retrying(lambda: log_info(self._handle), until=until)
                self._thread_id = info.thread_id
            thread_id, temporal = self._thread_id, self._client.temporal
            final = await retrying(
                lambda: read_messages(temporal, self.id, thread_id, at, at + 1), until=until
            )
            result = result.model_copy(update={"final_response": final[0]})
        return result

    async def _update(self, update: Callable[..., Any], arg: Any, refused: Refused = None) -> Any:
        return await self._request(update, arg, refused=refused)

    async def _request(
        self,
        update: str | Callable[..., Any],
        arg: Any,
        update_id: str | None = None,
        *,
        result_type: type | None = None,
        wait_for_stage: WorkflowUpdateStage | None = None,
        refused: Refused = None,
    ) -> Any:
        """An Update, within this client's Updates in flight to the session, asked
        again while the session is busy."""
        async with self._client._update_slot(self.id):
            for attempt in range(BUSY_RETRIES + 1):
                try:
                    if wait_for_stage is not None:
                        stage = wait_for_stage
                        handle = await self._handle.start_update(
                            update, arg, id=update_id, result_type=result_type, wait_for_stage=stage
                        )
                        # A validator's refusal comes back as the Update's outcome, which
                        # start_update keeps without raising: raise it here.
                        if update_settled(handle):
                            await handle.result()
                        return handle
                    return await self._handle.execute_update(
                        update, arg, id=update_id, result_type=result_type
                    )
                except WorkflowUpdateFailedError as e:
                    raise as_refused(failed_run(self.id, e), refused) from e
                except SessionBusyError:
                    if attempt == BUSY_RETRIES:
                        raise
                    await asyncio.sleep(0.2 * 2**attempt)
        raise AssertionError("unreachable")

    async def status(self) -> SessionStatus:
        """The session's status: asked of its open run, or read from its closed run's
        result (no worker replays a closed session to answer)."""
        with translated("session", self.id):
            described = await self._handle.describe()
            closed = described.status == WorkflowExecutionStatus.COMPLETED
            if closed and described.workflow_type == SESSION_WORKFLOW:
                status: SessionStatus = await self._handle.result()
                return status.model_copy(update={"log": None})
            return await self._handle.query(AgentSessionWorkflow.status)

    async def thread(
        self, *, after: int | None = None, last: int | None = None, limit: int | None = None
    ) -> ThreadData:
        """The thread: every message the session has had, in order; ``view`` says
        which of them the agent sees now (log positions, from 0).

        Or a part of it, read alone: ``after=n`` the messages after the first ``n``,
        ``last=n`` the latest ``n``; ``limit`` at most that many. A part that starts
        later than the first message names the ones before it in ``base``: its
        ``offset`` is the position of its first message (``thread(last=0).offset``
        is the thread's length). ``messages()`` reads it page by page.
        """
        return await read_thread(
            self._client.temporal,
            self._handle,
            after=after,
            last=last,
            limit=limit,
            segments=self._client.segments,
        )

    def messages(self, *, after: int = 0, page: int = 500) -> AsyncIterator[Message]:
        """The thread's messages from position ``after`` on, as far as the thread
        reached when the iteration began, read ``page`` messages at a time."""
        return iter_messages(
            self._client.temporal,
            self._handle,
            after=after,
            page=page,
            segments=self._client.segments,
        )

    async def close(self) -> SessionStatus:
        """Stop taking messages; waits for queued runs, then the session completes."""
        status = await self._request(AgentSessionWorkflow.close, None)
        delay = MIN_POLL
        while status.status != "CLOSED":  # the session continued as new meanwhile
            await asyncio.sleep(delay)
            delay = min(MAX_POLL, delay * 1.5)
            status = await self.status()
        return status

    async def stop(self) -> SessionStatus:
        """Stop the run in progress at its next safe point; its ``send`` returns with
        status CANCELLED and the turns it finished. The session stays usable. Returns
        once that run has ended (at most about 10 s: a durable tool already running
        finishes first), with the session's status then."""
        return await self._request(AgentSessionWorkflow.stop, None)

    async def reanchor(self) -> Anchored:
        """Copy what the session's thread still needs from its closed workflow runs
        into its open run now, so Temporal's retention cannot take it. A session does
        it by itself before the oldest such run is a horizon old; one started on
        0.1.0 does it only when asked (``ratchet sessions anchor --all``)."""
        return await self._request(REANCHOR_UPDATE, None, result_type=Anchored)

    async def delete(self, *, force: bool = False) -> SessionDeletion:
        """Delete this session and everything of it (``AgentClient.delete_session``)."""
        return await self._client.delete_session(self.id, force=force)

    async def wait_for_pending(self) -> list[PendingView]:
        """Wait for a run of this session to wait for someone; list what for.
        ``[]`` if the session closes first."""
        delay = MIN_POLL
        while not (found := await self.pending()):
            if (await self.status()).status == "CLOSED":
                return []
            await asyncio.sleep(delay)
            delay = min(MAX_POLL, delay * 1.5)
        return found


def _update_id(request: SendRequest) -> str:
    """The send's Update id: its request id and what it carries, so a retry within
    one workflow run is the same Update, and the same id with other messages is
    not (the session refuses it, instead of Temporal answering with the first)."""
    return f"send-{request.request_id}-{send_digest(request.messages)}"
