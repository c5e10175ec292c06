"""The bundled Temporal Web UI as the console: a run steered from the UI's own dialogs.

Chromium drives the Web UI that comes with the `temporal` dev server (Web UI 2.54.1):
the board is the run's *User Metadata → Current Details*; interventions go through
*More Actions → Send a Signal / Send an Update*, with the request's JSON pasted as Data.

With XSKY_SCREENSHOTS=1 the screenshots land in docs/webui/ (docs/web-ui.md shows them);
otherwise in the test's temporary directory, so ordinary runs leave the tree alone.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from playwright.async_api import TimeoutError as PlaywrightTimeout
from playwright.async_api import expect
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from cli.devserver import DevServer, free_port
from client.outcome import run_outcome
from tests.conftest import ROOT, Env
from tests.integration.helpers import ask, plan, query, wait_requests
from tests.integration.static_page import chromium
from workflows.leader import LeaderWorkflow
from xsky.config import load_settings
from xsky.leader.state import TaskRequest
from xsky.runs import RunOptions

pytestmark = [pytest.mark.integration, pytest.mark.browser]

UPDATE, SIGNAL = "Send an Update", "Send a Signal"
TOASTS = {UPDATE: "Update successful", SIGNAL: "Workflow signaled."}


@pytest.fixture(scope="module")
def ui_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """A dev server of its own, with the Web UI (the session's server is headless)."""
    tmp = tmp_path_factory.mktemp("temporal-ui")
    srv = DevServer(
        db_path=tmp / "temporal.db",
        port=free_port(),
        ui_port=free_port(),
        headless=False,
        log_path=tmp / "server.log",
    )
    srv.start(timeout=90)
    deadline = time.monotonic() + 30
    direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    while True:  # the UI server comes up a moment after the frontend
        try:
            with direct.open(f"http://{srv.ip}:{srv.ui_port}/", timeout=2):
                break
        except OSError:
            if time.monotonic() > deadline:
                srv.stop()
                raise
            time.sleep(0.1)
    yield srv
    srv.stop(kill=True)  # its database is thrown away: no graceful stop (~3 s)


@pytest_asyncio.fixture
async def ui_env(
    ui_server: DevServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Env]:
    """Like the `env` fixture, on the server with the UI."""
    home = tmp_path / "xsky"
    monkeypatch.setenv("XSKY_HOME", str(home))
    monkeypatch.setenv("XSKY_TASK_QUEUE", f"t{uuid.uuid4().hex[:8]}")
    monkeypatch.setenv("TEMPORAL_ADDRESS", ui_server.address)
    for var in ("XSKY_ARTIFACTS", "XSKY_RUNS"):
        monkeypatch.delenv(var, raising=False)
    client = await Client.connect(ui_server.address, data_converter=pydantic_data_converter)
    e = Env(client=client, settings=load_settings(), address=ui_server.address, home=home)
    yield e
    for h in e.handles:
        try:
            if (await h.describe()).status.name == "RUNNING":  # type: ignore[union-attr]
                await h.terminate("test finished")
        except Exception:  # noqa: BLE001 - best-effort cleanup
            pass
    await e.stop_workers()


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    out = (
        ROOT / "docs" / "webui"
        if os.environ.get("XSKY_SCREENSHOTS") == "1"
        else tmp_path / "screenshots"
    )
    out.mkdir(parents=True, exist_ok=True)
    return out


@pytest_asyncio.fixture
async def page() -> AsyncIterator[Any]:
    async with chromium() as browser:
        context = await browser.new_context(viewport={"width": 1280, "height": 800})
        context.set_default_timeout(15_000)
        # The UI's assertions wait as long as its actions: a loaded CI machine is slow.
        expect.set_options(timeout=15_000)
        yield await context.new_page()


def shell_agent(agent_id: str, command: str) -> str:
    """An `explore` agent calling shell directly: a tool that role must have approved."""
    cfg = json.dumps({"tool": "shell", "command": command})
    return f'<agent name="explore" id="{agent_id}"><task>run {command}</task><config><![CDATA[{cfg}]]></config></agent>'


async def open_dialog(
    page: Any, dialog_title: str, name: str, menu_shot: Path | None = None
) -> Any:
    """More Actions → Send a Signal / Send an Update, with `name` picked from the run's handlers."""
    # Web UI 2.54.1 shows "Workflow signaled." with a fixed id: a second one while the first
    # still shows breaks the page (Svelte's each_key_duplicate) and the dialog never closes.
    if dialog_title == SIGNAL:
        await dismiss_toasts(page, TOASTS[SIGNAL])
    await page.get_by_role("button", name="More Actions").click()
    if menu_shot is not None:
        await expect(page.get_by_role("menuitem", name=dialog_title)).to_be_visible()
        await page.screenshot(
            path=str(menu_shot), clip={"x": 256, "y": 0, "width": 1024, "height": 440}
        )
    await page.get_by_role("menuitem", name=dialog_title).click()
    dialog = page.get_by_role("dialog", name=dialog_title)
    await dialog.get_by_role(
        "button", name=re.compile(r"^Select an? (signal|update)$", re.I)
    ).click()
    await dialog.get_by_role("option", name=re.compile(rf"^{re.escape(name)}\b")).click()
    return dialog


async def fill(dialog: Any, data: dict[str, Any]) -> None:
    """Paste `data` as the dialog's JSON Data."""
    editor = dialog.get_by_role("textbox", name="Data")
    await editor.fill(json.dumps(data))
    # Leaving the editor reformats the JSON and grows the dialog: leave it before Submit
    # moves, or the click lands where the button was.
    await editor.blur()
    for key in data:
        await expect(editor).to_contain_text(f'"{key}"')


async def submit(dialog: Any, what: str) -> None:
    """Submit, and wait for the dialog to close: it stays open when the request fails or is refused."""
    await dialog.get_by_role("button", name="Submit").click()
    reason = dialog.get_by_role("alert").filter(has_text=re.compile(r"\S"))
    deadline = time.monotonic() + 15
    while await dialog.is_visible():
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{what}: the dialog stayed open; it says {await reason.all_inner_texts()}"
            )
        await asyncio.sleep(0.1)


