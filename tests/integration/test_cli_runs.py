"""starter.py against a real server: run (and --follow), status, result, list; bad plans."""

from __future__ import annotations

import asyncio
import json
import sys
import uuid
from pathlib import Path

import pytest

from tests.cli_zygote import zygote
from tests.conftest import ROOT, Env
from tests.integration.eventually import eventually

pytestmark = pytest.mark.integration


async def starter(
    env: Env, *args: str, timeout: float = 120, fresh: bool = False
) -> tuple[int, str, str]:
    """``starter.py ARGS`` in a process of its own, with the test's environment: its exit code,
    stdout and stderr. The process is a fork of one that has already imported what the CLI's
    commands import (tests/cli_zygote.py: ~1 s less per command); ``fresh`` starts a new
    interpreter instead, as a person's shell does."""
    if fresh:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(ROOT / "starter.py"),
            *args,
            env=env.environ(),
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
        code = proc.returncode or 0
    else:
        code, out, err = await zygote().run(list(args), env.environ(), ROOT, timeout)
    if code < 0:  # killed by a signal: show what it said
        raise AssertionError(
            f"starter.py {' '.join(args)} died with signal {-code}:\n{out.decode()}\n{err.decode()}"
        )
    return code, out.decode(), err.decode()


async def test_run_of_an_invalid_plan_exits_2_and_starts_nothing(env: Env):
    workflow_id = f"xsky-invalid-{uuid.uuid4().hex[:6]}"
    code, out, err = await starter(
        env, "run", str(ROOT / "examples/invalid/many_problems.xml"), "--id", workflow_id
    )
    assert code == 2
    assert "many_problems.xml:3:3:" in err and "nothing was started" in err
    found = [wf async for wf in env.client.list_workflows(f"WorkflowId='{workflow_id}'")]
    assert found == []
    # A --var or --context name the plan does not have is a typo: said, nothing started.
    code, out, err = await starter(
        env, "run", str(ROOT / "examples/diamond.xml"), "--id", workflow_id, "--var", "tpoic=x"
    )
    assert (
        code == 2
        and "--var tpoic: the plan has no such name (its names: topic)" in err
        and "Traceback" not in err
    )
    code, out, err = await starter(
        env, "run", str(ROOT / "examples/diamond.xml"), "--id", workflow_id, "--context", "user=ann"
    )
    assert code == 2 and "--context user: the plan has no such name (its names: none)" in err
    assert [wf async for wf in env.client.list_workflows(f"WorkflowId='{workflow_id}'")] == []


async def test_run_follow_then_status_result_and_list(env: Env):
    await env.start_worker()
    workflow_id = f"xsky-cli-{uuid.uuid4().hex[:6]}"
    code, out, err = await starter(
        env,
        "run",
        str(ROOT / "examples/diamond.xml"),
        "--id",
        workflow_id,
        "--var",
        "topic=cli",
        "--follow",
    )
    assert code == 0, err
    assert f"started {workflow_id}" in out and f"/workflows/{workflow_id}" in out
    assert "4 of 4 agents completed" in out

    code, out, err = await starter(env, "status", workflow_id, "--json")
    board = json.loads(out)
    assert code == 0 and board["status"] == "completed"
    assert board["state"] == "completed", board["state"]  # (it said "finishing": walk9)
    assert [t["id"] for t in board["tasks"]] == ["T-1", "T-2", "T-3", "T-4"]
    assert all(t["status"] == "completed" and t["durationS"] is not None for t in board["tasks"])

    code, out, _ = await starter(env, "result", workflow_id, "--agent", "1")
    assert code == 0 and out.startswith("topic: cli")

    code, out, _ = await starter(env, "result", workflow_id, "--json")
    assert json.loads(out)["status"] == "completed"

    code, out, _ = await starter(env, "list", "--json")
    assert any(
        r["workflowId"] == workflow_id and r["status"] == "completed" for r in json.loads(out)
    )

    # Steering an ended run is a sentence, not a traceback.
    for command in (
        ["pause", workflow_id],
        ["nudge", workflow_id, "1", "hurry"],
        ["answer", workflow_id, "Q-1", "yes"],
        ["cancel", workflow_id],
    ):
        code, out, err = await starter(env, *command)
        assert (
            code == 2
            and f"{workflow_id} has already ended (completed)" in err
            and "Traceback" not in err + out
        ), (command, err)


