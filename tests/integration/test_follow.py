"""Re-attaching: `follow RUN` and `status RUN --follow` show the live board of a run started
elsewhere, the outcome of an ended one at once, and Ctrl-C leaves the run running."""

from __future__ import annotations

import asyncio
import signal
import sys
import uuid

import pytest

from client import XSky
from tests.conftest import ROOT, Env
from tests.integration.helpers import ask, noop, plan, wait_requests
from tests.integration.test_cli_runs import starter

pytestmark = pytest.mark.integration


async def test_follow_shows_a_running_runs_board_to_its_end_and_then_an_ended_run_at_once(
    env: Env,
):
    await env.start_worker()
    run_id = f"xsky-follow-{uuid.uuid4().hex[:6]}"
    async with XSky.connect() as x:
        await x.run(plan(noop("1", 3), noop("2", depends="1"), name="follow"), id=run_id)
    code, out, err = await starter(env, "follow", run_id)
    assert code == 0, out + err
    assert f"{run_id} —" in out  # the live board's title
    assert "T-1" in out and "T-2" in out
    assert "follow — completed" in out  # the results table: the outcome
    # ended: the last board and the outcome, without waiting
    for argv in (("follow", run_id), ("status", run_id, "--follow")):
        code, out, err = await starter(env, *argv, timeout=30)
        assert code == 0, out + err
        assert f"{run_id} has ended (completed)" in out and "follow — completed" in out


async def test_ctrl_c_leaves_the_run_running_and_says_how_to_re_attach(env: Env):
    await env.start_worker()
    run_id = f"xsky-ctrlc-{uuid.uuid4().hex[:6]}"
    async with XSky.connect() as x:
        # The run waits on a person (T-1's question) while it is followed and interrupted, so
        # that it is surely running then however slow the machine; answered after the Ctrl-C,
        # it goes on to its end (T-2 runs with no one following). (A 12 s no-op held it before:
        # the test waited out what was left of the 12 s.)
        run = await x.run(
            plan(ask("1", "go on?"), noop("2", 0.5, depends="1"), name="ctrlc"), id=run_id
        )
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(ROOT / "starter.py"),
            "follow",
            run_id,
            env=env.environ(),
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            # Ctrl-C as a terminal gives it, even when this suite was started with SIGINT
            # ignored (in the background), which the CLI would inherit and never see.
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        assert proc.stderr is not None
        said = await asyncio.wait_for(proc.stderr.readline(), 30)  # attached
        assert f"following {run_id}: Ctrl-C stops following, the run goes on" in said.decode()
        proc.send_signal(signal.SIGINT)
        out, err = await asyncio.wait_for(proc.communicate(), 30)
        assert proc.returncode == 130, out.decode() + err.decode()
        assert f"the run goes on: re-attach with `starter.py follow {run_id}`" in err.decode()
        assert await run.temporal_status() == "running"
        (question,) = await wait_requests(run.handle, 1)
        await run.answer(question.id, "yes")
        assert (await asyncio.wait_for(run.result(), 60)).status == "completed"


async def test_follow_of_an_unknown_run_says_so(env: Env):
    code, out, err = await starter(env, "follow", "xsky-no-such-run-0000", timeout=30)
    assert code == 2 and "no run with id xsky-no-such-run-0000" in err


async def test_ctrl_c_into_a_file_says_so_on_a_line_of_its_own(env: Env):
    """walk10: with the output a file (`run --follow > out 2>&1`), the board's last line had no
    end and Ctrl-C's sentence was glued to it: `…┘interrupted; the run goes on: …`."""
    await env.start_worker()
    run_id = f"xsky-ctrlc-{uuid.uuid4().hex[:6]}"
    async with XSky.connect() as x:
        run = await x.run(plan(noop("1", 12), name="ctrlc"), id=run_id)
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(ROOT / "starter.py"),
            "follow",
            run_id,
            env=env.environ(),
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        assert proc.stdout is not None
        seen = b""
        while b"Ctrl-C stops following" not in seen:  # attached (a file's board: at the end)
            seen += await asyncio.wait_for(proc.stdout.readline(), 30)
        await asyncio.sleep(2)
        proc.send_signal(signal.SIGINT)
        out, _ = await asyncio.wait_for(proc.communicate(), 30)
        said = (seen + out).decode()
        assert proc.returncode == 130, said
        assert "T-1" in said and "\ninterrupted; the run goes on: re-attach with" in said, said[
            -400:
        ]
        await run.cancel()
