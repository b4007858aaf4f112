"""The page ``ratchet web`` serves at ``/``, driven in headless Chromium: a reply
streaming in word by word, a payment approved from the inbox, a worker killed
mid-reply, Stop, a second tab following what another sends, a 500-message session
opening at its newest message, the state view and a fork, and what a missing or
wrong token shows.

Each test runs its own ``ratchet web`` process and worker process on a fresh task
queue, against the session's dev server. Screenshots land in
``tests/artifacts/web/``. Needs Debian's chromium and the ``playwright`` package,
as ``tests/web/test_ui.py`` does; without them every test skips.
"""

from __future__ import annotations

import asyncio
import re
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ratchet.client import AgentClient
from ratchet.devserver import DevServer, free_port
from ratchet.testing import ChildProcess, WorkerProcess
from ratchet.types import Message
from ratchet.web._guards import OriginCheck

from ..conftest import ROOT
from ..web_agents import WRITER_WORDS
from ..web_http import ALICE, BOB, OPS
from .test_ui import CHROMIUM, CHROMIUM_ARGS, _browser_or_skip

try:
    from playwright.async_api import Browser, Locator, Page, async_playwright, expect
except ImportError:  # _browser_or_skip says how to install it
    pass

ENV = {
    "RATCHET_WEB_TOKENS": f"alice:{ALICE},bob:{BOB},ops:{OPS}",
    "RATCHET_WEB_OPERATORS": "ops",
    "PYTHONPATH": str(ROOT),
}
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts" / "web"
# A loaded 2-core machine.
PAGE_TIMEOUT_MS = 60_000
PAY = 'pay(to="acme", amount=500)'

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]  # web and worker processes


def answer(attempt: int) -> str:
    """What the writer agents answer on ``attempt``."""
    words = " ".join(f"word{n}" for n in range(WRITER_WORDS))
    return f"{words} (attempt {attempt})"


@dataclass
class Stack:
    """``ratchet web`` and the workers behind it, on one task queue."""

    url: str
    server: DevServer
    queue: str
    workers: list[WorkerProcess] = field(default_factory=list)

    def start_worker(self) -> WorkerProcess:
        worker = WorkerProcess(
            self.server, self.queue, "tests.web_agents:PAGE_AGENTS", env=ENV, cwd=ROOT
        )
        self.workers.append(worker)
        return worker.wait_ready()


@pytest.fixture
def stack(temporal_server: DevServer) -> Iterator[Stack]:
    yield from started_stack(temporal_server)


def started_stack(server: DevServer, *extra: str) -> Iterator[Stack]:
    """``ratchet web`` (with ``extra`` arguments) and one worker, until the test ends."""
    _browser_or_skip()
    temporal_server = server
    queue, port = f"web-page-{uuid.uuid4().hex[:8]}", free_port()
    argv = [sys.executable, "-m", "ratchet.cli", "web", "--port", str(port), *extra]
    argv += ["--agents", "tests.web_agents:PAGE_AGENTS", "--task-queue", queue]
    web = ChildProcess(argv, temporal_server, env=ENV, cwd=ROOT)
    stack = Stack(f"http://127.0.0.1:{port}", temporal_server, queue)
    try:
        web.wait_for("ratchet web on")
        stack.start_worker()
        yield stack
    finally:
        for process in [web, *stack.workers]:
            process.stop()
        print(web.output)  # shown with a failure: the server's own log


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    _browser_or_skip()
    expect.set_options(timeout=PAGE_TIMEOUT_MS)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
        )
        yield browser
        await browser.close()


@pytest.fixture
async def new_page(browser: Browser) -> AsyncIterator[Any]:
    """Opens pages, each in a fresh context (no token saved yet); after the test,
    fails if any of them raised an uncaught error."""
    contexts, errors = [], []

    async def open_page() -> Page:
        context = await browser.new_context(viewport={"width": 1400, "height": 1000})
        context.set_default_timeout(PAGE_TIMEOUT_MS)
        contexts.append(context)
        page = await context.new_page()
        page.on("pageerror", lambda error: errors.append(error))
        return page

    yield open_page
    for context in contexts:
        await context.close()
    assert not errors, f"the page raised: {errors}"


@pytest.fixture
async def page(new_page: Any) -> Page:
    return await new_page()


