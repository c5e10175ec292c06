"""The sandbox as runs meet it: what agents cannot reach, data that stays data, plans that
cannot raise privileges, a killed worker that leaves nothing, the sandbox switched off."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import uuid
from pathlib import Path

import pytest

from client.outcome import run_outcome
from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.helpers import plan, rejected
from tests.integration.test_cli_runs import starter
from tests.integration.test_durability import start_worker_process, stop_worker_process
from tests.unit.test_tools import none_running, running_with
from workflows.leader import LeaderWorkflow
from xsky.leader.state import ReplanRequest
from xsky.runs import RunOptions

pytestmark = pytest.mark.integration

NO_REPLAN = RunOptions(max_auto_replans=0)


def shell(agent_id: str, command: str, depends: str = "") -> str:
    dep = f' depends="{depends}"' if depends else ""
    config = json.dumps({"tool": "shell", "command": command, "retry": {"maximumAttempts": 1}})
    return f'<agent name="shell" id="{agent_id}"{dep}><task>step {agent_id}</task><config><![CDATA[{config}]]></config></agent>'


async def test_agents_cannot_reach_temporal_the_metadata_service_or_another_runs_workspace(
    env: Env,
):
    await env.start_worker(kinds=["shell", "llm"])
    other = await env.run(
        plan(shell("1", "echo other-run-secret-5c1e > secret.txt && echo done"), name="other"),
        options=NO_REPLAN,
    )
    assert other.status == "completed"
    secret = env.home / "runs" / env.handles[-1].id / "workspace" / "secret.txt"
    assert secret.read_text().strip() == "other-run-secret-5c1e"
    host, port = env.address.rsplit(":", 1)
    metadata = [
        "169.254.169.254",
        "2852039166",
        "0xa9fea9fe",
        "0251.0376.0251.0376",
        "[::ffff:169.254.169.254]",
        "169.254.169.254.nip.io",
    ]
    attempts = [
        f"curl -s -m 2 http://{host}:{port}/",
        *(f"curl -s -m 2 http://{m}/latest/meta-data/" for m in metadata),
        f"cat {secret}",
        f"cat ../../{env.handles[-1].id}/workspace/secret.txt",
    ]
    result = await env.run(
        plan(*(shell(str(i + 1), cmd) for i, cmd in enumerate(attempts)), name="probe"),
        options=NO_REPLAN,
    )
    assert [a.status for a in result.agents] == ["failed"] * len(attempts)
    assert all("denied: refused" in (a.error or "") for a in result.agents), [
        a.error for a in result.agents
    ]
    denials = [e for e in result.permission_log if e.tool == "shell" and e.effect == "deny"]
    assert len(denials) == len(attempts)
    assert (
        any("loopback" in e.reason for e in denials)
        and sum("link-local" in e.reason for e in denials) == 6
    )
    assert sum("other runs' files" in e.reason for e in denials) == 2
    assert not any("other-run-secret-5c1e" in (a.result or "") for a in result.agents)


async def test_a_hostile_result_pasted_into_a_command_is_printed_not_run(env: Env):
    await env.start_worker(kinds=["shell", "llm"])
    hostile = 'x\'; touch pwned1; echo "$(touch pwned2)" `touch pwned3` $HOME \\ end'
    big = (
        hostile + " " + "y" * 600
    )  # past the artifact threshold: it travels as a marker, and is quoted all the same
    agents = [
        f'<agent name="llm" id="1"><task>a</task><config>{json.dumps({"tool": "noop", "result": hostile})}</config></agent>',
        f'<agent name="llm" id="2"><task>b</task><config>{json.dumps({"tool": "noop", "result": big})}</config></agent>',
        shell("3", "echo {{agent_1_result}}", depends="1"),
        shell("4", 'echo "{{agent_1_result}}"', depends="1"),
        shell("5", "printf '%s' '{{agent_2_result}}'", depends="2"),
        # where a quote-tracker goes wrong ($(…) inside "…", a heredoc): a name shows, nothing runs
        shell(
            "6",
            "echo \"$(echo '{{agent_1_result}}')\"; cat <<EOF\n{{agent_1_result}}\nEOF",
            depends="1",
        ),
    ]
    handle = await env.start(
        plan(*agents, name="hostile"),
        options=RunOptions(max_auto_replans=0, artifact_threshold=256),
    )
    result = await asyncio.wait_for(run_outcome(handle), 60)
    by_id = {a.id: a for a in result.agents}
    assert result.status == "completed", [
        (a.id, a.error) for a in result.agents if a.status != "completed"
    ]
    assert by_id["3"].result == hostile and by_id["4"].result == hostile
    assert by_id["6"].status == "completed" and "pwned" not in (by_id["6"].result or "").replace(
        hostile, ""
    )
    full = (env.home / "artifacts").rglob("v1-d1-result.txt")
    assert any(
        p.read_text() == big for p in full
    )  # agent 5 printed the big one back, byte for byte
    workspace = env.home / "runs" / handle.id / "workspace"
    assert not list(workspace.glob("pwned*"))


async def test_a_plan_role_that_adds_shell_to_llm_is_refused_with_a_sentence(
    env: Env, tmp_path: Path
):
    widen = tmp_path / "widen.xml"
    widen.write_text(
        '<workflow name="w" taskId="w"><role name="llm" tools="shell" description="x"/>'
        '<agent name="llm" id="1"><task>hi</task></agent></workflow>'
    )
    code, _, err = await starter(env, "run", str(widen))
    err = " ".join(err.split())  # the terminal may wrap long lines
    assert (
        code == 2
        and "gives the role llm shell, which it does not have; a plan may only narrow a role" in err
    )
    assert "nothing was started" in err and "Traceback" not in err

    await env.start_worker()
    handle = await env.start(
        plan(
            '<agent name="llm" id="1"><task>hi</task><config>{"tool": "noop", "seconds": 30}</config></agent>'
        )
    )
    message = await rejected(handle, LeaderWorkflow.replan, ReplanRequest(xml=widen.read_text()))
    assert "a plan may only narrow a role" in message


def sleeping(token: str) -> list[int]:
    """The `sleep <token>` processes themselves."""
    found = []
    for pid in running_with(f"sleep {token}"):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].endswith(b"sleep"):
                found.append(pid)
    return found


async def test_a_worker_killed_during_a_sixty_second_command_leaves_no_process(
    env: Env, tmp_path: Path
):
    token = f"60.{uuid.uuid4().int % 10**6}"
    worker = start_worker_process(env, tmp_path / "w.log")
    try:
        await env.start(plan(shell("1", f"sleep {token} & sleep {token}; echo done")))

        def both_sleeping() -> None:
            # Both sleeps themselves, not only the sandbox's launch chain (whose command lines
            # hold the token too): the command is running, past the sandbox's own start.
            assert len(sleeping(token)) >= 2, f"the command has not started: {sleeping(token)}"

        await eventually(both_sleeping, 60)
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
        await eventually(lambda: none_running(f"sleep {token}"), 5)  # none survived the worker
    finally:
        stop_worker_process(worker)