async def test_run_json_prints_the_id_and_link_and_a_failed_run_exits_1(env: Env):
    await env.start_worker()
    plan = env.home / "fail.xml"
    env.home.mkdir(parents=True, exist_ok=True)
    plan.write_text(
        '<workflow name="f" taskId="f"><agent name="shell" id="1"><task>x</task><config>{"tool": "shell", "command": "exit 4", "retry": {"maximumAttempts": 1}}</config></agent></workflow>'
    )
    workflow_id = f"xsky-f-{uuid.uuid4().hex[:6]}"
    code, out, err = await starter(env, "run", str(plan), "--id", workflow_id, "--json")
    assert code == 0 and json.loads(out)["workflowId"] == workflow_id
    code, out, err = await starter(env, "result", workflow_id, "--wait")
    assert code == 1 and "exited with status 4" in out
    # One failed agent's result is its failure, not an empty line, and the exit says so.
    code, out, err = await starter(env, "result", workflow_id, "--agent", "T-1")
    assert code == 1 and "T-1 (shell) failed" in out and "exited with status 4" in out, out + err
    code, out, _ = await starter(env, "result", workflow_id, "--agent", "1", "--json")
    assert code == 1 and json.loads(out)["status"] == "failed"


async def test_an_agent_of_a_run_still_going_gives_its_result_once_it_has_ended(env: Env):
    """`result RUN --agent T-1` of a running run exited 2 ("still running") though T-1 had
    completed; one still working says where it is."""
    await env.start_worker()
    plan = env.home / "going.xml"
    env.home.mkdir(parents=True, exist_ok=True)
    shell = '{"tool": "shell", "command": "%s"}'
    plan.write_text(
        '<workflow name="g" taskId="g">'
        f'<agent name="shell" id="1"><task>x</task><config>{shell % "echo first"}</config></agent>'
        f'<agent name="shell" id="2"><task>y</task><config>{shell % "sleep 60"}</config></agent>'
        "</workflow>"
    )
    workflow_id = f"xsky-going-{uuid.uuid4().hex[:6]}"
    code, _, err = await starter(env, "run", str(plan), "--id", workflow_id, "--json")
    assert code == 0, err

    async def first_done() -> None:
        code, out, _ = await starter(env, "result", workflow_id, "--agent", "T-1")
        assert code == 0 and out.strip() == "first", out

    await eventually(first_done, 60)
    code, out, err = await starter(env, "result", workflow_id, "--agent", "2")
    assert code == 2 and f"T-2 of {workflow_id} has not ended (" in err and "--wait" in err, err
    await starter(env, "cancel", workflow_id)


async def test_status_says_why_each_attempt_of_a_retried_task_ended(env: Env):
    await env.start_worker()
    plan = env.home / "flaky.xml"
    env.home.mkdir(parents=True, exist_ok=True)
    # fails twice (exit 5, then exit 6), then succeeds: the workspace keeps its marks
    command = "if test -f t2; then echo ok; elif test -f t1; then touch t2; exit 6; else touch t1; exit 5; fi"
    plan.write_text(
        '<workflow name="flaky" taskId="flaky"><agent name="shell" id="1"><task>x</task><config>'
        + json.dumps(
            {
                "tool": "shell",
                "command": command,
                "retries": 2,  # a non-zero exit is final unless the agent opts in
                "retry": {"initialInterval": 0.2},
            }
        )
        + "</config></agent></workflow>"
    )
    workflow_id = f"xsky-flaky-{uuid.uuid4().hex[:6]}"
    code, out, err = await starter(env, "run", str(plan), "--id", workflow_id)
    assert code == 0, out + err
    code, out, err = await starter(env, "result", workflow_id, "--wait")
    assert code == 0, out + err
    code, out, err = await starter(env, "status", workflow_id)
    said = " ".join(out.split())
    assert code == 0 and "T-1 (shell): 3 attempts" in said, out + err
    assert "attempt 1: error:" in said and "exited with status 5" in said, out
    assert "attempt 2: error:" in said and "exited with status 6" in said, out
    assert "attempt 3" not in said  # it completed: nothing to explain
    code, out, _ = await starter(env, "status", workflow_id, "--json")
    lines = json.loads(out)["attempts"]["T-1"]
    assert [line.split(":")[0] for line in lines] == ["attempt 1", "attempt 2"]