async def screenshot(page: Page, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    await page.screenshot(path=str(path), full_page=True)
    with capsys.disabled():
        print(f"\n  screenshot: {path}")


async def sign_in(page: Page, url: str, token: str = ALICE, session: str = "") -> None:
    """Opens the page (at ``session``, if given) and saves ``token`` in its field."""
    await page.goto(f"{url}/#{session}" if session else url)
    await page.get_by_label("API token").fill(token)
    await page.get_by_role("button", name="Save").click()


async def new_session(page: Page, agent: str) -> str:
    await page.get_by_test_id("agent-select").select_option(agent)
    await page.get_by_role("button", name="New session").click()
    title = page.get_by_test_id("current-session")
    await expect(title).to_have_text(re.compile(r"session-"))  # the caller's, scoped
    return await title.inner_text()


async def send(page: Page, text: str) -> Locator:
    """Sends ``text`` from the message box; returns the reply it streams into."""
    replies = page.get_by_test_id("reply")
    before = await replies.count()
    await page.get_by_label("Message", exact=True).fill(text)
    await page.get_by_role("button", name="Send").click()
    await expect(replies).to_have_count(before + 1)
    return replies.last


async def test_a_reply_streams_in_word_by_word_then_shows_the_answer(stack, page, capsys):
    await sign_in(page, stack.url)
    session = await new_session(page, "writer")
    reply = await send(page, "write something")
    text = reply.get_by_test_id("reply-text")
    # Part of the reply shows before the answer is complete: it streams.
    await expect(text).to_have_text(re.compile(r"^(?!.*\(attempt).*\bword3\b", re.S))
    await expect(reply).to_have_attribute("data-state", "streaming")
    await screenshot(page, "writer-streaming", capsys)

    await expect(text).to_have_text(answer(1))
    await expect(reply).to_have_attribute("data-state", "done")  # the result event came
    await expect(text).to_have_attribute("data-answer", "final")
    listed = page.get_by_test_id("session-item").filter(has_text=session)
    await expect(listed).to_be_visible()
    await screenshot(page, "writer-answered", capsys)


async def test_a_payment_waits_inline_and_in_the_inbox_until_alice_approves_it(
    stack, new_page, capsys
):
    page = await new_page()
    await sign_in(page, stack.url)
    session = await new_session(page, "billing")
    reply = await send(page, "pay acme")
    await expect(reply.get_by_test_id("tool-call")).to_have_text(f"calling {PAY}")
    await expect(reply.get_by_test_id("run-status")).to_have_text("AWAITING_APPROVAL")
    inline = page.get_by_test_id("pending").get_by_test_id("pending-card")
    await expect(inline).to_contain_text(f"Approve {PAY}?")
    card = page.get_by_test_id("approvals").locator(f'[data-session-id="{session}"]')
    await expect(card).to_contain_text(f"Approve {PAY}?")
    # An operator has the session open too: their page shows the same call waiting.
    # It is late: it does not hear how the run goes on (its event stream hangs).
    bobs = await new_page()
    await bobs.route("**/events", lambda route: None)
    await sign_in(bobs, stack.url, OPS, session=session)
    bobs_card = bobs.get_by_test_id("pending").get_by_test_id("pending-card")
    await expect(bobs_card).to_contain_text(f"Approve {PAY}?")
    await screenshot(page, "billing-awaiting-approval", capsys)

    await card.get_by_role("button", name="Approve").click()
    await expect(card.get_by_test_id("decision")).to_have_text("approved by alice")
    await expect(reply.get_by_test_id("reply-text")).to_have_text("Paid 500 euros to acme.")
    await expect(reply.get_by_test_id("tool-result")).to_have_text("result: paid 500 to acme")
    await expect(inline).to_have_count(0)  # decided elsewhere: it waits no more
    await screenshot(page, "billing-approved", capsys)

    # The operator, late, is told their decision was not recorded (409); the page goes on.
    await bobs_card.get_by_role("button", name="Approve").click()
    outcome = bobs_card.get_by_test_id("decision")
    await expect(outcome).to_have_text(re.compile(r"^Not recorded: decided already"))
    await expect(outcome).to_have_attribute("data-state", "conflict")
    await screenshot(bobs, "billing-decided-by-someone-else", capsys)


async def test_a_session_opened_while_the_page_still_loads_keeps_the_reply_it_streams(stack, page):
    """Saving a token loads the lists, then reopens the session that was open. A
    session opened in the meantime must not be reopened: that cut off its reply."""
    evals_held = asyncio.Event()
    thread_reads: list[str] = []

    async def hold(route: Any) -> None:
        await evals_held.wait()
        await route.continue_()

    await page.route("**/v1/evals", hold)  # the lists finish loading only when let go
    page.on("request", lambda r: "/thread?last=" in r.url and thread_reads.append(r.url))
    await sign_in(page, stack.url)
    await new_session(page, "billing")
    reply = await send(page, "pay acme")
    await expect(reply.get_by_test_id("run-status")).to_have_text("AWAITING_APPROVAL")
    evals_held.set()
    # Saving the token again while the reply waits reloads the lists, not the session.
    await page.get_by_role("button", name="Save").click()

    card = page.get_by_test_id("pending").get_by_test_id("pending-card")
    await card.get_by_role("button", name="Approve").click()
    await expect(reply.get_by_test_id("reply-text")).to_have_text("Paid 500 euros to acme.")
    await expect(page.get_by_test_id("reply")).to_have_count(1)
    assert len(thread_reads) == 1, thread_reads  # opened once, by "New session"


async def test_a_long_session_opens_at_its_latest_messages_and_shows_earlier_ones_on_demand(
    stack, page, capsys
):
    client = await AgentClient.connect(stack.server.address, task_queue=stack.queue)
    session = await client.start_session("echo")
    for n in range(30):
        await session.send(f"m{n}")
    reads: list[str] = []
    page.on("request", lambda r: "/thread?" in r.url and reads.append(r.url.split("?")[1]))
    await sign_in(page, stack.url, OPS, session=session.id)  # no owner: the operators'
    messages = page.get_by_test_id("thread").get_by_test_id("message")
    await expect(messages).to_have_count(50)
    await expect(messages.first).to_have_text("youm5")  # the latest 50 of 60
    earlier = page.get_by_test_id("earlier")
    await expect(earlier).to_have_text("Show 10 earlier of 10")
    await screenshot(page, "long-session-latest", capsys)

    await earlier.get_by_role("button").click()
    await expect(messages).to_have_count(60)
    await expect(messages.first).to_have_text("youm0")
    await expect(messages.nth(10)).to_have_text("youm5")
    await expect(earlier).to_be_hidden()
    assert set(reads[:-1]) == {"last=50"} and reads[-1] == "after=0&limit=10"


async def test_a_long_session_opens_at_its_newest_message_and_loads_older_ones_on_scroll_up(
    stack, page, capsys
):
    # 500 messages: a send of 459 (a long history) and 20 more exchanges, 21 turns.
    client = await AgentClient.connect(stack.server.address, task_queue=stack.queue)
    session = await client.start_session("echo", owner="alice")  # a backend's, for alice
    said = [Message.user(f"q{n}") if n % 2 == 0 else Message.assistant(f"a{n}") for n in range(459)]
    await session.send(said)
    for n in range(20):
        await session.send(f"m{n}")
    reads: list[str] = []
    page.on("request", lambda r: "/thread?" in r.url and reads.append(r.url.split("?")[1]))
    await sign_in(page, stack.url, session=session.id)
    messages = page.get_by_test_id("thread").get_by_test_id("message")
    await expect(messages).to_have_count(50)
    # It opens at the newest message, the message box in view below it.
    await expect(messages.last).to_have_text("assistantecho 21: m19")
    await expect(messages.last).to_be_in_viewport()
    await expect(page.get_by_label("Message", exact=True)).to_be_in_viewport()
    await expect(messages.first).not_to_be_in_viewport()
    await screenshot(page, "long-session-newest", capsys)

    # Scrolled up, the 50 before show, and what was at the top stays in view.
    first = messages.first
    await expect(first).to_have_text("youq450")
    await page.get_by_test_id("thread").evaluate("(thread) => { thread.scrollTop = 0; }")
    await expect(messages).to_have_count(100)
    await expect(messages.first).to_have_text("youq400")
    await expect(messages.nth(50)).to_have_text("youq450")
    await expect(messages.nth(50)).to_be_in_viewport()
    # Opened (once per token saved), then one page up.
    assert set(reads[:-1]) == {"last=50"} and reads[-1] == "after=400&limit=50", reads

    # The turns panel lists the latest 20 of 21 turns, the rest on demand.
    turns = page.get_by_test_id("turn")
    await expect(turns).to_have_count(20)
    await expect(turns.last).to_contain_text("turn 21")
    earlier = page.get_by_test_id("earlier-turns")
    await expect(earlier).to_have_text("Show 1 earlier of 1")
    await earlier.get_by_role("button").click()
    await expect(turns).to_have_count(21)
    await expect(turns.first).to_contain_text("turn 1")
    await expect(earlier).to_be_hidden()


async def test_stop_ends_the_reply_with_what_it_had_and_the_next_message_is_answered(
    stack, page, capsys
):
    await sign_in(page, stack.url)
    session = await new_session(page, "slow_writer")
    reply = await send(page, "write slowly")
    text = reply.get_by_test_id("reply-text")
    await expect(text).to_contain_text("word2")
    stop = page.get_by_role("button", name="Stop")
    stopped = f"{stack.url}/v1/sessions/{session}/stop"
    async with page.expect_response(lambda r: r.url == stopped) as answer_to_stop:
        await stop.click()
    assert (await answer_to_stop.value).status == 200
    await expect(reply).to_have_attribute("data-state", "stopped")
    await expect(reply.get_by_test_id("run-status")).to_have_text("CANCELLED")
    await expect(text).to_contain_text("word2")  # what streamed before the stop stays
    assert f"word{WRITER_WORDS - 1}" not in await text.inner_text()
    await expect(stop).to_be_hidden()
    await screenshot(page, "stopped-reply", capsys)

    after = await send(page, "write again")
    await expect(after.get_by_test_id("reply-text")).to_contain_text("word0")
    await expect(page.get_by_role("button", name="Stop")).to_be_visible()  # while it streams
    await expect(after.get_by_test_id("reply-text")).to_have_text(answer(1))
    await expect(page.get_by_role("button", name="Send")).to_be_enabled()


async def test_an_open_idle_tab_shows_what_another_tab_sent_and_its_reply(stack, new_page, capsys):
    one, two = await new_page(), await new_page()
    streams: list[str] = []
    one.on("request", lambda r: "/events" in r.url and streams.append(r.url))
    await sign_in(one, stack.url)
    session = await new_session(one, "echo")
    first = await send(one, "first")
    await expect(first.get_by_test_id("reply-text")).to_have_text("echo 1: first")
    await sign_in(two, stack.url, session=session)
    in_two = two.get_by_test_id("thread").get_by_test_id("message")
    await expect(in_two).to_have_text(["youfirst", "assistantecho 1: first"])

    # Tab two sends: tab one, idle, shows the message and its answer, once each.
    second = await send(two, "second")
    await expect(second.get_by_test_id("reply-text")).to_have_text("echo 2: second")
    in_one = one.get_by_test_id("thread").get_by_test_id("message")
    await expect(in_one).to_have_text(["youfirst", "yousecond", "assistantecho 2: second"])
    await expect(one.get_by_test_id("reply")).to_have_count(1)  # its own, to "first"
    await screenshot(one, "second-tab-followed", capsys)

    # And the other way round.
    third = await send(one, "third")
    await expect(third.get_by_test_id("reply-text")).to_have_text("echo 3: third")
    await expect(in_two).to_have_text(
        ["youfirst", "assistantecho 1: first", "yousecond", "youthird", "assistantecho 3: third"]
    )
    await expect(two.get_by_test_id("reply")).to_have_count(1)
    await expect(in_one).to_have_count(4)
    assert streams == [f"{stack.url}/v1/sessions/{session}/events"], streams  # one per tab

    # Leaving the session closes its stream.
    async with one.expect_event("requestfailed", lambda r: "/events" in r.url) as closed:
        await new_session(one, "echo")
    assert (await closed.value).url == streams[0]


async def test_a_reply_sent_from_another_tab_streams_in_an_open_tab_then_takes_its_place(
    stack, new_page
):
    one, two = await new_page(), await new_page()
    await sign_in(one, stack.url)
    session = await new_session(one, "writer")
    await sign_in(two, stack.url, session=session)
    await expect(two.get_by_role("button", name="Send")).to_be_enabled()  # following
    await send(two, "write something")
    streaming = one.get_by_test_id("reply")
    await expect(one.get_by_test_id("thread").get_by_test_id("message")).to_have_text(
        ["youwrite something"]
    )
    await expect(streaming.get_by_test_id("reply-text")).to_contain_text("word3")
    await expect(one.get_by_role("button", name="Replying…")).to_be_disabled()
    await expect(one.get_by_role("button", name="Stop")).to_be_visible()
    # Its end: the answer as the thread keeps it, in the streamed reply's place.
    messages = one.get_by_test_id("thread").get_by_test_id("message")
    await expect(messages).to_have_text(["youwrite something", f"assistant{answer(1)}"])
    await expect(streaming).to_have_count(0)
    await expect(one.get_by_role("button", name="Send")).to_be_enabled()
    await expect(one.get_by_role("button", name="Stop")).to_be_hidden()


async def test_a_worker_killed_mid_reply_shows_the_retry_and_the_second_attempts_answer(
    stack, page, capsys
):
    await sign_in(page, stack.url)
    await new_session(page, "slow_writer")
    reply = await send(page, "write slowly")
    text = reply.get_by_test_id("reply-text")
    await expect(text).to_contain_text("word2")
    stack.workers[0].kill()
    await asyncio.to_thread(stack.start_worker)  # the turn is retried here

    notice = reply.get_by_test_id("retry-notice")
    await expect(notice).to_contain_text("retrying (attempt 2)")
    await screenshot(page, "worker-killed-retrying", capsys)
    await expect(text).to_have_text(answer(2))
    await expect(text).to_have_count(1)  # what the lost attempt streamed is gone
    await expect(notice).to_be_visible()
    await screenshot(page, "worker-killed-answered", capsys)


async def test_a_reload_mid_reply_shows_the_reply_going_on_until_its_answer(stack, page, capsys):
    await sign_in(page, stack.url)
    session = await new_session(page, "slow_writer")
    reply = await send(page, "write slowly")
    await expect(reply.get_by_test_id("reply-text")).to_contain_text("word2")
    await page.reload()  # the page opens the session again, from its URL

    replies = page.get_by_test_id("reply")
    await expect(replies).to_have_count(1)
    text = replies.get_by_test_id("reply-text")
    await expect(text).to_contain_text("word30")  # it goes on streaming
    send_button = page.get_by_role("button", name="Replying…")
    await expect(send_button).to_be_disabled()
    listed = page.get_by_test_id("session-item").filter(has_text=session)
    await expect(listed.locator("[data-status]")).to_have_text("RUNNING")
    await screenshot(page, "reload-mid-reply", capsys)

    messages = page.get_by_test_id("thread").get_by_test_id("message")
    await expect(messages).to_have_count(2)
    await expect(messages.last).to_contain_text(answer(1))
    await expect(page.get_by_role("button", name="Send")).to_be_enabled()
    await expect(listed.locator("[data-status]")).not_to_have_text("RUNNING")


async def test_the_session_list_shows_a_session_running_while_its_reply_streams(stack, page):
    await sign_in(page, stack.url)
    session = await new_session(page, "slow_writer")
    reply = await send(page, "write slowly")
    status = page.get_by_test_id("session-item").filter(has_text=session).locator("[data-status]")
    await expect(reply.get_by_test_id("reply-text")).to_contain_text("word2")
    await expect(status).to_have_text("RUNNING")
    await expect(reply.get_by_test_id("reply-text")).to_have_text(answer(1))
    await expect(status).to_have_text("PENDING")  # the list's own, from visibility


async def test_the_turns_panel_counts_a_sessions_turns_from_1_as_the_inbox_does(stack, page):
    await sign_in(page, stack.url)
    session = await new_session(page, "billing")
    reply = await send(page, "pay acme")
    await expect(reply.get_by_test_id("run-status")).to_have_text("AWAITING_APPROVAL")
    card = page.get_by_test_id("approvals").locator(f'[data-session-id="{session}"]')
    await expect(card).to_contain_text("turn 1 ·")
    turns = page.get_by_test_id("turn")
    await expect(turns).to_have_count(1)
    await expect(turns.first).to_contain_text("turn 1")
    await expect(page.get_by_role("button", name="Fork at turn 1")).to_be_visible()

    await card.get_by_role("button", name="Approve").click()
    await expect(reply.get_by_test_id("reply-text")).to_have_text("Paid 500 euros to acme.")
    await expect(turns).to_have_count(2)
    await expect(turns).to_contain_text(["turn 1", "turn 2"])


async def test_the_state_view_shows_the_count_and_a_fork_at_turn_1_opens_the_new_session(
    stack, page, capsys
):
    await sign_in(page, stack.url)
    session = await new_session(page, "echo")
    for n, text in enumerate(["hello", "again"], start=1):
        reply = await send(page, text)
        await expect(reply.get_by_test_id("reply-text")).to_have_text(f"echo {n}: {text}")
    state = page.get_by_test_id("state-json")
    # The agent's state, by agent and key (the export's envelope and "data" before).
    await expect(state).to_have_text(re.compile(r'^\{\s*"echo": \{\s*"count": 2\s*\}\s*\}$'))
    await expect(page.get_by_test_id("turn")).to_have_count(2)
    await screenshot(page, "echo-state-and-turns", capsys)

    await page.get_by_role("button", name="Fork at turn 1").click()
    title = page.get_by_test_id("current-session")
    await expect(title).to_have_text(re.compile(f"^{session}-fork-"))
    messages = page.get_by_test_id("thread").get_by_test_id("message")
    await expect(messages).to_contain_text(["hello", "echo 1: hello"])
    await expect(messages).to_have_count(2)
    await expect(state).to_contain_text(re.compile(r'"count": 1\b'))
    forked = await title.inner_text()
    await expect(page.get_by_test_id("session-item").filter(has_text=forked)).to_be_visible()
    await screenshot(page, "echo-forked", capsys)


async def test_without_a_token_or_with_a_wrong_one_the_page_asks_for_one(stack, page, capsys):
    await page.goto(stack.url)
    notice = page.get_by_test_id("notice")
    await expect(page.get_by_test_id("notice-title")).to_have_text("API token needed")
    await expect(notice).to_contain_text("paste yours into the “API token” field")
    await expect(notice).to_contain_text("No credentials")
    await screenshot(page, "no-token", capsys)

    await sign_in(page, stack.url, token="a-token-nobody-holds-at-all")
    await expect(notice).to_contain_text("Unknown token.")
    await expect(page.get_by_test_id("notice-title")).to_have_text("API token needed")
    await screenshot(page, "wrong-token", capsys)

    await sign_in(page, stack.url)  # the right one: the page works
    await expect(notice).to_be_hidden()
    await expect(page.get_by_test_id("agent-select").locator("option")).to_contain_text(
        ["billing", "chatty", "echo", "slow", "slow_writer", "writer"]
    )


async def origin_check(origin: str | None, host: str, allowed: tuple[str, ...] = ()) -> int:
    """The status ``OriginCheck`` answers a POST with these headers (200: passed)."""
    sent: list[dict[str, Any]] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})

    async def send(message: Any) -> None:
        sent.append(message)

    headers = [(b"host", host.encode())]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    scope = {"type": "http", "method": "POST", "headers": headers}
    await OriginCheck(app, allowed)(scope, None, send)  # type: ignore[arg-type]
    return sent[0]["status"]


