"""What an operator sees in the Temporal Web UI, checked in headless Chromium.

The module starts its own dev server with the UI, a worker, a finished two-turn run
and a session waiting for approval, then opens the UI's pages with Playwright.
Screenshots land in ``tests/artifacts/ui/``. Needs Debian's chromium and the
``playwright`` package (the ``dev`` extra); without them every test skips.
"""

from __future__ import annotations

import asyncio
import shutil
import time
import urllib.parse
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

try:
    from playwright.async_api import TimeoutError as PlaywrightTimeout
    from playwright.async_api import async_playwright, expect
except ImportError:  # the tests skip and say how to install it
    async_playwright = None

from ratchet.agents import ScriptedModel
from ratchet.client import AgentClient
from ratchet.devserver import DevServer
from ratchet.worker import build_worker

from ..client.test_observability import listed, weather_agent
from ..hitl_agents import Ledger, payment_agent

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Without the networking flags Chromium keeps calling Google's hosts, which this
# machine's closed network refuses.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts" / "ui"
UI_TIMEOUT_MS = 60_000  # a page of the UI on a loaded 2-core machine
LIST_DEADLINE_S = 90  # visibility is eventually consistent: reload until then
# The activity summaries of the weather agent's two turns.
TURN_1 = 'turn 1 · "weather in Oslo?"'
TURN_2 = 'turn 2 · after weather(city="Oslo")'

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]  # starts its own dev server


def _browser_or_skip() -> None:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium not found at {CHROMIUM}; install: apt-get install chromium")
    if async_playwright is None:
        pytest.skip("playwright not installed; install: pip install -e '.[dev]'")


@dataclass
class Scene:
    ui_url: str
    completed_id: str
    completed_run_id: str
    session_id: str
    session_run_id: str
    session_agent_run_id: str  # the label of the session's run that waits: "<session>-run-1"

    def page(self, workflow_id: str, run_id: str, tab: str) -> str:
        return f"{self.ui_url}/namespaces/default/workflows/{workflow_id}/{run_id}/{tab}"

    def workflows(self, query: str) -> str:
        return f"{self.ui_url}/namespaces/default/workflows?query={urllib.parse.quote(query)}"