async def test_unknown_run_and_unreachable_server_are_clear_errors(
    env: Env, monkeypatch: pytest.MonkeyPatch
):
    # The server is up, but no worker polls this test's queue: said, instead of waiting forever
    # (after XSKY_WORKER_WAIT seconds: 1 here, not the default 10).
    monkeypatch.setenv("XSKY_WORKER_WAIT", "1")
    workflow_id = f"xsky-noworker-{uuid.uuid4().hex[:6]}"
    code, _, err = await starter(
        env, "run", str(ROOT / "examples/diamond.xml"), "--id", workflow_id, "--follow"
    )
    assert (
        code == 2
        and f"no worker serves the task queue '{env.settings.task_queue}'" in err
        and "starter.py up" in err
    )
    assert [wf async for wf in env.client.list_workflows(f"WorkflowId='{workflow_id}'")] == []
    code, _, err = await starter(env, "status", "xsky-no-such-run")
    assert code == 2 and "no run with id xsky-no-such-run" in err and "Traceback" not in err
    env_bad = Env(client=env.client, settings=env.settings, address="127.0.0.1:1", home=env.home)
    code, _, err = await starter(env_bad, "list")
    assert code == 2 and "cannot reach Temporal at 127.0.0.1:1" in err and "Traceback" not in err


async def test_the_demo_runs_every_agent_kind_against_a_local_page(env: Env):
    """What `make demo` does, against the test server: starts a worker, serves the page, runs."""
    try:
        code, out, err = await starter(
            env, "demo", timeout=180, fresh=True
        )  # as `make demo` runs it
        assert code == 0, out + err
        assert "6 of 6 agents completed" in out
        assert "Durable agents, explained" in out  # the browser read the locally served page
        assert "[offline provider]" in out and "report.md" in out
        # the summary was made offline, and the results say so on its own line
        summaries = [line for line in out.splitlines() if "│ T-4" in line and "completed" in line]
        # (the final board and the results)
        assert summaries and all("completed (offline)" in line for line in summaries), out
        # offline, the leader says it judged nothing: the goal was not checked
        assert "goal not checked: T-4 answered offline (no model)" in " ".join(out.split())
        assert "worker started" in out
        # The worker it left running is an ordinary one: it decides by the person's own
        # settings (the demo's site was opened for the demo's run alone), so the rules they
        # write hold for the plans they run next on it.
        from cli.server_cmd import _pid_file, _read_pid

        pid = _read_pid(_pid_file(env.settings, "worker"))
        assert pid is not None
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        demo_file = f"XSKY_USER_SETTINGS={env.home / 'demo' / 'settings.json'}".encode()
        assert demo_file not in environ
        assert not (env.home / "demo" / "settings.json").exists()
    finally:
        code, out, _ = await starter(env, "down")
        assert "worker: stopped" in out


