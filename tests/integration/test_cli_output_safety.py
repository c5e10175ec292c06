"""What agents, pages and plans say reaches the person's terminal shown, never obeyed.

Real runs on the test server whose agents return escape sequences (clear the screen, write
the clipboard with OSC 52, set the window title, C1 CSI), bidi overrides and rich markup,
whose plan carries bidi and C1 characters in a task and in its name, whose shell command
fails with escape sequences on stderr, and whose question to a person holds them too. Every
command that prints run text — run --follow, status, result (table, --agent, --json), log,
plan, list, requests, permissions log — must print none of those characters raw, and must
show what was there.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from xml.sax.saxutils import escape

import pytest

from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.helpers import board_shows
from tests.integration.helpers import plan as plan_xml
from tests.integration.test_cli_runs import starter

pytestmark = pytest.mark.integration

# What a terminal (or a bidi-aware one) would act on instead of showing; a CR only outside CRLF.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")

# The agent's result: clear screen, OSC 52 clipboard write, rich markup, C1 CSI, a right-to-left
# override and backspaces that would print OVERWRITE over what came before. (A lone CR does
# not survive the artifact store, which reads text with universal newlines.)
RESULT = (
    "\x1b[2J\x1b]52;c;cm0gLXJmIH4=\x07 [link=https://evil.example]click[/link] "
    "[bold red]ALERT[/] \x9b31m invoice\u202egnp.exe\x08\x08\x08OVERWRITE"
)
SHOWN_RESULT = (
    "\\x1b[2J\\x1b]52;c;cm0gLXJmIH4=\\x07 [link=https://evil.example]click[/link] "
    "[bold red]ALERT[/] \\x9b31m invoice\\u202egnp.exe\\x08\\x08\\x08OVERWRITE"
)
QUESTION = "Deploy?\x1b]0;owned\x07 [link=https://evil.example]yes[/link]\u202e"


def raw_controls(text: str) -> list[str]:
    return RAW.findall(text.replace("\r\n", "\n"))


def assert_shown_not_obeyed(output: str, *shown: str) -> None:
    assert raw_controls(output) == [], f"raw control characters in:\n{output!r}"
    for piece in shown:
        assert piece in output, f"{piece!r} is not shown in:\n{output}"


def _agent(
    agent_id: str, name: str, task: str, config: dict[str, object], depends: str = ""
) -> str:
    # json.dumps writes the controls as \u001b escapes: XML text cannot hold them raw.
    after = f' depends="{depends}"' if depends else ""
    return f'<agent name="{name}" id="{agent_id}"{after}><task>{task}</task><config>{escape(json.dumps(config))}</config></agent>'


def safety_plan(name: str) -> str:
    return plan_xml(
        _agent("1", "llm", "return the page's text", {"tool": "noop", "result": RESULT}),
        # XML character references: a C1 CSI and a right-to-left override in the task itself
        _agent("2", "llm", "check invoice&#x202E;gnp.exe &#x9B;2J now", {"tool": "noop"}),
        # a no-op keeps no transcript: the log shows a file read's (the same text, from a file)
        _agent(
            "4", "file", "keep the text", {"tool": "file_write", "path": "t.txt", "content": RESULT}
        ),
        _agent("5", "file", "read it back", {"tool": "file_read", "path": "t.txt"}, depends="4"),
        _agent(
            "3",
            "shell",
            "a command that fails",
            {
                "tool": "shell",
                "command": "printf '\\033[2J\\033]0;pwned\\007' >&2; exit 3",
                "retry": {"maximumAttempts": 1},
            },
        ),
        name=name,
    )


async def test_every_command_shows_a_runs_escape_sequences_instead_of_obeying_them(env: Env):
    await env.start_worker()
    env.home.mkdir(parents=True, exist_ok=True)
    path = env.home / "unsafe.xml"
    path.write_text(safety_plan("cli-safety&#x202E;"), encoding="utf-8")
    workflow_id = f"xsky-safety-{uuid.uuid4().hex[:6]}"

    # run --follow: the live board, then the results table
    code, out, err = await starter(
        env, "run", str(path), "--id", workflow_id, "--max-replans", "0", "--follow"
    )
    assert code == 1, out + err  # T-3 failed, so the run did
    assert_shown_not_obeyed(out + err, "\\x1b[2J\\x1b]52;c;", "\\x9b2J", "invoice\\u202egnp.exe")
    assert "[link=https://evil.example]click[/link]" in out  # markup printed, not applied

    # The read-only commands at once (each is a process of its own).
    calls = {
        "status": ("status", workflow_id),
        "result": ("result", workflow_id),
        "agent": ("result", workflow_id, "--agent", "1"),
        "json": ("result", workflow_id, "--json"),
        "log": ("log", workflow_id, "T-5"),
        "log-json": ("log", workflow_id, "T-5", "--json"),
        "list": ("list",),
        "permissions": ("permissions", "log", workflow_id),
    }
    done = dict(
        zip(calls, await asyncio.gather(*(starter(env, *a) for a in calls.values())), strict=True)
    )

    # status: the plan's task as the subject (the note, cut at 70 characters, shows the command)
    code, out, err = done["status"]
    assert code == 0, err
    assert_shown_not_obeyed(out, "invoice\\u202egnp.exe \\x9b2J")

    # result: the table, one agent's whole result, and JSON with the exact values
    code, out, err = done["result"]
    assert code == 1, err
    assert_shown_not_obeyed(out, "\\x1b[2J", "\\x1b]0;pwned\\x07", "cli-safety\\u202e")
    code, out, err = done["agent"]
    assert code == 0, err
    assert_shown_not_obeyed(out, SHOWN_RESULT)
    code, out, err = done["json"]
    assert_shown_not_obeyed(out, "\\u001b[2J", "\\u009b31m", "\\u202e")
    agents = {a["id"]: a for a in json.loads(out)["agents"]}
    assert agents["1"]["result"] == RESULT  # JSON escapes keep the value exact for scripts

    # log: the agent's transcript (the tool call and its result)
    code, out, err = done["log"]
    assert code == 0, err
    assert_shown_not_obeyed(out, "\\x1b]52;c;cm0gLXJmIH4=\\x07", "[bold red]ALERT[/]")
    code, out, err = done["log-json"]
    assert_shown_not_obeyed(out, "\\u009b31m")
    events = [json.loads(line) for line in out.splitlines()]
    assert any(RESULT in v for e in events for v in e.values() if isinstance(v, str))

    # list and the permission log: the plan's name, the shell call that was decided
    for name in ("list", "permissions"):
        code, out, err = done[name]
        assert code == 0, err
        assert_shown_not_obeyed(out)


async def test_a_question_with_escape_sequences_is_shown_in_requests_status_and_plan(env: Env):
    await env.start_worker()
    env.home.mkdir(parents=True, exist_ok=True)
    path = env.home / "ask.xml"
    path.write_text(
        plan_xml(
            _agent("1", "llm", "ask first", {"tool": "ask_user", "question": QUESTION}),
            # 0.2 s: past what runs as a local activity, so its summary is in the history
            _agent(
                "2",
                "llm",
                "check invoice&#x202E;gnp.exe &#x9B;2J now",
                {"tool": "noop", "seconds": 0.2},
            ),
            name="cli-ask-safety",
        ),
        encoding="utf-8",
    )
    workflow_id = f"xsky-ask-safety-{uuid.uuid4().hex[:6]}"
    code, out, err = await starter(env, "run", str(path), "--id", workflow_id)
    assert code == 0, err
    handle = env.client.get_workflow_handle(workflow_id)
    await eventually(lambda: board_shows(handle, {"1": "blocked", "2": "completed"}))

    # The Web UI: the board in markdown (cells escaped for markdown too, and the questions in
    # the notices above it: "]" shown as "\]", the "\" of "\x1b" as "\\"), activities' summaries
    details = (await handle.query("__temporal_workflow_metadata")).current_details
    assert_shown_not_obeyed(details, "invoice\\u202egnp.exe", "Deploy?\\\\x1b\\]0;owned\\\\x07")
    assert "\\[link=https://evil.example\\]yes\\[/link\\]" in details, details
    summaries = [
        json.loads(event.user_metadata.summary.data)
        async for event in handle.fetch_history_events()
        if event.HasField("activity_task_scheduled_event_attributes")
        and event.user_metadata.HasField("summary")
    ]
    assert any("invoice\\u202egnp.exe \\x9b2J" in summary for summary in summaries), summaries
    assert all(raw_controls(summary) == [] for summary in summaries)

    reads = [
        ("requests", workflow_id),
        ("status", workflow_id),
        ("requests", workflow_id, "--json"),
        ("plan", workflow_id),
    ]
    asked, status, asked_json, shown_plan = await asyncio.gather(*(starter(env, *a) for a in reads))
    code, out, err = asked
    assert code == 0, err
    assert_shown_not_obeyed(out, "Deploy?\\x1b]0;owned\\x07", "[link=https://evil.example]yes")
    code, out, err = status  # the board's notes quote it
    assert code == 0, err
    assert_shown_not_obeyed(out, "Deploy?\\x1b]0;owned\\x07")
    code, out, err = asked_json
    assert_shown_not_obeyed(out, "\\u001b]0;owned\\u0007", "\\u202e")
    assert json.loads(out)[0]["text"] == QUESTION

    # plan: still XML that parses to the same plan, its bidi and C1 characters as references
    code, out, err = shown_plan
    assert code == 0, err
    assert_shown_not_obeyed(out, "&#x202E;gnp.exe &#x9B;2J")
    from xsky.plan.xml import parse_workflow

    assert parse_workflow(out).agents[1].task == "check invoice\u202egnp.exe \x9b2J now"

    code, out, err = await starter(env, "answer", workflow_id, "Q-1", "yes")
    assert code == 0, err
    code, out, err = await starter(env, "result", workflow_id, "--wait")
    assert code == 0, err
    assert_shown_not_obeyed(out)


def test_the_consoles_show_controls_a_print_forgot_and_keep_their_own_styles() -> None:
    """The net under every print: a plain string with an agent's ESC still comes out shown,
    while rich's own colours and a live board's cursor moves go out as escape sequences."""
    import io

    from rich.live import Live

    from cli.render import SafeConsole

    buffer = io.StringIO()
    console = SafeConsole(file=buffer, force_terminal=True, width=100, highlight=False)
    with Live(console=console, auto_refresh=False) as live:
        for text in ("first", "second"):
            live.update(f"{text}: \x1b]52;c;cm0gLXJmIH4=\x07\x9b2J", refresh=True)
    console.print("[bold red]own style[/] \x1b[2J", markup=True)
    written = buffer.getvalue()
    assert "\x1b]52" not in written and "\x9b" not in written and "\x1b[2J" not in written
    # (rich itself drops BEL, BS and CR from a plain string: only cell() shows those)
    assert "\\x1b]52;c;cm0gLXJmIH4=\\x9b2J" in written and "\\x1b[2J" in written
    assert "\x1b[1;31mown style" in written  # the CLI's own colours
    assert "\x1b[1A" in written or "\x1b[2K" in written  # the live board redrawing itself
