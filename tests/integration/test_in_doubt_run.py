"""Exactly once, or ask: a worker SIGKILLed during four calls at once. The calls that must not
run again unasked (a direct command marked ``"idempotent": false``, a model's call of one) raise
requests a person answers — done, again, skip — and each is acted on exactly so; the
idempotent one is retried silently, with the same ``XSKY_ATTEMPT_KEY``."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import pytest
from temporalio.client import WorkflowUpdateFailedError

from client.outcome import run_outcome
from tests.conftest import Env
from tests.fake_llm import FakeLLM, calls, last_tool_output, text, turn_of
from tests.integration.eventually import eventually
from tests.integration.helpers import plan, wait_requests
from tests.integration.test_agents_llm import agent
from tests.integration.test_durability import stop_worker_process
from tests.integration.test_recovery import shell_worker
from workflows.leader import LeaderWorkflow
from xsky.leader.state import AnswerRequest
from xsky.runs import RunOptions

pytestmark = pytest.mark.integration


def _command(n: int, line: str) -> str:
    # The effect, then (the first time only) the wait during which the worker dies.
    return (
        f"echo {line} >> fx{n}.txt; if test -e started-{n}; then echo ran; exit 0; fi; "
        f"touch started-{n}; sleep 60"
    )


def _direct(n: int, idempotent: bool) -> str:
    cfg = {"tool": "shell", "command": _command(n, "effect"), "heartbeatTimeout": 3}
    if not idempotent:
        cfg["idempotent"] = False
    return agent(str(n), "shell", f"effect {n}", json.dumps(cfg))


async def test_calls_in_doubt_after_a_sigkill_are_asked_about_and_never_silently_repeated(
    env: Env, fake_llm: FakeLLM, tmp_path: Path
):
    model_effect = "echo effect >> fx4.txt; touch started-4; sleep 60"

    def responder(req, i):
        if turn_of(req) == 0:
            return calls(("shell", {"command": model_effect}))
        return text("finished; the refund call said: " + last_tool_output(req)[:40])

    fake_llm.responder = responder
    await env.start_worker(kinds=["llm"])  # the leader; the shell agents run in a process
    keyed = agent(
        "3",
        "shell",
        "keyed",
        json.dumps(
            {
                "tool": "shell",
                "command": 'echo "$XSKY_ATTEMPT_KEY" >> fx3.txt; if test -e started-3; then '
                "echo ran; exit 0; fi; touch started-3; sleep 60",
                "heartbeatTimeout": 3,
            }
        ),
    )
    model = agent("4", "shell", "Send the refund", '{"idempotent": false, "heartbeatTimeout": 3}')
    handle = await env.start(
        plan(_direct(1, False), _direct(2, False), keyed, model, name="doubt"),
        options=RunOptions(max_auto_replans=0, coordinator="off"),
    )
    workspace = env.home / "runs" / handle.id / "workspace"
    first = shell_worker(env, tmp_path / "first.log")
    second = None
    try:

        def all_started() -> None:
            missing = [n for n in (1, 2, 3, 4) if not (workspace / f"started-{n}").exists()]
            assert not missing, f"not started yet: {missing}"

        try:
            await eventually(all_started, timeout=60)
        except AssertionError:
            from tests.integration.helpers import board

            b = await board(handle)
            raise AssertionError(
                {k: (v.status, v.error, v.last_progress) for k, v in b.items()}
            ) from None
        first.send_signal(signal.SIGKILL)
        assert first.wait(timeout=10) == -signal.SIGKILL
        second = shell_worker(env, tmp_path / "second.log")
        requests = await wait_requests(handle, 3, timeout=60)
        by_task = {r.task_id: r for r in requests}
        assert sorted(by_task) == ["T-1", "T-2", "T-4"], [(r.task_id, r.text) for r in requests]
        assert all(r.choices == ["again", "skip", "done"] for r in requests)
        assert "may have run" in by_task["T-1"].text and "idempotent" in by_task["T-1"].text
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await handle.execute_update(
                LeaderWorkflow.answer, AnswerRequest(request_id=by_task["T-1"].id, text="sure")
            )
        assert "takes one of: again, skip, done" in str(refused.value.cause)
        for task_id, said in (("T-1", "done: refund 118 sent"), ("T-2", "again"), ("T-4", "skip")):
            await handle.execute_update(
                LeaderWorkflow.answer, AnswerRequest(request_id=by_task[task_id].id, text=said)
            )
        result = await asyncio.wait_for(run_outcome(handle), 90)
    finally:
        for proc in (first, second):
            if proc is not None:
                if proc.poll() is None and proc is first:
                    proc.kill()
                else:
                    stop_worker_process(proc)
    assert result.status == "completed", result.summary
    results = {a.id: a.result for a in result.agents}
    # done: not repeated; its answer is its result
    assert (workspace / "fx1.txt").read_text() == "effect\n"
    assert results["1"] == "refund 118 sent"
    # again: repeated exactly once
    assert (workspace / "fx2.txt").read_text() == "effect\neffect\n"
    # idempotent: retried without asking, with the dispatch's one attempt key
    keys = (workspace / "fx3.txt").read_text().splitlines()
    assert len(keys) == 2 and keys[0] == keys[1] and keys[0].startswith("xsky:")
    # skip: the model's call not repeated, and the model told so
    assert (workspace / "fx4.txt").read_text() == "effect\n"
    told = [last_tool_output(r) for r in fake_llm.requests if turn_of(r) == 1]
    assert told and told[-1].startswith("SKIPPED"), told
    assert fake_llm.requests and all(
        r["messages"][-1].get("content") != model_effect for r in fake_llm.requests
    )
