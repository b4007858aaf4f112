"""A session's sends: the queue of messages, their tickets and results, and
whether the session still takes messages.

Sends do not hold Updates open for long: the first ``MAX_HELD`` wait for their
result, the others get a ticket at once and the client polls ``send_result`` (a
query, nothing written to history). A send with a request id the session took
already gets that message's ticket (``idempotency``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from ratchet.errors import BudgetExceededError, InvalidInputError
    from ratchet.types import approximate_size
    from ratchet.wire import (
        Queued,
        RecentRequests,
        SendOutcome,
        SendRequest,
        SessionInput,
        SessionOptions,
        new_messages,
        request_id_problem,
        send_digest,
    )

    from ._idempotency import RequestIds

MAX_HELD = 2
"""Sends that wait for their result in the Update; the rest return a ticket at once
(Temporal admits 10 Updates in flight per workflow)."""
MAX_QUEUED = 1000
"""Messages a session queues behind the one running; more are refused (SessionBusy)."""
RESULTS_KEPT = 500
RESULTS_CARRIED = 50
"""Results of finished sends a client can still ask for by ticket (after a
continue-as-new, the latest ones)."""
ANSWERS_KEPT = 10
"""Results that keep their (small) answer in ``result.final_response``: the latest
ones, whose clients read them now; older ones, and those carried over a
continue-as-new, name its place in the thread only (``final_at``)."""


@dataclass
class Running:
    """The send whose run is in progress."""

    item: Queued
    label: str
    """The run's id, ``<session>-run-<n>``."""


class SendBook:
    """Queued sends, the one running, the results of finished ones."""

    def __init__(
        self,
        *,
        tickets: int,
        queue: Sequence[Queued],
        results: Sequence[SendOutcome],
        requests: RecentRequests,
    ) -> None:
        self.tickets = tickets
        self.requests = RequestIds(requests)
        self._queue: deque[Queued] = deque(queue)
        self._results: dict[int, SendOutcome] = {r.ticket: r for r in results}
        self.running: Running | None = None
        self.held = 0
        """Sends waiting for their result in their Update."""
        self.closed = False
        """The session takes no more messages."""
        self.ending = False
        """This workflow run is about to continue as new: held sends return their ticket."""

    @classmethod
    def handed_over(cls, input: SessionInput) -> SendBook:
        """The book an earlier workflow run of the session handed over (or a new one)."""
        return cls(
            tickets=input.tickets, queue=input.queue, results=input.results, requests=input.requests
        )

    @property
    def queued(self) -> int:
        return len(self._queue)

    @property
    def queued_bytes(self) -> int:
        """About the JSON size of the queue (asked only when a continue-as-new is due)."""
        return sum(_size(q) for q in self._queue)

    @property
    def idle(self) -> bool:
        return self.running is None and not self._queue

    def start(self, item: Queued, label: str) -> None:
        self.running = Running(item, label)

    def add(self, request: SendRequest) -> tuple[int, bool]:
        """The send's ticket, and whether it is new (else a retry of a send taken
        already, by its request id)."""
        if request.request_id is not None:
            digest = send_digest(request.messages)
            ticket = self.requests.known(request.request_id, digest, _now_ms())
            if ticket is not None:
                return ticket, False
            self.requests.add(request.request_id, digest, self.tickets, _now_ms())
        ticket = self.tickets
        self.tickets += 1
        item = Queued(
            ticket=ticket,
            messages=request.messages,
            request_id=request.request_id,
            client_tools=request.client_tools,
        )
        self._queue.append(item)
        return ticket, True

    def next(self) -> Queued | None:
        if not self._queue:
            return None
        return self._queue.popleft()

    def queue(self) -> list[Queued]:
        return list(self._queue)

    def settle(self, outcome: SendOutcome) -> None:
        self._results[outcome.ticket] = outcome
        while len(self._results) > RESULTS_KEPT:
            self._results.pop(next(iter(self._results)))
        older = self._results.get(outcome.ticket - ANSWERS_KEPT)
        if older is not None:  # every ticket settles: each in turn loses its answer
            self._results[older.ticket] = without_answer(older)

    def done(self, ticket: int) -> bool:
        return self.result(ticket).state not in ("queued", "running")

    def result(self, ticket: int) -> SendOutcome:
        """Where the message sent with ``ticket`` is (its result once its run ended)."""
        if ticket in self._results:
            return self._results[ticket]
        if self.running is not None and self.running.item.ticket == ticket:
            return SendOutcome(ticket=ticket, state="running")
        if any(q.ticket == ticket for q in self._queue):
            return SendOutcome(ticket=ticket, state="queued")
        if 0 <= ticket < self.tickets:
            return SendOutcome(ticket=ticket, state="forgotten")
        return SendOutcome(ticket=ticket, state="unknown")

    def carried(self) -> list[SendOutcome]:
        """The latest results, for the next workflow run."""
        latest = sorted(self._results.values(), key=lambda r: r.ticket)[-RESULTS_CARRIED:]
        return [without_answer(r) for r in latest]

    def check(self, request: SendRequest, options: SessionOptions, used_tokens: int) -> None:
        """Reject (the Update's validator) a send the session cannot take, saying why.
        A retry of a send it took already passes: it answers with that send's outcome."""
        session = workflow.info().workflow_id
        messages = request.messages
        if request.request_id is not None:
            if problem := request_id_problem(request.request_id):
                raise ApplicationError(problem, type="InvalidInputError")
            digest = send_digest(messages)
            if self.requests.find(session, request.request_id, digest, _now_ms()) is not None:
                return
        if self.closed:
            raise ApplicationError(
                f"Session {session} is closed; start a new one.", type="SessionClosedError"
            )
        try:
            new_messages(messages, lambda: "checked")
        except InvalidInputError as e:
            raise ApplicationError(str(e), type="InvalidInputError") from e
        budget = options.token_budget
        if budget is not None and used_tokens >= budget:
            raise ApplicationError(
                str(BudgetExceededError(used_tokens, budget, scope="session")),
                type="BudgetExceededError",
            )
        if options.steering == "reject" and not self.idle:
            running = self.running.label if self.running is not None else None
            raise ApplicationError(
                f"Session {session} is running {running}; it rejects messages until that "
                "run ends (SessionOptions(steering='queue') queues them).",
                type="SessionBusyError",
            )
        if len(self._queue) >= MAX_QUEUED:
            raise ApplicationError(
                f"Session {session} has {len(self._queue)} messages queued, its limit; send "
                "again once some have run (status().waiting says how many).",
                type="SessionBusyError",
            )


def _now_ms() -> int:
    return int(workflow.now().timestamp() * 1000)


def _size(item: Queued) -> int:
    return sum(approximate_size(m) for m in item.messages) + 16


def without_answer(outcome: SendOutcome) -> SendOutcome:
    """The outcome with its answer left to the thread (``final_at``)."""
    if outcome.result is None or outcome.result.final_response is None:
        return outcome
    result = outcome.result.model_copy(update={"final_response": None})
    return outcome.model_copy(update={"result": result})