@pytest.fixture(scope="module")
def ui_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    _browser_or_skip()
    server = DevServer.start(ui=True, log_dir=tmp_path_factory.mktemp("temporal-ui"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
async def scene(ui_server: DevServer) -> AsyncIterator[Scene]:
    """A completed run, and a session whose run waits for approval until the module ends."""
    task_queue = f"ui-{uuid.uuid4().hex[:8]}"
    client = await AgentClient.connect(ui_server.address, task_queue=task_queue)
    ledger = Ledger()
    pay = payment_agent(ledger, [ScriptedModel.call("pay", to="acme", amount=500), "Paid acme."])
    async with build_worker(client, {"weather": weather_agent(), "pay": pay}):
        run = await client.start_run("weather", "weather in Oslo?")
        result = await run.result()
        assert result.turns == 2
        session = await client.start_session("pay", session_id=f"pay-{task_queue}")
        send = asyncio.ensure_future(session.send("pay acme 500"))
        approved = False
        try:
            pending = await session.wait_for_pending()
            # The UI lists what visibility has indexed: wait for it here first.
            await listed(client.temporal, 'AgentStatus = "AWAITING_APPROVAL"')
            await listed(client.temporal, f'WorkflowId = "{run.id}" AND AgentStatus = "COMPLETED"')
            assert ui_server.ui_url and run.temporal_run_id and session.first_temporal_run_id
            yield Scene(
                ui_url=ui_server.ui_url,
                completed_id=run.id,
                completed_run_id=run.temporal_run_id,
                session_id=session.id,
                session_run_id=session.first_temporal_run_id,
                session_agent_run_id=f"{session.id}-run-1",
            )
            await session.approve(pending[0].action.id, by="ui-test")
            approved = True
        finally:
            if not approved:  # leave nothing wedged: close() would wait for the run
                await session.stop()
            sent = await send
            await session.close()
    assert sent.output == "Paid acme." and ledger.payments == [("acme", 500, 1)]


@pytest.fixture(scope="module")
async def browser_context(scene: Scene, tmp_path_factory: pytest.TempPathFactory):
    expect.set_options(timeout=UI_TIMEOUT_MS)
    async with async_playwright() as playwright:
        context = await playwright.chromium.launch_persistent_context(
            tmp_path_factory.mktemp("chromium-profile"),
            executable_path=CHROMIUM,
            args=CHROMIUM_ARGS,
            headless=True,
            # The UI scrolls inside its own panes, so a full-page screenshot shows the
            # viewport: make it tall enough for a whole event history.
            viewport={"width": 1920, "height": 1900},
        )
        context.set_default_timeout(UI_TIMEOUT_MS)
        context.set_default_navigation_timeout(UI_TIMEOUT_MS)
        yield context
        await context.close()


@pytest.fixture
async def page(browser_context):
    page = await browser_context.new_page()
    yield page
    await page.close()


async def screenshot(page, name: str, capsys: pytest.CaptureFixture[str]) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    await page.screenshot(path=str(path), full_page=True)
    with capsys.disabled():
        print(f"\n  screenshot: {path}")
    return path


async def open_list_until(page, url: str, workflow_id: str) -> None:
    """Open a workflow list, reloading until ``workflow_id``'s row shows up."""
    deadline = time.monotonic() + LIST_DEADLINE_S
    await page.goto(url)
    wait_ms = 30_000  # the first load of the app is the slow one
    while True:
        try:
            await row(page, workflow_id).wait_for(timeout=wait_ms)
            return
        except PlaywrightTimeout:
            if time.monotonic() > deadline:
                raise
            await page.reload()
            wait_ms = 10_000


def status(page):
    """The execution's status badge (upper case by CSS only)."""
    return page.get_by_test_id("execution-status")


def row(page, workflow_id: str):
    return page.get_by_role("link", name=workflow_id, exact=True)


async def test_the_awaiting_approval_filter_lists_the_waiting_session_only(
    scene: Scene, page, capsys
):
    await open_list_until(
        page, scene.workflows('AgentStatus="AWAITING_APPROVAL"'), scene.session_id
    )
    # The session's run is inside the session workflow: one row, the session's.
    await expect(row(page, scene.session_id)).to_be_visible()
    await expect(page.get_by_role("link", name="AgentSession", exact=True)).to_have_count(1)
    await expect(page.get_by_role("link", name="AgentRun")).to_have_count(0)
    await expect(row(page, scene.completed_id)).to_have_count(0)
    # The UI took the query from the URL: it shows it as the active filter.
    await expect(page.get_by_text('AgentStatus = "AWAITING_APPROVAL"')).to_be_visible()
    await screenshot(page, "workflows-awaiting-approval", capsys)

    # The same list filtered on COMPLETED shows the finished run, and not the session.
    await open_list_until(page, scene.workflows('AgentStatus="COMPLETED"'), scene.completed_id)
    await expect(row(page, scene.session_id)).to_have_count(0)
    await screenshot(page, "workflows-completed", capsys)


async def test_the_completed_runs_timeline_and_history_show_each_turn(scene: Scene, page, capsys):
    await page.goto(scene.page(scene.completed_id, scene.completed_run_id, "timeline"))
    # Timeline bars are labelled "<activity type> • <summary>".
    for summary in (TURN_1, TURN_2):
        await expect(page.get_by_text(f"ratchet.turn • {summary}", exact=True)).to_be_visible()
    await screenshot(page, "completed-run-timeline", capsys)

    await page.goto(scene.page(scene.completed_id, scene.completed_run_id, "history"))
    await expect(status(page)).to_have_text("completed", ignore_case=True)
    for summary in (TURN_1, TURN_2):
        await expect(page.get_by_text(summary, exact=True)).to_be_visible()
    # The run's summary is on its Workflow Execution Started event.
    await expect(page.get_by_text("weather: weather in Oslo?", exact=True)).to_be_visible()
    await screenshot(page, "completed-run-history", capsys)


async def test_the_completed_runs_user_metadata_shows_its_summary_details_and_turns(
    scene: Scene, page, capsys
):
    await page.goto(scene.page(scene.completed_id, scene.completed_run_id, "user-metadata"))
    # The UI renders each markdown field in its own iframe.
    summary = page.frame_locator("#user-metadata-summary")
    details = page.frame_locator("#user-metadata-details")
    current = page.frame_locator("#user-metadata-current-details")
    await expect(summary.get_by_text("weather: weather in Oslo?")).to_be_visible()
    await expect(details.get_by_text("Agent:")).to_be_visible()
    await expect(details.get_by_text("weather in Oslo?")).to_be_visible()
    # Current details come from a query the worker answers by replaying the run.
    await expect(current.get_by_text("2 turns")).to_be_visible()
    await expect(current.get_by_text("final answer")).to_be_visible()
    await screenshot(page, "completed-run-user-metadata", capsys)


async def test_the_waiting_sessions_page_says_what_it_waits_for(scene: Scene, page, capsys):
    await page.goto(scene.page(scene.session_id, scene.session_run_id, "user-metadata"))
    await expect(status(page)).to_have_text("running", ignore_case=True)
    current = page.frame_locator("#user-metadata-current-details")
    await expect(current.get_by_text("AWAITING_APPROVAL").first).to_be_visible()
    await expect(current.get_by_text("Waiting for")).to_be_visible()
    await expect(current.get_by_text("approval: pay(")).to_be_visible()
    await expect(current.get_by_text(scene.session_agent_run_id)).to_be_visible()
    await screenshot(page, "waiting-session-user-metadata", capsys)


async def test_a_completed_runs_current_details_say_completed(scene: Scene, page):
    await page.goto(scene.page(scene.completed_id, scene.completed_run_id, "user-metadata"))
    current = page.frame_locator("#user-metadata-current-details")
    await expect(current.get_by_text("2 turns")).to_be_visible()
    await expect(current.get_by_text("COMPLETED")).to_be_visible(timeout=5_000)
