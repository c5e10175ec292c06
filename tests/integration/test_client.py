"""client against a real server: the docs' example (docs/python-api.md), every intervention through the
API, its one-sentence errors, Temporal's environment configuration, and agent logs
(`starter.py log`) of an LLM agent that made tool calls."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import uuid
from pathlib import Path

import pytest

from client import ConnectionLost, XSky
from tests.conftest import ROOT, Env
from tests.fake_llm import FakeLLM, calls, text, turn_of
from tests.integration.eventually import eventually
from tests.integration.helpers import ask, noop, plan
from tests.integration.test_cli_runs import starter
from xsky.config import load_settings
from xsky.errors import ConnectError, RefusedError, RunEndedError, RunNotFoundError, UsageError
from xsky.leader.state import BoardPage

pytestmark = pytest.mark.integration


def docs_example() -> str:
    page = (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- api-example -->\s*```python\n(.*?)```", page, re.S)
    assert found, "docs/python-api.md's example (marked <!-- api-example -->) is missing"
    return found.group(1)


async def test_the_docs_example_runs_as_written(env: Env):
    await env.start_worker()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        docs_example(),
        env=env.environ(),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    printed = out.decode()
    assert proc.returncode == 0, err.decode()
    assert printed.startswith("started xsky-example-diamond-")
    assert (
        "completed ['topic: durable agents" in printed
    )  # the first agent's result, as the plan says
    assert "attempt" in printed and "outcome completed" in printed  # T-1's transcript
    assert "Traceback" not in err.decode()


async def test_start_follow_steer_and_finish_through_the_api(env: Env):
    await env.start_worker()
    async with XSky.connect() as x:
        run = await x.run(
            plan(
                noop("1", 0.3),
                ask("2", "which region?", depends="1"),
                noop("3", depends="2"),
                name="api",
            ),
            id=f"xsky-api-{uuid.uuid4().hex[:6]}",
        )
        assert run.ui_url.endswith(f"/workflows/{run.id}")
        pages: list[BoardPage] = []
        async for page in run.follow(interval=0.2):
            assert not isinstance(page, ConnectionLost)
            pages.append(page)
            if page.notes and any("Q-1" in n for n in page.notes):
                break
        requests = await run.requests()
        assert [(r.id, r.text) for r in requests] == [("Q-1", "which region?")]
        status = await run.status()
        assert status.status == "running" and status.state == "waiting"
        with pytest.raises(RefusedError, match="Q-9"):
            await run.answer("Q-9", "nope")
        with pytest.raises(UsageError, match="no task 'T-99'"):
            await run.nudge("T-99", "hello")
        await run.pause(reason="checking")
        assert (await run.status()).state == "paused"
        await run.resume()
        answered = await run.answer("Q-1", "eu-west-1")
        assert answered.ok
        result = await asyncio.wait_for(run.result(), 60)
        assert result.status == "completed" and [a.result for a in result.agents][0] == "r1"
        assert any(p.counts.get("completed") for p in pages)
        report, full = await run.agent_result("T-3")
        assert report.id == "3" and full == "r3"
        assert any(r.id == run.id for r in await x.runs(f"WorkflowId='{run.id}'"))
        # An ended run cannot be steered; an unknown one does not exist: one sentence each.
        with pytest.raises(RunEndedError, match="has already ended"):
            await run.pause()
        with pytest.raises(RunNotFoundError, match="no run with id xsky-none"):
            await x.get("xsky-none")
        assert await run.transcript("T-1") == []  # a no-op writes nothing, not even a log
        events = await run.transcript("T-2")
        assert [e["type"] for e in events][:2] == ["attempt", "tool_call"], events
        assert events[1]["name"] == "ask_user"


async def test_the_api_refuses_bad_plans_and_unreachable_servers_with_a_sentence(
    env: Env, monkeypatch
):
    async with XSky.connect() as x:
        with pytest.raises(UsageError, match="variable tpoic: the plan has no such name"):
            await x.run(str(ROOT / "examples/diamond.xml"), variables={"tpoic": "x"})
        monkeypatch.setenv("XSKY_WORKER_WAIT", "1")
        with pytest.raises(
            Exception, match=f"no worker serves the task queue '{env.settings.task_queue}'"
        ):
            await XSky(x.client, load_settings()).run(str(ROOT / "examples/diamond.xml"))
    monkeypatch.setenv("TEMPORAL_ADDRESS", "127.0.0.1:1")
    with pytest.raises(
        ConnectError, match="cannot reach Temporal at 127.0.0.1:1 .*connection refused"
    ) as refused:
        await XSky.connect()
    # The library's fix speaks to its callers; the CLI's (cli/hints.py) names its commands.
    assert "starter.py" not in str(refused.value) and refused.value.topic == "connect"


async def test_a_missing_kind_worker_is_named_before_anything_starts(env: Env, monkeypatch):
    await env.start_worker(kinds=["llm"])  # no shell agents here
    monkeypatch.setenv("XSKY_WORKER_WAIT", "1")
    code, _, err = await starter(env, "run", str(ROOT / "examples/diamond.xml"), "--var", "topic=x")
    assert (
        code == 2 and "no worker runs shell agents" in err and "worker.py --kinds shell" in err
    ), err
    assert "Traceback" not in err
    assert [
        wf async for wf in env.client.list_workflows(f"TaskQueue='{env.settings.task_queue}'")
    ] == []


def test_connection_settings_come_from_temporal_profiles(tmp_path: Path, monkeypatch):
    config = tmp_path / "temporal.toml"
    config.write_text(
        '[profile.default]\naddress = "127.0.0.1:7999"\nnamespace = "team-a"\n\n'
        '[profile.cloud]\naddress = "acme.a1b2.tmprl.cloud:7233"\nnamespace = "acme.a1b2"\napi_key = "k-123"\n'
    )
    for var in ("TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY", "TEMPORAL_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(config))
    settings = load_settings()
    assert (settings.address, settings.namespace) == ("127.0.0.1:7999", "team-a")
    cloud = load_settings(profile="cloud")
    kwargs = cloud.connect_kwargs()
    assert (
        kwargs["target_host"] == "acme.a1b2.tmprl.cloud:7233" and kwargs["namespace"] == "acme.a1b2"
    )
    assert (
        kwargs["api_key"] == "k-123" and kwargs["tls"]
    )  # an API key means TLS, as Temporal's CLI does
    monkeypatch.setenv("TEMPORAL_ADDRESS", "127.0.0.1:7444")  # the environment overrides the file
    assert load_settings().address == "127.0.0.1:7444"
    with pytest.raises(UsageError, match="Profile 'nope' not found"):
        load_settings(profile="nope")
    monkeypatch.setenv("XSKY_ARTIFACT_THRESHOLD", "lots")
    with pytest.raises(UsageError, match="XSKY_ARTIFACT_THRESHOLD='lots' is not a whole number"):
        load_settings()


async def test_log_shows_an_llm_agents_tool_calls_in_order(env: Env, fake_llm: FakeLLM):
    def responder(req, i):
        turn = turn_of(req)
        if turn == 0:
            return calls(("file_write", {"path": "notes.txt", "content": "alpha"}))
        if turn == 1:
            return calls(
                ("file_read", {"path": "notes.txt"}), ("shell", {"command": "wc -c notes.txt"})
            )
        return text("wrote and read notes.txt")

    fake_llm.responder = responder
    await env.start_worker()
    workflow_id = f"xsky-log-{uuid.uuid4().hex[:6]}"
    wf = plan('<agent name="backend" id="1"><task>write notes</task></agent>', name="log")
    (env.home).mkdir(parents=True, exist_ok=True)
    (env.home / "log.xml").write_text(wf)
    code, out, err = await starter(
        env, "run", str(env.home / "log.xml"), "--id", workflow_id, "--follow"
    )
    assert code == 0, out + err

    code, out, err = await starter(env, "log", workflow_id, "T-1", "--json")
    assert code == 0, err
    events = [json.loads(line) for line in out.splitlines()]
    kinds = [e["type"] for e in events]
    # the attempt's own lines, then what the leader's coordinator made of its result
    assert kinds[0] == "attempt" and kinds[-2] == "outcome" and events[-2]["status"] == "completed"
    assert kinds[-1] == "leader"
    assert (events[-1]["point"], events[-1]["verdict"]) == ("result", "accept")
    assert [e["name"] for e in events if e["type"] == "tool_call"] == [
        "file_write",
        "file_read",
        "shell",
    ]
    results = [e for e in events if e["type"] == "tool_result"]
    assert [e["name"] for e in results] == ["file_write", "file_read", "shell"]
    assert "alpha" in results[1]["content"] and "5 notes.txt" in results[2]["content"]
    assert all(e["ms"] >= 0 for e in results)
    decisions = [e for e in events if e["type"] == "permission"]
    assert {d["tool"] for d in decisions} >= {"file_write", "shell"} and all(
        d["effect"] == "allow" for d in decisions
    )
    llm_calls = [e for e in events if e["type"] == "llm"]
    assert len(llm_calls) == 3 and all(e["model"] == "fake-model" for e in llm_calls)
    assert "sk-test-never-in-history-7c1f" not in out  # the key is never logged

    code, out, err = await starter(env, "log", workflow_id, "1")
    assert code == 0, err
    lines = out.splitlines()
    order = [
        next(i for i, line in enumerate(lines) if needle in line)
        for needle in (
            "attempt 1 of T-1",
            "→ file_write",
            "← file_write",
            "→ file_read",
            "→ shell",
            "══ completed",
        )
    ]
    assert order == sorted(order), out
    code, out, err = await starter(env, "log", workflow_id, "T-7")
    assert code == 2 and "no task 'T-7'" in err and "Traceback" not in err


async def test_log_follow_shows_an_agent_at_work_and_stops_when_its_task_ends(env: Env):
    await env.start_worker()
    async with XSky.connect() as x:
        run = await x.run(
            plan(
                '<agent name="shell" id="1"><task>work a while</task>'
                '<config>{"tool": "shell", "command": "sleep 3; echo done"}</config></agent>',
                noop("2", depends="1"),
                name="follow",
            ),
            id=f"xsky-follow-{uuid.uuid4().hex[:6]}",
        )
        code, out, err = await starter(env, "log", run.id, "T-1", "--follow", timeout=60)
        assert code == 0, err
        lines = out.splitlines()
        assert (
            "attempt 1 of T-1" in lines[0]
            and "→ shell" in out
            and lines[-1].split()[1:3] == ["══", "completed"]
        ), out
        assert (await asyncio.wait_for(run.result(), 60)).status == "completed"
        # a no-op keeps no transcript, and `log` says so rather than "not started yet"
        code, out, err = await starter(env, "log", run.id, "T-2")
        assert code == 0 and "a no-op or a loop's gather keeps no transcript" in out, out + err


async def test_signals_without_input_or_with_bad_input_do_not_stall_a_run(env: Env):
    # The Web UI sends no argument when its Data box is empty; `temporal workflow signal`
    # without --input neither. Such signals take their defaults (or are ignored), never
    # failing the leader's workflow tasks.
    await env.start_worker()
    handle = await env.start(plan(noop("1", 1.0), noop("2", depends="1"), name="bare"))
    await handle.signal("pause")
    async with XSky.connect() as x:
        run = await x.get(handle.id)

        async def paused() -> None:
            assert (await run.status()).state == "paused"

        await eventually(paused, 5)
        await handle.signal("nudge")
        await handle.signal("nudge", {"taskId": ["not", "a", "string"]})
        await handle.signal("resume")
        result = await asyncio.wait_for(run.result(), 60)
    assert result.status == "completed" and [a.result for a in result.agents] == ["r1", "r2"]