async def test_steering_commands_of_starter(env: Env):
    from tests.integration.helpers import RUNNING, ask, board_shows, noop, plan

    await env.start_worker()
    env.home.mkdir(parents=True, exist_ok=True)
    path = env.home / "steer.xml"
    path.write_text(
        plan(ask("1", "Proceed?"), noop("2", 30), noop("3", 0, depends="1"), name="cli-steer")
    )
    workflow_id = f"xsky-steer-{uuid.uuid4().hex[:6]}"
    code, out, err = await starter(env, "run", str(path), "--id", workflow_id, "--review")
    assert code == 0 and "approve-plan" in out, err
    code, out, err = await starter(env, "approve-plan", workflow_id, "--version", "3")
    assert code == 2 and "refused: there is no plan v3: the plan waiting for review is v1" in err
    # `plan` says which version waits; approving needs that version, said explicitly
    code, out, err = await starter(env, "plan", workflow_id)
    assert code == 0 and out.lstrip().startswith("<") and "plan v1 waits for review" in err
    code, out, err = await starter(env, "approve-plan", workflow_id)
    assert code == 2 and "v1 waits for review" in err, err
    assert f"starter.py approve-plan {workflow_id} --version 1" in " ".join(err.split())
    # replanned after the person read v1: their approval of v1 is refused, not applied to v2
    code, out, err = await starter(env, "replan", workflow_id, "--xml", str(path))
    assert code == 0 and "plan v2" in out, err
    code, out, err = await starter(env, "approve-plan", workflow_id, "--version", "1")
    assert code == 2 and "you reviewed v1 but the plan is now v2" in err, err
    code, out, _ = await starter(env, "approve-plan", workflow_id, "--version", "2")
    assert code == 0 and "plan v2 approved" in out

    handle = env.client.get_workflow_handle(workflow_id)
    await eventually(lambda: board_shows(handle, {"1": "blocked", "2": RUNNING}))
    code, out, _ = await starter(env, "requests", workflow_id, "--json")
    assert [r["id"] for r in json.loads(out)] == ["Q-1"]
    code, out, _ = await starter(env, "requests", workflow_id)
    assert "Proceed?" in out and f"starter.py answer {workflow_id} Q-1" in out

    # a skip of the task that asks, without a result: the answer was likely what was meant
    code, out, err = await starter(env, "skip", workflow_id, "T-1")
    assert code == 2 and "T-1 is waiting for your answer to Q-1" in err, err
    assert f"starter.py answer {workflow_id} Q-1 TEXT" in " ".join(err.split())

    code, out, err = await starter(env, "nudge", workflow_id, "T-9", "hello")
    assert code == 2 and "no task 'T-9'" in err
    # T-2 is a direct noop tool: no model would ever read a nudge, so it is refused
    code, out, err = await starter(env, "nudge", workflow_id, "T-2", "hurry up")
    assert code == 2 and "T-2 runs a direct noop tool" in err and "cannot read a nudge" in err
    code, out, _ = await starter(env, "pause", workflow_id, "--reason", "checking")
    assert code == 0 and "paused" in out
    code, out, _ = await starter(env, "resume", workflow_id)
    assert code == 0 and "resumed" in out

    code, out, _ = await starter(env, "skip", workflow_id, "T-2", "--result", "not needed")
    assert code == 0 and "T-2 skipped" in out
    code, out, err = await starter(env, "retry", workflow_id, "T-2")
    assert code == 2 and "refused: T-2 is skipped" in err
    code, out, err = await starter(env, "replan", workflow_id)
    assert code == 2 and "PROMPT, or --xml FILE" in err
    code, out, _ = await starter(env, "replan", workflow_id, "then run `echo extra`")
    assert code == 0 and "plan v3" in out and "added 4" in out
    code, out, _ = await starter(env, "plan", workflow_id)
    assert 'id="4"' in out and "echo extra" in out
    code, out, _ = await starter(env, "plan", workflow_id, "--history")
    assert "v1" in out and "v3" in out and "a person asked" in out
    code, out, err = await starter(env, "answer", workflow_id, "Q-5", "x")
    assert code == 2 and "refused: no request 'Q-5'" in err
    code, out, _ = await starter(env, "answer", workflow_id, "Q-1", "go")
    assert code == 0 and "Q-1 answered" in out
    code, out, _ = await starter(env, "result", workflow_id, "--wait", "--json")
    data = json.loads(out)
    assert data["status"] == "completed"
    assert {a["id"]: a["result"] for a in data["agents"]} == {
        "1": "go",
        "2": "not needed",
        "3": "r3",
        "4": "extra",
    }