async def send(
    page: Any,
    dialog_title: str,
    name: str,
    data: dict[str, Any],
    shot: Path | None = None,
    sent: bool = True,
    menu_shot: Path | None = None,
) -> None:
    """Pick `name`, paste `data`, Submit (or, with sent=False, only fill the dialog in and close it)."""
    dialog = await open_dialog(page, dialog_title, name, menu_shot)
    await fill(dialog, data)
    if shot is not None:
        await dialog.screenshot(path=str(shot))
    if sent:
        await submit(dialog, f"{name} {data}")
    else:
        await page.keyboard.press("Escape")
        await expect(dialog).to_be_hidden()


async def dismiss_toasts(page: Any, *texts: str) -> None:
    """Close the UI's toasts with these texts, if any show."""
    for text in texts:
        close = (
            page.locator("div")
            .filter(has=page.get_by_text(text, exact=True))
            .get_by_role("button", name="Close")
        )
        if await close.count():
            try:
                await close.last.click(timeout=2_000)
            except PlaywrightTimeout:
                pass  # it went away by itself
            await expect(close).to_have_count(0)


async def open_board(page: Any, run_url: str) -> Any:
    """The run page's User Metadata tab: the board is the run's Current Details (markdown, in a frame)."""
    await page.goto(f"{run_url}/user-metadata")  # what clicking the "User Metadata" tab opens
    card = (
        page.locator("div")
        .filter(has=page.get_by_role("heading", name="Current Details"))
        .filter(has=page.locator("iframe"))
        .last
    )
    return card.locator("iframe").last.content_frame.locator("body")


async def refreshed(page: Any, board: Any, text: str, timeout: float = 15) -> str:
    """Press R (the page's own refresh of the details) until the board shows `text`; the board's text."""
    deadline = time.monotonic() + timeout
    while text not in (shown := await board.inner_text()):
        assert time.monotonic() < deadline, f"the board never showed {text!r}; it shows:\n{shown}"
        await page.keyboard.press("r")
        await asyncio.sleep(0.3)
    return shown


