"""A paused object store is a slow store, not a lost worker: an attempt whose write to the store
does not return heartbeats while it waits and says so on the board, and completes once the
store answers — one attempt, no retry, nothing run twice. (Before, a write that hung past the
heartbeat timeout had the server give the attempt to another worker.)"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from client.outcome import run_outcome
from tests.conftest import Env
from tests.fake_llm import FakeLLM, Reply
from tests.integration.eventually import eventually
from tests.integration.helpers import board, noop, plan
from tests.integration.test_agents_llm import agent
from tests.s3server import S3Server, s3_server
from xsky.config import load_settings
from xsky.runs import RunOptions

pytestmark = pytest.mark.integration

PAUSE = 8.0  # seconds the store stays stopped: four heartbeat timeouts of the agent's 2 s


@pytest.fixture
def s3(tmp_path: Path) -> Iterator[S3Server]:
    with s3_server(tmp_path / "moto.log") as server:
        yield server


def on_s3(env: Env, s3: S3Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test's workers store their artifacts in a bucket of their own on the S3 server."""
    for name, value in s3.env(s3.bucket(f"slow-{uuid.uuid4().hex[:8]}")).items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("XSKY_ARTIFACTS", raising=False)
    env.settings = load_settings()


@contextlib.contextmanager
def stopped(pid: int) -> Iterator[None]:
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


async def test_a_paused_store_is_waited_out_heartbeating_and_said_not_taken_for_a_lost_worker(
    env: Env, s3: S3Server, monkeypatch: pytest.MonkeyPatch
):
    on_s3(env, s3, monkeypatch)
    await env.start_worker()
    # A result over 256 bytes is stored as the agent ends: that write meets the paused store.
    handle = await env.start(
        plan(noop("1", 3, result="r" * 400)), options=RunOptions(max_auto_replans=0)
    )

    async def working() -> None:
        assert (await board(handle))["1"].status == "in_progress"

    await eventually(working, 30)
    with stopped(s3.pid):

        async def says_the_store_is_slow() -> str:
            note = (await board(handle))["1"].last_progress or ""
            assert "has not answered for" in note and "not a lost worker" in note, note
            return note

        await eventually(says_the_store_is_slow, PAUSE - 1)
        await asyncio.sleep(max(0.0, PAUSE - 3))
    result = await asyncio.wait_for(run_outcome(handle), 60)
    report = {a.id: a for a in result.agents}["1"]
    assert report.status == "completed", report
    # (a report's ``attempts`` counts dispatches: an attempt lost and retried is one dispatch)
    task = (await board(handle))["1"]
    assert task.tries == 1, f"the attempt was taken for lost and run again: {task.retries}"


@contextlib.contextmanager
def stopped_for(pid: int, seconds: float) -> Iterator[None]:
    """The store stopped, and let go after ``seconds`` from a thread of its own: a worker whose
    event loop waits for the store (this test's own, for an in-process worker) must not be the
    one to let it go."""
    os.kill(pid, signal.SIGSTOP)
    timer = threading.Timer(seconds, os.kill, (pid, signal.SIGCONT))
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        os.kill(pid, signal.SIGCONT)


async def test_a_model_agents_checkpoint_waits_for_a_paused_store_without_holding_up_the_worker(
    env: Env, s3: S3Server, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
):
    on_s3(env, s3, monkeypatch)
    asked, answer = threading.Event(), threading.Event()

    def responder(request: dict[str, Any], index: int) -> Reply:
        asked.set()
        return Reply(content="the answer " + "a" * 300, hold=answer)

    fake_llm.responder = responder
    await env.start_worker()
    # The model's answer is checkpointed as it arrives: that save meets the paused store.
    handle = await env.start(
        plan(agent("1", "llm", "answer", '{"heartbeatTimeout": 2}')),
        options=RunOptions(max_auto_replans=0, coordinator="off"),
    )
    assert await asyncio.to_thread(asked.wait, 30), "the model was not asked"
    with stopped_for(s3.pid, PAUSE):
        answer.set()
        result = await asyncio.wait_for(run_outcome(handle), 90)
    report = {a.id: a for a in result.agents}["1"]
    assert report.status == "completed", report
    # (a report's ``attempts`` counts dispatches: an attempt lost and retried is one dispatch)
    task = (await board(handle))["1"]
    assert task.tries == 1, f"the attempt was taken for lost and run again: {task.retries}"


async def test_an_agent_reading_a_stored_input_from_a_paused_store_is_not_taken_for_lost(
    env: Env, s3: S3Server, monkeypatch: pytest.MonkeyPatch
):
    on_s3(env, s3, monkeypatch)
    await env.start_worker()
    # 1's result travels by reference (over the 8 KiB threshold): 2 reads it from the store as
    # it starts, once 3 has ended — with the store stopped by then.
    reader = noop("2", depends="1,3", result="read: {{agent_1_result}}")
    handle = await env.start(
        plan(noop("1", result="b" * 10_000), noop("3", seconds=3), reader),
        options=RunOptions(max_auto_replans=0, coordinator="off"),
    )

    async def first_done() -> None:
        assert (await board(handle))["1"].status == "completed"

    await eventually(first_done, 30)
    with stopped_for(s3.pid, PAUSE):
        result = await asyncio.wait_for(run_outcome(handle), 90)
    report = {a.id: a for a in result.agents}["2"]
    assert report.status == "completed", report
    task = (await board(handle))["2"]
    assert task.tries == 1, f"the attempt was taken for lost and run again: {task.retries}"