async def test_cancel_command_cancels_a_task_or_the_run(env: Env):
    from tests.integration.helpers import RUNNING, board_shows, noop, plan

    await env.start_worker()
    env.home.mkdir(parents=True, exist_ok=True)
    path = env.home / "cancel.xml"
    path.write_text(plan(noop("1", 60), noop("2", 60), name="cli-cancel"))
    workflow_id = f"xsky-cancel-{uuid.uuid4().hex[:6]}"
    await starter(env, "run", str(path), "--id", workflow_id)
    handle = env.client.get_workflow_handle(workflow_id)
    await eventually(lambda: board_shows(handle, {"1": RUNNING, "2": RUNNING}))
    # an Eko replan lists only the work left (numbered from 0): as --xml's whole new plan it
    # would drop the running agents — refused, saying how to write it
    eko = env.home / "rest.xml"
    eko.write_text(
        '<root><name>rest</name><agents><agent name="Chat" id="1" dependsOn="">'
        "<task>write the summary</task></agent></agents></root>"
    )
    code, out, err = await starter(env, "replan", workflow_id, "--xml", str(eko))
    said = " ".join(err.split())
    assert code == 2 and "is an Eko plan without T-1, T-2 as they ran or run" in said, said
    assert f"starter.py plan {workflow_id} > plan.xml" in said
    code, out, _ = await starter(env, "cancel", workflow_id, "T-1")
    assert code == 0 and "T-1 cancelled" in out
    code, out, _ = await starter(env, "cancel", workflow_id)
    assert code == 0 and "cancellation" in out

    async def cancelled() -> None:
        assert (await handle.describe()).status.name == "CANCELED"

    await eventually(cancelled, timeout=10)
    # Its RunResult is still there: every agent's report, exit 1 (the run did not complete).
    code, out, err = await starter(env, "result", workflow_id, "--json")
    assert code == 1, err
    result = json.loads(out)
    assert result["status"] == "cancelled" and result["summary"].startswith("cancelled: 0 of 2")
    assert [(a["taskId"], a["status"]) for a in result["agents"]] == [
        ("T-1", "cancelled"),
        ("T-2", "cancelled"),
    ]


async def test_a_printed_plan_is_exact_xml_even_with_lines_longer_than_the_terminal(env: Env):
    step = "Run `echo " + "a-rather-long-argument-" * 12 + "end`"
    code, out, err = await starter(env, "plan", f"1. {step} 2. Run `echo beta`")
    assert code == 0, err
    from xsky.plan.xml import parse_workflow

    # stdout is the plan and nothing else (`plan "…" > plan.xml`); the tree and notes go to stderr
    wf = parse_workflow(out)  # a saved copy validates: nothing was wrapped inside the XML
    assert "planned by" in err and "level 0" in err
    assert any(
        "a-rather-long-argument-" * 12 + "end" in (a.task + json.dumps(a.config or {}))
        for a in wf.agents
    )


async def test_each_start_of_the_same_plan_is_a_run_of_its_own_with_its_own_workspace(env: Env):
    from client.outcome import run_outcome
    from workflows.leader import LeaderWorkflow

    await env.start_worker()
    ids = []
    for _ in range(2):  # back to back, within the same second
        code, out, err = await starter(env, "run", str(ROOT / "examples/chain.xml"), "--json")
        assert code == 0, err
        ids.append(json.loads(out)["workflowId"])
    assert ids[0] != ids[1] and all(i.startswith("xsky-example-chain-") for i in ids)
    for workflow_id in ids:
        result = await asyncio.wait_for(
            run_outcome(env.client.get_workflow_handle_for(LeaderWorkflow.run, workflow_id)), 60
        )
        assert result.status == "completed"
        assert (env.home / "runs" / workflow_id / "workspace" / "note.txt").exists()


