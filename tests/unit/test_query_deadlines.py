"""Every query xsky makes of a leader stops waiting before the sticky wait is out.

A query the server held on a dead worker's sticky queue for the whole sticky wait is sent on to
the run's queue as a "legacy" query whose history runs past the run's last workflow task;
sdk-core (temporalio 1.35) applies those events to the run that the worker which took the run
over caches, and the run then fails to replay — that worker's workflow tasks fail for good
(docs/deployment.md; tests/integration/test_query_deadline.py shows it). The server sends a
query on only while its asker still waits, so every asker of xsky's gives up first.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from xsky.config import load_settings

ROOT = Path(__file__).resolve().parents[2]
ASKERS = ["client", "activities", "cli", "workflows"]


# Tests whose runs are queried across worker kills and then replayed: an unbounded query of
# theirs makes the failure their replay looks for (chaos12: test_replay_queried's progress poll).
KILLED_AND_REPLAYED = [
    "tests/integration/test_replay_queried.py",
    # (the query and board helpers the worker-kill tests steer with)
    "tests/integration/helpers.py",
]


# Tests that SIGKILL a run's worker (or stop its server) and query the run meanwhile: an
# unbounded query of theirs can stall in the SDK's legacy-query path and hang the test.
KILL_A_WORKER = [
    "tests/integration/test_durability.py",
    "tests/integration/test_exactly_once.py",
    "tests/integration/test_in_doubt_chaos.py",
    "tests/integration/test_worker_loss.py",
]


def _calls(folders: list[str] = ASKERS) -> list[tuple[str, ast.Call]]:
    found = []
    for folder in folders:
        paths = [ROOT / folder] if folder.endswith(".py") else sorted((ROOT / folder).rglob("*.py"))
        for path in paths:
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                    found.append((f"{path.relative_to(ROOT)}:{node.lineno}", node))
    return found


def _unbounded(folders: list[str] = ASKERS) -> tuple[int, list[str]]:
    unbounded = []
    asked = 0
    for where, call in _calls(folders):
        keywords = {k.arg: ast.unparse(k.value) for k in call.keywords}
        if call.func.attr == "query" and call.args:  # WorkflowHandle.query(name, arg, ...)
            deadline = keywords.get("rpc_timeout")
        elif call.func.attr == "query_workflow":  # the raw service call
            deadline = keywords.get("timeout")
        else:
            continue
        asked += 1
        if deadline is None or not ("query_timeout" in deadline.lower() or deadline == "timeout"):
            unbounded.append(f"{where} ({deadline})")
    return asked, unbounded


def test_every_query_of_a_leader_has_a_deadline():
    # (a deadline of its own would not follow the sticky wait: each is Settings.query_timeout,
    # or a function's ``timeout`` parameter, which its callers give it)
    asked, unbounded = _unbounded()
    assert asked >= 5  # (the walk finds the askers: the client's, the agents')
    assert unbounded == []


def test_the_queries_of_tests_that_kill_a_runs_worker_and_replay_it_have_a_deadline():
    asked, unbounded = _unbounded(KILLED_AND_REPLAYED)
    assert asked >= 2  # (the board poll and the progress poll)
    assert unbounded == []


def test_the_queries_of_tests_that_kill_a_runs_worker_have_a_deadline():
    # (they ask through tests/integration/helpers.query, or give its deadline themselves)
    _, unbounded = _unbounded(KILL_A_WORKER)
    assert unbounded == []
    uses = sum(
        isinstance(call.func, ast.Name) and call.func.id == "query"
        for path in KILL_A_WORKER
        for call in ast.walk(ast.parse((ROOT / path).read_text()))
        if isinstance(call, ast.Call)
    )
    assert uses >= 7  # (the walk finds them: each file's board or request polls)


@pytest.mark.parametrize("sticky", ["2", "3", "10"])
async def test_the_helpers_query_deadline_follows_the_tests_sticky_wait(
    sticky: str, monkeypatch: pytest.MonkeyPatch
):
    """test_durability's workers wait 3 s on a sticky queue: the helpers' deadline is under
    that wait, not under the default 10 s one."""
    from tests.integration import helpers

    monkeypatch.setenv("XSKY_STICKY_TIMEOUT", sticky)
    asked = []

    class Handle:
        async def query(self, what: object, *args: object, rpc_timeout: object = None) -> str:
            asked.append(rpc_timeout)
            return "board"

    assert await helpers.query(Handle(), "task_board") == "board"  # type: ignore[arg-type]
    (deadline,) = asked
    assert deadline == load_settings({"XSKY_STICKY_TIMEOUT": sticky}).query_timeout
    assert deadline.total_seconds() < float(sticky)


async def test_the_helpers_query_asks_again_past_its_deadline_until_its_own():
    """A query past its rpc_timeout is an RPCError ("Timeout expired", CANCELLED) from the SDK,
    not its RPCTimeoutOrCancelledError: the helper raised it at the first timeout, where a
    killed worker's run is only waiting for another worker (test_durability under load); and
    so is "no poller seen" while a worker started again has not polled yet."""
    from temporalio.service import RPCError, RPCStatusCode

    from tests.integration import helpers

    tries = []

    class Handle:
        async def query(self, what: object, *args: object, rpc_timeout: object = None) -> str:
            tries.append(rpc_timeout)
            if len(tries) == 1:
                raise RPCError("Timeout expired", RPCStatusCode.CANCELLED, b"")
            if len(tries) == 2:  # a worker started again, not polling yet
                raise RPCError(
                    "no poller seen for task queue recently, worker may be down",
                    RPCStatusCode.FAILED_PRECONDITION,
                    b"",
                )
            return "board"

    assert await helpers.query(Handle(), "task_board") == "board"  # type: ignore[arg-type]
    assert len(tries) == 3

    class Refused:
        async def query(self, what: object, *args: object, rpc_timeout: object = None) -> str:
            raise RPCError("workflow not found", RPCStatusCode.NOT_FOUND, b"")

    with pytest.raises(RPCError):  # anything else is the caller's to see
        await helpers.query(Refused(), "task_board")  # type: ignore[arg-type]


@pytest.mark.parametrize("sticky", ["1", "3", "10", "30"])
def test_the_query_deadline_is_under_the_sticky_wait(sticky: str):
    settings = load_settings({"XSKY_STICKY_TIMEOUT": sticky})
    wait = settings.query_timeout.total_seconds()
    assert 0 < wait < settings.sticky_timeout and wait <= 5
