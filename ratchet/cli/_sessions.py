"""``ratchet chat`` and ``ratchet sessions ...``: sessions from the command line."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import sys
from typing import TYPE_CHECKING, cast

from ._common import add_connection_arguments, at_least_zero, connect
from ._printing import print_last, print_pending, table, turns_table
from ._terminal import Prompt, decide, read_line

if TYPE_CHECKING:
    from ratchet.client import AgentClient, SessionHandle
    from ratchet.types import ExecutionRecord, PendingView
    from ratchet.wire import SessionStatus


def agent_status(text: str) -> str:
    """What ``sessions list --status`` accepts: an AgentStatus value, in any case."""
    from ratchet.types import AgentStatus

    names = [status.value for status in AgentStatus]
    if text.upper() not in names:
        choices = ", ".join(name.lower() for name in names)
        raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from {choices})")
    return text.upper()


def register(commands: argparse._SubParsersAction) -> None:
    chat = commands.add_parser("chat", help="talk to an agent in a session, turn after turn")
    chat.add_argument("agent")
    chat.add_argument("--session", help="continue this session instead of starting one")
    chat.add_argument("--close", action="store_true", help="close the session on exit")
    chat.add_argument("--by", default=_user(), help="who decides approvals (default: you)")
    add_connection_arguments(chat)
    chat.set_defaults(func=chat_command)

    sessions = commands.add_parser("sessions", help="list, inspect and steer sessions and runs")
    sessions.set_defaults(func=sessions_command)
    verbs = sessions.add_subparsers(dest="verb", required=True)
    listing = verbs.add_parser("list", help="sessions and runs, newest first")
    listing.add_argument(
        "--status",
        type=agent_status,
        help="only those with this AgentStatus, e.g. awaiting_approval or interrupted",
    )
    listing.add_argument("--agent", help="only those of this agent")
    listing.add_argument("--sessions-only", action="store_true", help="leave standalone runs out")
    add_connection_arguments(listing)
    show = verbs.add_parser("show", help="a session's status, pending work, turns and thread")
    show.add_argument("session", help="a session id or a run id")
    show.add_argument("--messages", type=at_least_zero, default=10, help="last messages to print")
    export = verbs.add_parser("export", help="a session's thread and state as JSON")
    export.add_argument("session", help="a session id or a run id")
    fork = verbs.add_parser("fork", help="a new session from the checkpoint after a turn")
    fork.add_argument("session", help="a session id or a run id")
    where = fork.add_mutually_exclusive_group()
    where.add_argument(
        "--at-turn",
        type=at_least_zero,
        help="after this turn (0: before the first; default: the last)",
    )
    where.add_argument("--at-message", help="after the turn that added this message id")
    fork.add_argument("--id", help="the new session's id")
    approve = verbs.add_parser("approve", help="approve a pending tool call (session or run)")
    approve.add_argument("session", help="a session id or a run's workflow id")
    approve.add_argument("call_id")
    approve.add_argument(
        "--always",
        action="store_true",
        help="and allow this tool without asking for the rest of the session",
    )
    reject = verbs.add_parser("reject", help="reject a pending tool call (session or run)")
    reject.add_argument("session", help="a session id or a run's workflow id")
    reject.add_argument("call_id")
    reject.add_argument("--reason", help="what the agent is told")
    answer = verbs.add_parser("answer", help="answer a question the agent asked")
    answer.add_argument("session", help="a session id or a run's workflow id")
    answer.add_argument("question_id")
    answer.add_argument("text")
    stop = verbs.add_parser(
        "stop", help="stop a session's run in progress (the session stays), or a run"
    )
    stop.add_argument(
        "session", help="a session id, a run id, or one run of a session (ID-run-N: only that one)"
    )
    anchor = verbs.add_parser(
        "anchor",
        help="copy what a session still needs from its closed runs into its open run now "
        "(sessions do it themselves; run it once with --all after upgrading from 0.1.0)",
    )
    anchor.add_argument("session", nargs="?", help="a session id")
    anchor.add_argument("--all", action="store_true", help="every open session")
    delete = verbs.add_parser(
        "delete",
        help="delete a session and everything of it: its runs, sub-agent runs, schedules, "
        "evaluation reruns and stored payloads",
    )
    delete.add_argument("session", help="a session id")
    delete.add_argument(
        "--force",
        action="store_true",
        help="delete it even though forks read from it (they lose their earlier messages)",
    )
    for parser in (approve, reject, answer):
        parser.add_argument("--by", default=_user(), help="who decides (default: you)")
    for parser in (show, export, fork, approve, reject, answer, stop, anchor, delete):
        add_connection_arguments(parser)


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no user name in this environment
        return "cli"


async def chat_command(args: argparse.Namespace) -> int:
    return await chat(args)


async def chat(args: argparse.Namespace, ask: Prompt = read_line) -> int:
    from ._waiting import connection_flags, interrupted

    client = await connect(args)
    if args.session:
        session = client.get_session(args.session)
        agent, open_ = await _session_agent(session)  # none: says so, before any banner
        if not open_:
            print(
                f"error: session {session.id} is closed: it takes no more messages. Start "
                f"a new one: ratchet chat {agent or args.agent}",
                file=sys.stderr,
            )
            return 1
        if agent and agent != args.agent:
            print(f"note: session {session.id} runs agent {agent!r}", file=sys.stderr)
            args.agent = agent
    else:
        session = await client.start_session(args.agent)
    print(f"session: {session.id} (continue it with --session {session.id}; /quit leaves)")
    try:
        failed = await converse(client, session, args, ask)
    except asyncio.CancelledError:  # Ctrl-C: the session is a workflow; it does not stop
        flags = connection_flags(args)
        interrupted(
            f"session {session.id}",
            [
                f"continue it: ratchet chat {args.agent} --session {session.id}{flags}",
                f"what it waits for: ratchet sessions show {session.id}{flags}",
            ],
        )
        raise
    if args.close:
        await session.close()
        print(f"session {session.id} closed")
    return 1 if failed else 0  # a script piping messages in learns that one failed


async def _session_agent(session: SessionHandle) -> tuple[str | None, bool]:
    """The session's agent and whether it is open, from the server (no worker needed:
    a chat may start before any worker does); ``NotFoundError`` if there is none."""
    described = await session.describe()
    return described.agent, described.open


async def converse(
    client: AgentClient, session: SessionHandle, args: argparse.Namespace, ask: Prompt
) -> int:
    """Message after message until ``/quit``; says so when no worker takes them.
    Returns how many messages failed."""
    from ratchet.errors import RunFailedError, SessionClosedError

    from ._waiting import answered, warn_without_worker, watching

    what, failed = f"session {session.id}", 0
    while True:
        text = (await ask("you> ")).strip()
        if text in ("/quit", "/exit"):
            return failed
        if not text:
            continue
        reply = Reply(args.agent)
        offset = await answered(session.event_offset, client.temporal, session.id, what)
        follow = asyncio.create_task(reply.follow(session, offset))
        stalls = warn_without_worker(client.temporal, session.id, what)
        try:
            async with watching(asyncio.create_task(stalls)):
                result = await send_and_decide(session, text, ask, by=getattr(args, "by", _user()))
        except SessionClosedError as e:  # closed meanwhile: nothing more to send
            await reply.finish(follow)
            print(f"error: {e}", file=sys.stderr)
            return failed + 1
        except RunFailedError as e:
            await reply.finish(follow)
            print(f"error: {e.cause}", file=sys.stderr)
            failed += 1
            continue
        await reply.finish(follow)
        if not reply.streamed:  # the model did not stream: the answer comes whole
            print(f"{result.agent}> {result.output or f'({result.status.value})'}")


class Reply:
    """Prints a run's reply as the model writes it (text deltas), with a line per
    tool call, from the session's events after ``offset``."""

    FINISH_WAIT = 5.0
    """Seconds the reply may lag behind the send's answer before it is cut short."""

    def __init__(self, agent: str) -> None:
        self.agent = agent
        self.streamed = False
        self._mid_line = False

    async def follow(self, session: SessionHandle, offset: int) -> None:
        async for event in session.events(from_offset=offset):
            if event.kind == "text_delta" and event.text:
                if not self._mid_line:
                    print(f"{self.agent}> ", end="")
                print(event.text, end="", flush=True)
                self.streamed = self._mid_line = True
            elif event.kind == "tool_call":
                self._end_line()
                print(f"  · {event.text}", flush=True)
            elif event.kind == "turn_completed":
                self._end_line()
            elif event.kind == "run_finished":
                return

    async def finish(self, follow: asyncio.Task[None]) -> None:
        """Let the reply catch up with the run's end, then end its line."""
        try:
            await asyncio.wait_for(follow, self.FINISH_WAIT)
        except Exception:  # noqa: BLE001 - too slow or failed: the answer still prints
            follow.cancel()
            await asyncio.gather(follow, return_exceptions=True)
        self._end_line()

    def _end_line(self) -> None:
        if self._mid_line:
            print(flush=True)
            self._mid_line = False


