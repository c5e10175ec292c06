"""Verdicts a run can be trusted with: an agent's outcome is checked, not assumed, and only
what may pass is tried again (real dev server, real Chromium, the real egress proxy).

Each run here has ``max_auto_replans=0``: these tests are about the agent's attempts; whether
a deterministic failure starts an automatic replan is the leader's (workflows/), tested there.
"""

from __future__ import annotations

import json
import socket
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType

from tests.conftest import Env
from tests.fake_llm import FakeLLM, text
from tests.integration.helpers import board, plan
from tests.integration.test_cli_runs import starter
from xsky.plan import offline
from xsky.plan.agent_config import RetryOptions
from xsky.runs import RunOptions

pytestmark = pytest.mark.integration

QUICK = RunOptions(
    max_auto_replans=0, retry=RetryOptions(initial_interval=0.1, maximum_interval=0.2)
)


NOTES = (
    b"<title>Release notes</title><h1>Release notes</h1>"
    b"<p>Version 2.1 adds durable retries for every agent.</p>"
    b"<p>The scheduler now starts agents the moment their dependencies finish.</p>"
    b"<p>Workers recover in ten seconds after a crash.</p><a href='/page'>Home</a>"
)


class Site(BaseHTTPRequestHandler):
    """/page: a page; /flaky: 503 twice, then 200; anything else: 404. Counts every request."""

    hits: dict[str, int] = {}

    def do_GET(self) -> None:
        n = self.hits[self.path] = self.hits.get(self.path, 0) + 1
        code, body = 404, b"<title>Not found</title><p>no such page</p>"
        if self.path == "/page":
            code, body = 200, b"<title>Page</title><p>Durable runs keep their state.</p>"
        elif self.path == "/notes":
            code, body = 200, NOTES
        elif self.path == "/flaky":
            code, body = (503, b"busy") if n <= 2 else (200, b"ready at last")
        self.send_response(code)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a: object) -> None:
        pass


@pytest.fixture
def site() -> Iterator[tuple[int, dict[str, int]]]:
    hits: dict[str, int] = {}
    handler = type("CountingSite", (Site,), {"hits": hits})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], hits
    server.shutdown()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def allow_loopback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *ports: int) -> None:
    """Loopback is refused unless the worker's own settings name the exact host:port."""
    rules = [
        f"{tool}(domain:127.0.0.1:{p})" for p in ports for tool in ("browser_navigate", "http_get")
    ]
    user = tmp_path / "user-settings.json"
    user.write_text(json.dumps({"permissions": {"allow": rules}}))
    monkeypatch.setenv("XSKY_USER_SETTINGS", str(user))