async def test_a_server_without_reports_hides_the_evaluations_and_asks_for_none(stack, page):
    failed: list[str] = []
    page.on("console", lambda m: failed.append(m.text) if m.type == "error" else None)
    await page.add_init_script(f"localStorage.setItem('ratchet.token', '{ALICE}')")
    asked = page.expect_response(lambda r: re.search(r"/v1/(evals|server)$", r.url) is not None)
    async with asked as first:
        await page.goto(stack.url)
    response = await first.value
    # Before, the page asked GET /v1/evals at every load: a 404 in the console.
    assert (response.url, response.status) == (f"{stack.url}/v1/server", 200)
    await expect(page.get_by_test_id("agent-select")).to_contain_text("echo")  # loaded
    await expect(page.locator("#evals-panel")).to_be_hidden()
    assert not failed, failed


async def test_the_origin_check_lets_the_page_post_to_its_own_server_only():
    assert await origin_check("http://127.0.0.1:8000", "127.0.0.1:8000") == 200
    assert await origin_check("https://ratchet.example", "Ratchet.Example") == 200  # TLS proxy
    assert await origin_check(None, "127.0.0.1:8000") == 200  # curl, the CLI
    assert await origin_check("http://127.0.0.1:8001", "127.0.0.1:8000") == 403  # another port
    assert await origin_check("http://evil.example", "127.0.0.1:8000") == 403
    assert await origin_check("null", "127.0.0.1:8000") == 403
    allowed = ("http://app.example/",)
    assert await origin_check("http://app.example", "127.0.0.1:8000", allowed) == 200