async def send_and_decide(session: SessionHandle, text: str, ask: Prompt, *, by: str = "cli"):
    """Send ``text`` and, while the run waits for someone, ask at the terminal."""
    sent = asyncio.create_task(session.send(text))
    while True:
        waiting = asyncio.create_task(_waits_for(session))
        done, _ = await asyncio.wait({sent, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if sent in done:
            # The cancelled wait ends with an error of its own: collect it, or asyncio
            # prints "Task exception was never retrieved" after every message.
            waiting.cancel()
            await asyncio.gather(waiting, return_exceptions=True)
            return sent.result()
        for item in waiting.result():
            await decide(session, item, ask, by=by)


async def _waits_for(session: SessionHandle) -> list[PendingView]:
    """What the session's run waits for, once it waits; asked again while no worker
    answers (the send says what became of the message)."""
    while True:
        try:
            return await session.wait_for_pending()
        except Exception:  # noqa: BLE001 - a worker restarting, say: look again
            await asyncio.sleep(1.0)


async def sessions_command(args: argparse.Namespace) -> int:
    client = await connect(args)
    if args.verb == "list":
        # Newest first; a session's runs are its own, standalone runs are listed too.
        listed = await client.list_sessions(
            runs=not args.sessions_only, status=args.status or None, agent=args.agent or None
        )
        rows = [["id", "kind", "agent", "status", "turns", "tokens", "started"]]
        for row in listed:
            counts = ["" if n is None else str(n) for n in (row.turns, row.tokens)]
            started = row.started.strftime("%Y-%m-%d %H:%M:%S")
            rows.append([row.id, row.kind, row.agent or "?", row.status, *counts, started])
        print(table(rows))
        return 0
    if args.verb == "anchor":
        return await anchor_sessions(client, args.session, every=args.all)
    if args.verb == "delete":
        return await delete(client, args.session, force=args.force)
    if args.verb == "fork":  # from a session or a single run
        fork = await client.fork(
            args.session, at_turn=args.at_turn, at_message=args.at_message, session_id=args.id
        )
        print(fork.id)
        return 0
    from ratchet.client import RunHandle

    from ._targets import export_run, show_run, stop_run, target

    found = await target(client, args.session)
    if args.verb in ("approve", "reject", "answer"):
        from ._waiting import warn_without_worker, watching

        # The decision is an Update: it waits for a worker to take it; say so if none does.
        noun = "run" if isinstance(found, RunHandle) else "session"
        stalls = warn_without_worker(client.temporal, found.id, f"{noun} {found.id}")
        async with watching(asyncio.create_task(stalls)):
            if args.verb == "approve":
                await found.approve(args.call_id, by=args.by, always=args.always)
                done = f"approved {args.call_id}"
            elif args.verb == "reject":
                await found.reject(args.call_id, args.reason, by=args.by)
                done = f"rejected {args.call_id}"
            else:
                await found.provide_input(args.question_id, args.text, by=args.by)
                done = f"answered {args.question_id}"
        print(f"{done} in {noun} {found.id}")
        return 0
    if isinstance(found, RunHandle):
        if args.verb == "show":
            return await show_run(found, args.messages)
        return await (export_run(found) if args.verb == "export" else stop_run(found))
    session = found
    if args.verb == "show":
        return await show(session, args.messages)
    if args.verb == "export":
        thread = await session.thread()
        data = {
            "session": session.id,
            "thread": thread.model_dump(mode="json"),
            "state": await session.export_state(),
        }
        print(json.dumps(data, indent=2))
        return 0
    if args.verb == "stop":
        asked = args.session if args.session != session.id else None
        return await stop_session(session, asked)
    return 0


async def stop_session(session: SessionHandle, asked: str | None) -> int:
    """Stop the session's run in progress; given one of its runs (``ID-run-N``), only
    if that run is the one in progress."""
    from ratchet.wire import parse_session_run_id

    status = await session.status()
    if status.status == "CLOSED":
        print(f"session {session.id} is closed; nothing to stop")
        return 0
    if asked is not None and asked != status.current_run:
        parsed = parse_session_run_id(asked)
        if parsed is not None and parsed[1] > status.runs:
            print(
                f"error: session {session.id} has no run {asked} (it has had {status.runs})",
                file=sys.stderr,
            )
            return 1
        now = f"; its run in progress is {status.current_run}" if status.current_run else ""
        print(f"run {asked} of session {session.id} has ended; nothing to stop{now}")
        return 0
    if status.current_run is None:
        print(f"session {session.id} has no run in progress")
        return 0
    await session.stop()  # answers once that run has ended
    which = (
        f"run {asked} of session {session.id}"
        if asked
        else f"session {session.id}: its run in progress"
    )
    print(f"{which} stopped (finished turns are kept)")
    return 0


async def delete(client: AgentClient, session_id: str, *, force: bool) -> int:
    from ratchet.errors import SessionHasForksError

    try:
        deleted = await client.delete_session(session_id, force=force)
    except SessionHasForksError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    if not deleted.found:
        print(f"session {session_id}: nothing to delete (no such session, or deleted already)")
        return 0
    ended = " (it was open: stopped, then terminated)" if deleted.terminated else ""
    print(f"session {session_id} deleted{ended}:")
    counts = [
        (len(deleted.runs), "workflow run(s) of the session"),
        (len(deleted.child_runs), "sub-agent run(s)"),
        (len(deleted.schedules), f"schedule(s) {', '.join(deleted.schedules)}"),
        (len(deleted.schedule_runs), "scheduled send(s)"),
        (len(deleted.eval_runs), "evaluation rerun workflow(s)"),
        (deleted.payload_files, "stored payload file(s)"),
    ]
    for count, what in counts:
        if count:
            print(f"  {count} {what}")
    if deleted.payloads_left:
        print(
            "  payloads in a bucket were not deleted: delete the objects of these workflow "
            f"ids there (docs/sessions.md): {', '.join(deleted.payloads_left)}"
        )
    if deleted.forks:
        print(f"  forks that lost their earlier messages: {', '.join(deleted.forks)}")
    return 0


COUNTED = {"COMPLETED", "CANCELLED", "INTERRUPTED"}
"""How a session's run ends when its turns join the session's count."""


async def last_run(
    session: SessionHandle, status: SessionStatus
) -> tuple[ExecutionRecord | None, SessionStatus]:
    """The last run's execution, and a status that agrees with it: a run that ends
    between the two reads changes how its turns are numbered, so the status is read
    again after it, until it holds still (a run cannot end twice in a row that fast)."""
    from ratchet.types import ExecutionRecord

    maybe = cast(type, ExecutionRecord | None)  # the query answers null between runs
    for _ in range(3):
        execution = await session.workflow.query("execution", result_type=maybe)
        again = await session.status()
        if (again.runs, again.turns, again.run_status) == (
            status.runs,
            status.turns,
            status.run_status,
        ):
            break
        status = again
    return execution, status


async def show(session: SessionHandle, last: int) -> int:
    status = await session.status()
    budget = f" of {status.token_budget}" if status.token_budget is not None else ""
    print(f"session: {session.id}")
    print(f"agent: {status.agent} · {status.run_status or status.status} · {status.runs} runs")
    tokens, turns = status.used_tokens + status.run_tokens, status.turns + status.run_turns
    print(f"tokens: {tokens}{budget} · turns: {turns}")  # the run in progress's included
    if status.cost_usd:
        print(f"cost: ${status.cost_usd:.4f}")
    if status.current_run:
        print(f"run in progress: {status.current_run}")
    if status.retention_warning:
        print(f"warning: {status.retention_warning}")
    if status.status == "CLOSED":
        # Read from its history: a closed session waits for nobody, and no worker
        # is asked to replay it for its last run's turns.
        print_last(await session.thread(last=last), last)
        return 0
    print_pending(await session.pending())
    if status.runs:
        execution, status = await last_run(session, status)
        if execution is not None and execution.step_results:
            # Numbered as the session's marks count turns (`sessions fork --at-turn N`):
            # after the turns of its earlier runs. A run that ended with an answer
            # (stopped ones too) is counted in status.turns already; a run in
            # progress is not yet, and one that failed is rolled back: never.
            before = status.turns
            if execution.status in COUNTED:
                before = max(before - execution.step_results[-1].turn, 0)
            print(
                f"\nturns of run {status.runs} of {session.id} ({execution.status.value}), "
                f"numbered in the session:"
            )
            print(turns_table(execution, before))
    print_last(await session.thread(last=last), last)  # read alone: not paged in whole
    return 0


async def anchor_sessions(client: AgentClient, session_id: str | None, *, every: bool) -> int:
    """``ratchet sessions anchor ID|--all``: re-anchor now, saying what each copied."""
    from ratchet.errors import RatchetError, UsageError

    if every and session_id is not None:
        raise UsageError("Name one session or pass --all, not both.")
    if not every and session_id is None:
        raise UsageError("Name one session, or pass --all for every open session.")
    ids = [session_id] if session_id else []
    if every:
        running = await client.list_sessions(where={"ExecutionStatus": "Running"})
        ids = [row.id for row in running]
    failed = 0
    for found in ids:
        try:
            done = await client.get_session(found).reanchor()
        except RatchetError as e:
            print(f"{found}: {e}", file=sys.stderr)
            failed += 1
            continue
        lost = sum(g.end - g.start for g in done.gaps)
        what = (
            f"{done.messages - lost} messages copied"
            if done.messages
            else "relies on no closed run"
        )
        gaps = "".join(f"; messages {g.start}-{g.end - 1} were gone already" for g in done.gaps)
        print(f"{found}: {what}{gaps}" + (f"\n  warning: {done.warning}" if done.warning else ""))
    return 1 if failed else 0
