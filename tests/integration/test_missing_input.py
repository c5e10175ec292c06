"""A query or an update sent with the stock `temporal` CLI without its `--input` is refused in
one sentence saying what input it takes — not a Python TypeError (`LeaderQueries.nudges()
missing 1 required positional argument: 'req'`, walk9). A query that takes no input, or an
optional one, still answers without it."""

from __future__ import annotations

import pytest

from tests.conftest import Env
from tests.integration.helpers import ask, plan, wait_requests
from tests.integration.test_refusals import temporal

pytestmark = pytest.mark.integration


async def test_queries_and_updates_without_their_input_say_what_input_they_take(env: Env):
    await env.start_worker()
    handle = await env.start(plan(ask("1", "Which region?")))
    await wait_requests(handle, 1)
    wid = ["--workflow-id", handle.id]

    code, out = await temporal(env, "workflow", "query", *wid, "--type", "nudges")
    assert code != 0, out
    assert "missing 1 required positional argument" not in out, out
    assert "the query `nudges` needs its input: --input '{\"taskId\": …}'" in out, out

    for name, field in (("nudge_task", '"taskId": …, "message": …'), ("answer", '"requestId"')):
        code, out = await temporal(env, "workflow", "update", "execute", *wid, "--name", name)
        assert code != 0, out
        assert "missing 1 required positional argument" not in out, out
        assert f"the update `{name}` needs its input: --input '{{" in out and field in out, out
        assert "nothing was changed" in out, out

    # the documented recipe answers; queries without an input (or an optional one) still do
    code, out = await temporal(
        env, "workflow", "query", *wid, "--type", "nudges", "--input", '{"taskId": "T-1"}'
    )
    assert code == 0, out
    for name in ("task_board", "pending_requests", "results"):
        code, out = await temporal(env, "workflow", "query", *wid, "--type", name)
        assert code == 0 and "QueryResult" in out, out
    await handle.terminate("test over")


async def test_resume_run_and_pause_run_without_input_are_taken_as_their_signals_are(env: Env):
    """walk11: the resume signal takes no input, its answered twin refused a bare call."""
    await env.start_worker()
    handle = await env.start(plan(ask("1", "Which region?")))
    await wait_requests(handle, 1)
    wid = ["--workflow-id", handle.id]
    code, out = await temporal(env, "workflow", "update", "execute", *wid, "--name", "pause_run")
    assert code == 0 and "paused" in out, out
    code, out = await temporal(env, "workflow", "update", "execute", *wid, "--name", "resume_run")
    assert code == 0 and "needs its input" not in out and "resumed" in out, out
    code, out = await temporal(env, "workflow", "update", "execute", *wid, "--name", "end_run")
    assert code != 0 and "the update `end_run` needs its input" in out, out
    await handle.terminate("test over")
