"""One heartbeat loop (activities/beat.py), its interval from the activity's own heartbeat
timeout; the agents' Beat and the skill pipeline's heartbeats both use it. Run in the SDK's
ActivityEnvironment (an activity context without a server)."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import timedelta

from temporalio.testing import ActivityEnvironment

from activities.agents.beat import START_REPORT_AFTER, Beat
from activities.beat import heartbeating, interval
from activities.skills.pipeline import heartbeats


def environment(timeout: float | None, *, local: bool = False) -> tuple[ActivityEnvironment, list]:
    env = ActivityEnvironment()
    env.info = dataclasses.replace(
        env.info,
        heartbeat_timeout=None if timeout is None else timedelta(seconds=timeout),
        is_local=local,
        workflow_id=None,  # not scheduled by a leader: Beat sends no signal
    )
    beats: list = []
    env.on_heartbeat = lambda *details: beats.append(details)
    return env, beats


def test_the_interval_is_a_quarter_of_the_heartbeat_timeout():
    assert environment(4.0)[0].run(interval) == 1.0
    assert environment(0.3)[0].run(interval) == 0.2  # never under the floor
    assert environment(None)[0].run(interval) is None


async def test_heartbeating_beats_at_the_interval_the_timeout_gives():
    async def work() -> None:
        async with heartbeating("busy"):
            await asyncio.sleep(1.05)

    env, beats = environment(1.2)  # every 0.3 s
    await env.run(work)
    assert beats and set(beats) == {("busy",)}
    assert 2 <= len(beats) <= 4


async def test_no_heartbeat_timeout_or_a_local_activity_sends_no_heartbeat():
    async def work(every: float | None) -> None:
        async with heartbeating("busy", every=every):
            await asyncio.sleep(0.3)

    env, beats = environment(None)
    await env.run(work, None)
    env_local, beats_local = environment(None, local=True)
    await env_local.run(work, 0.05)
    assert beats == [] and beats_local == []


async def test_the_pipelines_heartbeats_start_at_once_then_follow_the_timeout():
    async def work() -> None:
        async with heartbeats():
            await asyncio.sleep(0.5)

    env, beats = environment(0.6)  # every 0.2 s after the first
    await env.run(work)
    assert beats[0] == ("splitting",) and 2 <= len(beats) <= 4


class Recording(Beat):
    """A Beat whose reports to the leader are kept here instead of signalled."""

    def __init__(self, **kwargs):
        super().__init__(task_id="T-1", dispatch=1, **kwargs)
        self.sent: list[bool] = []

    async def _send(self, progress: bool) -> None:
        self.sent.append(progress)


async def test_an_agents_beat_heartbeats_with_its_note_and_reports_a_retry_at_once():
    beat = Recording(progress_interval=5.0, previous="error: boom")

    async def work() -> None:
        async with beat.running():
            await asyncio.sleep(0.01)
            assert beat.sent == [False]  # the retry is on the board before the first heartbeat
            beat("reading")
            await asyncio.sleep(0.5)

    env, beats = environment(0.6)  # heartbeats every 0.2 s
    await env.run(work)
    assert ("reading",) in beats and len(beats) >= 3
    assert beat.sent == [False]


async def test_an_agents_beat_reports_its_start_after_a_second_and_progress_throttled():
    beat = Recording(progress_interval=0.2)

    async def work() -> None:
        async with beat.running():
            await asyncio.sleep(START_REPORT_AFTER / 2)
            assert beat.sent == []  # a quick agent costs no signal
            await asyncio.sleep(START_REPORT_AFTER / 2 + 0.3)
            assert beat.sent == [False]  # "started"
            beat.progress("step 1")
            await asyncio.sleep(0.35)

    env, _ = environment(30.0)  # the tick is the progress interval, not the 10 s heartbeat
    await env.run(work)
    assert beat.sent == [False, True]
