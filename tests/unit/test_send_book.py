"""SendBook (ratchet/workflows/_sends.py): a session's queue of sends, their
tickets and the results it still holds. In-process: ``add`` with a request id and
``check`` read workflow time and info, so they are tested through a session
(tests/workflows/test_idempotent_sends.py, test_sessions.py); the request-id book
they use is tested here in test_request_ids.py."""

from __future__ import annotations

from ratchet.types import AgentStatus, Message
from ratchet.wire._run_data import RunResult
from ratchet.wire._session_data import Queued, RecentRequests, SendOutcome, SendRequest
from ratchet.workflows._sends import RESULTS_CARRIED, RESULTS_KEPT, SendBook


def book(*, tickets: int = 0, queue=(), results=()) -> SendBook:
    return SendBook(tickets=tickets, queue=queue, results=results, requests=RecentRequests())


def send(text: str) -> SendRequest:
    return SendRequest(messages=[Message.user(text)])


def done(ticket: int) -> SendOutcome:
    result = RunResult(workflow_id=f"s-run-{ticket}", agent="a", status=AgentStatus.COMPLETED)
    return SendOutcome(ticket=ticket, state="done", result=result)


def test_sends_get_consecutive_tickets_and_run_in_the_order_they_came():
    sends = book(tickets=7)  # seven messages went to earlier workflow runs
    assert sends.idle and sends.next() is None
    tickets = [sends.add(send(t)) for t in ("a", "b", "a")]
    assert tickets == [(7, True), (8, True), (9, True)]  # no request id: never a retry
    assert sends.queued == 3 and not sends.idle and sends.tickets == 10
    order = []
    while (item := sends.next()) is not None:
        order.append((item.ticket, item.messages[0].text))
    assert order == [(7, "a"), (8, "b"), (9, "a")]
    assert sends.idle and sends.queue() == []


def test_a_queue_carried_over_runs_first_and_new_tickets_go_on_from_the_count():
    carried = [Queued(ticket=3, messages=[Message.user("c")])]
    sends = book(tickets=4, queue=carried)
    assert sends.add(send("d")) == (4, True)
    assert [q.ticket for q in sends.queue()] == [3, 4]
    assert sends.next() == carried[0]


def test_a_tickets_result_says_where_its_message_is():
    sends = book(tickets=2, results=[done(0)])
    first, _ = sends.add(send("x"))
    second, _ = sends.add(send("y"))
    sends.start(sends.next(), "s-run-3")  # type: ignore[arg-type]
    assert sends.result(first).state == "running" and not sends.done(first)
    assert sends.result(second).state == "queued" and not sends.done(second)
    assert sends.result(0) == done(0) and sends.done(0)  # carried from the run before
    assert sends.result(1).state == "forgotten" and sends.done(1)  # ran; result let go
    assert sends.result(4).state == "unknown"  # never sent
    assert sends.result(-1).state == "unknown"
    sends.settle(done(first))
    assert sends.result(first).state == "done" and sends.done(first)


def test_the_book_keeps_the_latest_results_and_carries_fewer_over():
    sends = book()
    for _ in range(RESULTS_KEPT + 5):
        ticket, _ = sends.add(send("m"))
        sends.next()
        sends.settle(done(ticket))
    assert sends.result(4).state == "forgotten"  # the oldest results went first
    assert sends.result(5).state == "done"
    carried = sends.carried()
    assert len(carried) == RESULTS_CARRIED
    assert [r.ticket for r in carried] == list(
        range(RESULTS_KEPT + 5 - RESULTS_CARRIED, RESULTS_KEPT + 5)
    )


def test_the_carried_results_are_the_latest_tickets_whatever_order_they_settled_in():
    sends = book(tickets=RESULTS_CARRIED + 2)
    for ticket in reversed(range(RESULTS_CARRIED + 2)):  # settled newest first
        sends.settle(done(ticket))
    assert [r.ticket for r in sends.carried()] == list(range(2, RESULTS_CARRIED + 2))


def test_a_settled_result_can_be_replaced_and_is_not_counted_twice():
    sends = book(tickets=1)
    sends.settle(SendOutcome(ticket=0, state="failed", error="boom"))
    sends.settle(done(0))
    assert sends.result(0) == done(0) and sends.carried() == [done(0)]


def test_the_queue_is_measured_about_as_its_json():
    sends = book()
    assert sends.queued_bytes == 0
    for text in ("short", "x" * 5000):
        sends.add(send(text))
    written = sum(len(q.model_dump_json()) for q in sends.queue())
    assert abs(sends.queued_bytes - written) < 200
