"""Turn marks: where a run's or session's thread, view, cursor and state stood
after each turn of this workflow run, so that a fork can start from any turn."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from ratchet.agents._state import AgentSession, ThreadData
    from ratchet.wire._options import SessionOptions
    from ratchet.wire._session_data import CheckpointAnswer, CheckpointRequest, TurnMark

    from ._ledger import ExecutionChange


def turn_mark(turn: int, session: AgentSession, agent: str, added: Sequence[str] = ()) -> TurnMark:
    """The mark after ``turn``, which added the messages ``added``."""
    thread = session.thread
    ids = set(added)
    fresh = [m for m in thread.messages[-len(ids) :] if m.id in ids] if ids else []
    answered = {m.tool_call_id for m in fresh if m.role == "tool"}
    return TurnMark(
        turn=turn,
        length=thread.length,
        last_id=thread.last_id,
        view=thread.view,
        cursor=thread.cursor,
        agent=agent,
        state=session.state,
        open_calls=[c for m in fresh for c in m.tool_calls if c.id not in answered],
        prompt=thread.prompt,
    )


class TurnMarks:
    """This workflow run's marks (the first: where it started). A ledger observer:
    it marks every completed turn, counted from ``turns_before()`` (a session counts
    the turns of its earlier runs)."""

    def __init__(
        self,
        first: TurnMark,
        session: Callable[[], AgentSession],
        turns_before: Callable[[], int] = lambda: 0,
    ) -> None:
        self._marks = [first]
        self._session = session
        self._turns_before = turns_before
        self._earlier = session().thread.base
        """The run this one continued (kept: a re-anchored thread names this run)."""

    def __call__(self, change: ExecutionChange) -> None:
        old, new = change.old, change.new
        if old is not None and new.step_count > old.step_count:
            turn = self._turns_before() + new.step_count
            added = new.step_results[-1].message_ids
            self._marks.append(turn_mark(turn, self._session(), change.agent, added))

    def answer(
        self, request: CheckpointRequest, thread: ThreadData, options: SessionOptions | None
    ) -> CheckpointAnswer:
        """The mark after turn ``request.turn`` (or after the turn that added message
        ``request.message``; neither: the latest), or which earlier run to ask."""
        marks = self._marks
        answer = CheckpointAnswer(
            run_id=workflow.info().run_id,
            thread_id=thread.id,
            kind=thread.kind,
            turns=marks[-1].turn,
            options=options,
        )
        if request.message is not None:
            where = next(
                (
                    thread.offset + i
                    for i, m in enumerate(thread.messages)
                    if m.id == request.message
                ),
                None,
            )
            if where is None:
                return answer.model_copy(update={"earlier": self._earlier})
            found = next((m for m in marks if m.length > where), None)
            return answer.model_copy(update={"mark": _settled(found, thread)})
        if request.turn is None:
            return answer.model_copy(update={"mark": _settled(marks[-1], thread)})
        if request.turn < marks[0].turn:
            return answer.model_copy(update={"earlier": self._earlier})
        found = next((m for m in marks if m.turn == request.turn), None)
        return answer.model_copy(update={"mark": _settled(found, thread)})


def _settled(mark: TurnMark | None, thread: ThreadData) -> TurnMark | None:
    """The mark with the results settled for its open tool calls (approvals,
    durable tools), which the log holds right after it, when it has them."""
    if mark is None or not mark.open_calls:
        return mark
    offset = thread.offset
    open_ids = {c.id for c in mark.open_calls}
    position, last_id = mark.length, mark.last_id
    while 0 <= position - offset < len(thread.messages):
        message = thread.messages[position - offset]
        if message.role != "tool" or message.tool_call_id not in open_ids:
            break
        open_ids.discard(message.tool_call_id)
        position, last_id = position + 1, message.id
    calls = [c for c in mark.open_calls if c.id in open_ids]
    return mark.model_copy(update={"length": position, "last_id": last_id, "open_calls": calls})