async def test_a_run_is_steered_and_answered_from_the_web_ui(
    ui_env: Env, ui_server: DevServer, page: Any, shots: Path
):
    env = ui_env
    await env.start_worker()
    handle = await env.start(
        plan(
            ask("1", "Which region?"),
            shell_agent("2", "echo approved-in-the-ui"),
            name="webui-demo",
        ),
        options=RunOptions(review=True),
        workflow_id=f"xsky-webui-{uuid.uuid4().hex[:6]}",
    )
    await wait_requests(handle, 1)  # the plan waits for review

    # The plan under review: approve_plan from the update dialog.
    board = await open_board(
        page,
        f"http://{ui_server.ip}:{ui_server.ui_port}/namespaces/default/workflows/{handle.id}/{handle.result_run_id}",
    )
    # The run page loads its history first: on a busy machine that takes more than 5 s.
    await expect(page.get_by_role("tab", name="User Metadata")).to_have_attribute(
        "aria-selected", "true", timeout=30_000
    )
    await refreshed(page, board, "waiting for plan review")
    await send(
        page,
        UPDATE,
        "approve_plan",
        {"version": 1},
        shots / "approve-plan.png",
        menu_shot=shots / "actions-menu.png",
    )

    # Pause (a signal). The board says so, and shows what waits for a person: the ids to use.
    await send(
        page, SIGNAL, "pause", {"cancelRunning": False, "reason": "lunch"}, shots / "pause.png"
    )
    await refreshed(page, board, "paused: lunch")
    shown = await refreshed(page, board, "(approval, T-2)")  # both agents have asked by now
    question = re.search(r"(Q-\d+) \(question, T-1\): Which region\?", shown)
    approval = re.search(r"(A-\d+) \(approval, T-2\): shell\(", shown)
    assert question and approval, shown
    pending = {r.id: r.kind for r in await query(handle, LeaderWorkflow.pending_requests)}
    assert pending == {question[1]: "question", approval[1]: "approval"}
    assert (await query(handle, LeaderWorkflow.task_board)).state == "paused"
    await dismiss_toasts(page, *TOASTS.values())
    await page.set_viewport_size(
        {"width": 1280, "height": 1080}
    )  # the page scrolls inside: taller shows the whole board
    await page.screenshot(path=str(shots / "board.png"))
    await page.set_viewport_size({"width": 1280, "height": 800})
    # The tool call, approved once while paused: T-2 runs after the resume.
    await send(
        page,
        UPDATE,
        "approve_tool",
        {"requestId": approval[1], "decision": "allow_once"},
        shots / "approve-tool.png",
    )
    await send(page, SIGNAL, "resume", {})
    # A replan (filled in, not sent), a nudge for T-1, and the answer to T-1's question.
    await send(
        page,
        UPDATE,
        "replan",
        {"prompt": "then write the region to region.txt"},
        shots / "replan.png",
        sent=False,
    )
    await send(
        page,
        SIGNAL,
        "nudge",
        {"taskId": "T-1", "message": "prefer EU regions"},
        shots / "nudge.png",
    )
    # An answer to a request that does not exist is refused: the dialog stays open and says why.
    dialog = await open_dialog(page, UPDATE, "answer")
    await fill(dialog, {"requestId": "Q-9", "text": "eu-west-1"})
    await dialog.get_by_role("button", name="Submit").click()
    reason = dialog.get_by_role("alert").filter(has_text="no request 'Q-9'")
    await expect(reason).to_contain_text(f"pending requests: {question[1]}")
    box = await dialog.bounding_box()
    below = await reason.bounding_box()
    await page.screenshot(
        path=str(shots / "refused.png"),  # the reason, not the stack trace under it
        clip={**box, "height": below["y"] + 60 - box["y"]},
    )
    await page.keyboard.press("Escape")
    await expect(dialog).to_be_hidden()
    # The answer to T-1's question.
    await send(
        page,
        UPDATE,
        "answer",
        {"requestId": question[1], "text": "eu-west-1"},
        shots / "answer.png",
    )

    run = await asyncio.wait_for(run_outcome(handle), 30)
    assert run.status == "completed"
    assert [a.result for a in run.agents] == ["eu-west-1", "approved-in-the-ui"]
    assert run.agents[0].attempts == 2  # asked, then ran again with the answer
    # T-1 is a direct tool (ask_user): no model reads a nudge, so the signal was refused — the
    # board counted it and the permission log says why (a signal cannot answer its sender).
    assert await query(handle, LeaderWorkflow.nudges, TaskRequest(task_id="T-1")) == []
    (refusal,) = [
        e
        for e in await query(handle, LeaderWorkflow.permission_log)
        if e.by == "person" and e.tool == "nudge signal"
    ]
    assert "cannot read a nudge" in refusal.reason
    assert "region.txt" not in await query(
        handle, LeaderWorkflow.plan
    )  # the replan was only filled in

    # The UI shows the outcome: the board is done, the run Completed with the answer in its result.
    await refreshed(
        page,
        board,
        "1 signal(s) refused (malformed, spoofed or not applicable), the last: nudge signal",
    )
    await refreshed(page, board, "2 completed")
    await page.get_by_role("tab", name="Timeline").click()
    await expect(page.get_by_role("textbox", name="Result")).to_contain_text(
        '"result": "eu-west-1"'
    )
    deadline = time.monotonic() + 15
    while (
        status := await page.get_by_role("status").first.inner_text()
    ).strip().lower() != "completed":
        assert time.monotonic() < deadline, f"the run page says {status!r}"
        await page.keyboard.press("r")  # the page also refreshes the run by itself every 10 s
        await asyncio.sleep(0.3)
    await dismiss_toasts(page, *TOASTS.values())
    await page.screenshot(path=str(shots / "completed.png"))