async def test_gc_removes_an_ended_runs_objects_and_later_reads_say_so(env: Env):
    """After `gc`, `log` blamed XSKY_STORE and `result --agent` a misconfigured XSKY_ARTIFACTS
    (with the stored reference's raw repr): the run's objects were removed, and they say so."""
    from activities.storage import open_objects
    from tests.integration.helpers import plan

    await env.start_worker()
    long = "x" * 600  # over what travels inline: stored, read back by reference
    shell = (
        '<agent name="shell" id="1"><task>print</task>'
        f'<config>{{"tool": "shell", "command": "printf {long}"}}</config></agent>'
    )
    handle = await env.start(plan(shell, name="gc"))
    assert (await handle.result()).status == "completed"
    code, out, _ = await starter(env, "result", handle.id, "--agent", "1")
    assert code == 0 and long in "".join(out.split())
    store = open_objects(env.settings)
    assert len(store.keys(handle.id + "/")) > 1

    code, out, err = await starter(env, "gc", "--run", handle.id)
    assert code == 0 and f"{handle.id}: removed" in out, out + err
    assert store.keys(handle.id + "/") == [f"{handle.id}/_gc.json"]  # only its mark is left
    for args in (("result", handle.id, "--agent", "1"), ("log", handle.id, "T-1")):
        code, out, err = await starter(env, *args)
        said = " ".join((out + err).split())
        assert "removed by `starter.py gc` on" in said, said
        assert "XSKY_ARTIFACTS" not in said and "XSKY_STORE" not in said and "sha256=" not in said
    code, out, _ = await starter(env, "gc", "--run", handle.id)  # again: nothing more to do
    assert code == 0 and "already removed by `starter.py gc`" in " ".join(out.split())


async def test_gc_keeps_a_running_run_whose_folder_is_not_its_id(env: Env):
    """A run id with a ':' is stored under a folder made safe for a path (its cleaned form and
    a hash): gc asked the server about the folder, heard "unknown" and removed the objects of
    a run still running — its kept outcomes with them."""
    from activities.storage import open_objects
    from tests.integration.helpers import RUNNING, board_shows, plan
    from xsky.artifacts import safe_component

    await env.start_worker()
    echo = '<agent name="shell" id="1"><task>say</task><config>{"tool": "shell", "command": "echo hi"}</config></agent>'
    slow = '<agent name="shell" id="2" depends="1"><task>wait</task><config>{"tool": "shell", "command": "sleep 30"}</config></agent>'
    run_id = f"sec:gc-{uuid.uuid4().hex[:6]}"
    handle = await env.start(plan(echo, slow, name="gc-colon"), workflow_id=run_id)
    folder = safe_component(run_id)
    assert folder != run_id
    store = open_objects(env.settings)

    def stored() -> None:
        assert store.keys(folder + "/"), "nothing stored yet"

    await eventually(stored, 30)
    # T-1's objects all written (it ended, T-2 runs): what is there stays the same meanwhile
    await eventually(lambda: board_shows(handle, {"1": "completed", "2": RUNNING}), 30)
    before = store.keys(folder + "/")
    for args in (("gc",), ("gc", "--run", run_id)):
        code, out, err = await starter(env, *args)
        assert code == 0, err
        # nothing removed (the running T-2 may add its own log lines meanwhile)
        assert set(before) <= set(store.keys(folder + "/")), (args, out)
        assert "running: kept" in " ".join(out.split()), out
    await handle.terminate("test over")


async def test_plan_of_a_mistyped_run_id_names_the_run_not_a_new_plan(env: Env):
    """`plan my-frist-run` planned the typo as a request (exit 0, a one-agent plan; with a
    model, tokens spent): a word shaped as an id close to a recent run's is taken for one."""
    from tests.integration.helpers import noop, plan

    await env.start_worker()
    # (not the tutorial's own id: a test of it may share this server)
    handle = await env.start(plan(noop("1"), name="typo"), workflow_id="my-typo-run")
    await handle.result()
    code, out, err = await starter(env, "plan", "my-tpyo-run")
    said = " ".join((out + err).split())
    assert code == 2 and "no run with id my-tpyo-run — did you mean my-typo-run?" in said, said
    code, out, _ = await starter(env, "plan", "my-typo-run")  # the run's own plan
    assert code == 0 and "<workflow" in out and 'name="typo"' in out
    code, out, err = await starter(env, "plan", "summarise")  # one word, a request
    assert code == 0 and "no run with id" not in out + err
    assert "no run has the id" not in err  # (plain letters: no id was meant)
    # shaped as an id, close to no run's: planned as a request, and said so
    code, out, err = await starter(env, "plan", "nope-run-42")
    assert code == 0 and "no run has the id nope-run-42: planned as a request" in " ".join(
        err.split()
    )