@pytest.fixture
def report_stack(temporal_server: DevServer, tmp_path: Path) -> Iterator[Stack]:
    from ..evals.test_web_evals import report

    report().write(tmp_path / "reports" / "week47")
    wordy().write(tmp_path / "reports" / "week48")
    readers = ["--reports", str(tmp_path / "reports"), "--report-readers", "alice"]
    yield from started_stack(temporal_server, *readers)


def wordy() -> Any:
    """A report whose prompts and answers run to several lines each."""
    from ..evals.test_web_evals import report

    long = " ".join(["The forecast says snow, then sleet, then a clear cold night."] * 8)
    cases = [
        case.model_copy(
            update={
                "case": case.case.model_copy(update={"prompt": long}),
                "old": case.old.model_copy(update={"answer": long}),
                "new": case.new.model_copy(update={"answer": long}),
            }
        )
        for case in report().cases
    ]
    return report().model_copy(update={"cases": cases})


LINES = (
    "(cell) => { const r = document.createRange(); r.selectNodeContents(cell); "
    "return r.getClientRects().length; }"
)
"""How many lines a cell's text takes on the screen."""


async def test_scores_in_an_evaluation_table_stay_on_one_line(report_stack, page, capsys):
    await sign_in(page, report_stack.url)
    await page.get_by_test_id("eval-item").filter(has_text="week48").click()
    dialog = page.get_by_test_id("eval-dialog")
    await expect(dialog.get_by_test_id("eval-case")).to_have_count(2)
    scores = dialog.locator("td.num")
    await expect(scores).to_have_text(["0.000", "1.000", "0.000", "1.000"])
    lines = [await cell.evaluate(LINES) for cell in await scores.all()]
    assert lines == [1, 1, 1, 1], lines
    prompts = dialog.get_by_test_id("eval-case").first.locator("td").nth(1)
    assert await prompts.evaluate(LINES) > 1  # the long text wraps instead
    await screenshot(page, "evaluation-report-long-answers", capsys)