def no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("XSKY_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)


def browser(agent_id: str, url: str) -> str:
    return (
        f'<agent name="browser" id="{agent_id}"><task>open {url}</task>'
        f'<config>{{"tool": "browser_navigate", "url": "{url}", "screenshot": false}}</config></agent>'
    )


def summary(agent_id: str, source: str) -> str:
    return (
        f'<agent name="llm" id="{agent_id}" depends="{source}"><task>Summarise the page</task>'
        f"<input>{{{{agent_{source}_result}}}}</input></agent>"
    )


async def attempts(env: Env, workflow_id: str) -> dict[str, int]:
    """How many attempts each run_agent activity (T-1-v1-d1 …) of a run took: the history
    keeps the start of an activity's last attempt only, with its number."""
    events = list((await env.client.get_workflow_handle(workflow_id).fetch_history()).events)
    ids = {
        e.event_id: e.activity_task_scheduled_event_attributes.activity_id
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        and e.activity_task_scheduled_event_attributes.activity_type.name == "run_agent"
    }
    return {
        ids[a.scheduled_event_id]: a.attempt
        for e in events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
        and (a := e.activity_task_started_event_attributes).scheduled_event_id in ids
    }


@pytest.mark.browser
async def test_a_browser_agent_fails_on_a_refused_a_missing_and_a_closed_page_and_its_dependent_never_runs(
    env: Env, site: tuple[int, dict[str, int]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    port, hits = site
    closed = closed_port()
    allow_loopback(tmp_path, monkeypatch, port, closed)
    no_model(monkeypatch)
    await env.start_worker()
    refused_url = f"http://localhost:{port}/page"  # no rule names localhost: the proxy refuses it
    missing_url = f"http://127.0.0.1:{port}/missing"
    closed_url = f"http://127.0.0.1:{closed}/"
    result = await env.run(
        plan(
            browser("1", refused_url),
            browser("2", missing_url),
            browser("3", closed_url),
            summary("4", "1"),
            summary("5", "2"),
            summary("6", "3"),
            name="pages",
        ),
        options=QUICK,
        timeout=120,
    )
    agents = {a.id: a for a in result.agents}
    assert result.status == "failed"
    assert [agents[i].status for i in "123456"] == ["failed"] * 3 + ["blocked"] * 3
    refused, missing, unreachable = (agents[i].error or "" for i in "123")
    assert refused.startswith(
        f"agent 1: browser_navigate {refused_url} was refused by xsky's egress proxy: "
    ), refused
    assert missing.startswith(f"agent 2: browser_navigate {missing_url} answered HTTP 404"), missing
    assert unreachable.startswith(f"agent 3: browser_navigate {closed_url} could not connect: ")
    assert f"port {closed}" in unreachable and "retries exhausted" in unreachable
    assert [agents[i].error for i in "456"] == ["T-1 failed", "T-2 failed", "T-3 failed"]
    assert all(agents[i].result is None for i in "123456")  # nothing was summarised
    assert hits == {"/missing": 1}  # the refused page was never reached, the 404 asked once
    # A refusal and a 404 are not retried; a closed port may open: retried as the budget allows.
    tried = await attempts(env, env.handles[-1].id)
    assert tried == {"T-1-v1-d1": 1, "T-2-v1-d1": 1, "T-3-v1-d1": 3}, tried
    shown = await board(env.handles[-1])
    assert [shown[i].tries for i in "123456"] == [1, 1, 3, 0, 0, 0]


async def test_a_shell_step_that_exits_1_runs_once_and_says_why_it_was_not_retried(
    env: Env, tmp_path: Path
):
    await env.start_worker()
    step = (
        '<agent name="shell" id="1"><task>deploy</task><config><![CDATA[{"tool": "shell", '
        '"command": "echo deployed >> deploys.log; echo no quota >&2; exit 1"}]]></config></agent>'
    )
    handle = await env.start(plan(step, name="deploy"), options=QUICK)
    from client.outcome import run_outcome

    result = await run_outcome(handle)
    (a,) = result.agents
    assert a.status == "failed"
    assert a.error == (
        "agent 1: the command exited with status 1: echo deployed >> deploys.log; echo no quota >&2; exit 1\n"
        "no quota\n(exit status 1) — not retried: retrying would not help"
    )
    log = env.home / "runs" / handle.id / "workspace" / "deploys.log"
    assert log.read_text() == "deployed\n"  # the side effect happened once
    assert await attempts(env, handle.id) == {"T-1-v1-d1": 1}
    assert (await board(handle))["1"].tries == 1


async def test_a_transient_failure_503_twice_then_200_succeeds_on_the_third_attempt(
    env: Env, site: tuple[int, dict[str, int]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    port, hits = site
    allow_loopback(tmp_path, monkeypatch, port)
    await env.start_worker()
    fetch = (
        '<agent name="browser" id="1"><task>fetch the flaky endpoint</task>'
        f'<config>{{"tool": "http_get", "url": "http://127.0.0.1:{port}/flaky"}}</config></agent>'
    )
    result = await env.run(plan(fetch, name="flaky"), options=QUICK)
    (a,) = result.agents
    assert result.status == "completed" and a.result == "ready at last", a.error
    assert hits == {"/flaky": 3}
    assert await attempts(env, env.handles[-1].id) == {"T-1-v1-d1": 3}
    (task,) = (await board(env.handles[-1])).values()
    assert task.tries == 3 and any("HTTP 503" in r for r in task.retries), task.retries


async def test_a_role_with_no_model_fails_at_once_with_the_fix_and_the_offline_llm_is_labelled(
    env: Env, monkeypatch: pytest.MonkeyPatch
):
    no_model(monkeypatch)
    await env.start_worker()
    workflow_id = f"xsky-offline-{uuid.uuid4().hex[:6]}"
    result = await env.run(
        plan(
            '<agent name="shell" id="1"><task>say</task><config>{"tool": "shell", "command": '
            '"echo Temporal keeps workflow state durable across crashes."}</config></agent>',
            '<agent name="llm" id="2" depends="1"><task>Summarise in one sentence</task>'
            "<input>{{agent_1_result}}</input></agent>",
            '<agent name="verify" id="3" depends="1"><task>Check the claim</task>'
            "<input>{{agent_1_result}}</input></agent>",
            name="offline",
        ),
        options=QUICK,
        workflow_id=workflow_id,
    )
    agents = {a.id: a for a in result.agents}
    assert agents["3"].status == "failed"
    assert agents["3"].error == (
        "agent 3: role verify needs a model: set XSKY_MODEL and OPENAI_BASE_URL (or OPENAI_API_KEY) "
        "on the worker, or give the agent a tool in its <config>; without a model only the llm agent "
        "answers (offline, extractively from its <input>) — not retried: retrying would not help"
    )
    assert "Results of the steps" not in (agents["3"].error or "")
    assert await attempts(env, workflow_id) == {"T-1-v1-d1": 1, "T-2-v1-d1": 1, "T-3-v1-d1": 1}
    answered = agents["2"]
    assert answered.status == "completed" and answered.provider == "offline"
    assert (
        answered.result
        == "[offline provider] Temporal keeps workflow state durable across crashes."
    )
    assert agents["1"].provider is None  # a tool's result: nobody to label
    shown = await board(env.handles[-1])
    assert shown["2"].provider == "offline" and shown["1"].provider is None

    code, out, err = await starter(env, "status", workflow_id)
    assert code == 0, err
    row = next(line for line in out.splitlines() if "T-2" in line)
    assert "completed (offline)" in row and "offline: extractive, no model" in row, out
    assert "(offline)" not in next(line for line in out.splitlines() if "T-1" in line)
    code, out, err = await starter(env, "result", workflow_id)
    row = next(line for line in out.splitlines() if "T-2" in line)
    assert "completed (offline)" in row and "[offline provider]" in row, out
    code, out, err = await starter(env, "result", workflow_id, "--json")
    reports = {a["id"]: a for a in json.loads(out)["agents"]}
    assert reports["2"]["provider"] == "offline" and "provider" not in reports["1"]


async def test_a_model_that_answers_nothing_fails_instead_of_completing_empty(
    env: Env, fake_llm: FakeLLM
):
    fake_llm.responder = lambda req, i: text("")
    await env.start_worker()
    result = await env.run(
        plan('<agent name="doc" id="1"><task>Write the changelog</task></agent>', name="empty"),
        options=QUICK,
    )
    (a,) = result.agents
    assert a.status == "failed" and a.result is None
    assert a.error is not None and a.error.startswith(
        "the model gave no answer: its reply was empty and it called no tool (model fake-model, step 1)"
    ), a.error
    # The model may answer next time: retried while the budget lasts (3 attempts), then final.
    assert len(fake_llm.requests) == 3 and "retries exhausted (3 attempts" in a.error


@pytest.mark.browser
async def test_an_offline_summary_of_a_page_is_made_of_the_pages_words_not_the_labels(
    env: Env, site: tuple[int, dict[str, int]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """The docs' shape with no model: a browser agent reads a page, an llm agent that only
    depends on it summarises it. Its input is the dependencies' results under labels; the
    offline answer is sentences of the page, never the heading or the labels."""
    port, _ = site
    allow_loopback(tmp_path, monkeypatch, port)
    no_model(monkeypatch)
    await env.start_worker()
    result = await env.run(
        plan(
            browser("1", f"http://127.0.0.1:{port}/notes"),
            '<agent name="llm" id="2" depends="1"><task>Summarize the page in one sentence</task></agent>',
            '<agent name="llm" id="3" depends="1,2"><task>Summarize the release in 3 sentences</task></agent>',
            name="notes",
        ),
        options=QUICK,
    )
    assert result.status == "completed", result.summary
    agents = {a.id: a for a in result.agents}
    for agent_id, sentences in (("2", 1), ("3", 3)):
        answer = (agents[agent_id].result or "").removeprefix("[offline provider] ")
        assert "Results of the steps" not in answer and "[T-" not in answer, answer
        said = offline.split_sentences(answer)
        assert len(said) == sentences and all(x in NOTES.decode() for x in said), answer