async def test_the_evaluations_panel_shows_only_to_report_readers(report_stack, new_page):
    alice, bob = await new_page(), await new_page()
    await sign_in(alice, report_stack.url)
    await expect(alice.get_by_role("heading", name="Evaluations")).to_be_visible()
    await sign_in(bob, report_stack.url, token=BOB)
    await expect(bob.get_by_role("heading", name="Sessions")).to_be_visible()
    await expect(bob.get_by_test_id("agent-select").locator("option")).not_to_have_count(0)
    await expect(bob.get_by_role("heading", name="Evaluations")).to_be_hidden()
    await expect(bob.get_by_test_id("evals-refresh")).to_be_hidden()


async def test_a_report_reader_opens_an_evaluation_case_by_case(report_stack, new_page, capsys):
    alice, bob = await new_page(), await new_page()
    await sign_in(alice, report_stack.url)
    item = alice.get_by_test_id("eval-item").filter(has_text="week47")
    await expect(item).to_contain_text("week47")
    await expect(item).to_contain_text("0.000 → 1.000")
    await item.click()
    dialog = alice.get_by_test_id("eval-dialog")
    await expect(dialog).to_be_visible()
    rows = dialog.get_by_test_id("eval-case")
    await expect(rows).to_have_count(2)
    await expect(rows.first).to_contain_text("Weather in Oslo?")
    await expect(rows.first).to_contain_text("snow")
    await expect(rows.first).to_contain_text("Expect snow today!")
    await screenshot(alice, "evaluation-report", capsys)
    await dialog.get_by_test_id("eval-close").click()
    await expect(dialog).to_be_hidden()
    # Bob may not read reports: the panel stays hidden and nothing errs.
    await sign_in(bob, report_stack.url, token=BOB)
    await expect(bob.get_by_role("heading", name="Sessions")).to_be_visible()
    await expect(bob.get_by_test_id("evals")).to_be_hidden()
    await expect(bob.get_by_test_id("notice")).to_be_hidden()
