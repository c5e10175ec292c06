"""Limits per attempt, as runs meet them: an attempt over a limit fails naming it, the agent
beside it on the same worker completes, and the worker logs no error.

Each attack is bounded from outside too, so it stays harmless if the product's own limit
failed: a process cap on the sandbox user (RLIMIT_NPROC), and a small tmpfs under the
worker's state for the disk.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import resource
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from activities.sandbox import bwrap, disk
from client.outcome import run_outcome
from tests.conftest import Env
from tests.integration.eventually import eventually
from tests.integration.helpers import board, plan
from xsky.runs import RunOptions

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(bwrap.ready() is not None, reason=f"no OS sandbox here: {bwrap.ready()}"),
]

ATTACKS = {
    "fork storm": (":(){ :|:& };:; sleep 60", "process limit 64 reached"),
    "4 GiB allocation": (
        "python3 -c 'b = bytearray(4 << 30); print(len(b))'",
        "memory limit 384 MiB reached",
    ),
    "disk-filling loop": (
        "head -c 8G /dev/zero | split -b 4M -a 4 - fill.",  # file after file
        "disk quota 48 MiB of the workspace reached",
    ),
    "100,000 open files": (
        "python3 -c \"import os; fs = [os.open('/dev/null', os.O_RDONLY) for _ in range(100000)]\"",
        "open files limit 1024 reached",
    ),
}


def agent(agent_id: str, command: str) -> str:
    config = json.dumps(
        {"tool": "shell", "command": command, "timeout": 60, "retry": {"maximumAttempts": 1}}
    )
    return f'<agent name="shell" id="{agent_id}"><task>step {agent_id}</task><config><![CDATA[{config}]]></config></agent>'


@pytest.fixture
def small_disk(env: Env) -> Iterator[Path]:
    """The worker's state (workspaces, artifacts) on a 512 MiB tmpfs of its own."""
    env.home.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=512m", "xsky-test", str(env.home)], check=True
    )
    try:
        yield env.home
    finally:
        subprocess.run(["umount", "-l", str(env.home)], check=False)


@pytest.fixture
def process_cap() -> Iterator[None]:
    """The sandbox user may not have more than 2,000 processes, whatever the product does
    (the soft limit: a fork storm does not raise its own limits, and the hard one could not
    be given back here)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    resource.setrlimit(resource.RLIMIT_NPROC, (2000, hard))
    yield
    resource.setrlimit(resource.RLIMIT_NPROC, (soft, hard))


async def test_attempts_over_their_limits_fail_naming_them_and_the_neighbour_completes(
    env: Env,
    small_disk: Path,
    process_cap: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
):
    """A fork storm, a 4 GiB allocation, a disk-filling loop and 100,000 open files, all at once
    on one worker, beside an agent that only waits and prints."""
    settings = tmp_path / "worker-settings.json"
    limits = {
        "processes": 64,
        "memory": "384MiB",
        "disk": "48MiB",
        "disk_reserve": "16MiB",
        "open_files": 1024,
    }
    # python3 -c is code the checker cannot read: the worker's own rule allows it here.
    allow = {"allow": ["shell(python3:*)"]}
    settings.write_text(json.dumps({"security": {"limits": limits}, "permissions": allow}))
    monkeypatch.setenv("XSKY_USER_SETTINGS", str(settings))
    await env.start_worker(kinds=["shell", "llm"])
    caplog.set_level(logging.WARNING)
    attacks = list(ATTACKS.items())
    result = await env.run(
        plan(
            *(agent(str(i), command) for i, (_, (command, _named)) in enumerate(attacks, 1)),
            agent("9", "sleep 4; echo neighbour-ok"),
        ),
        timeout=120,
        options=RunOptions(max_auto_replans=0),
    )
    by_id = {a.id: a for a in result.agents}
    assert by_id["9"].status == "completed" and by_id["9"].result == "neighbour-ok"
    for i, (attack, (_command, named)) in enumerate(attacks, 1):
        report = by_id[str(i)]
        assert report.status == "failed" and named in (report.error or ""), (attack, report.error)
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [], [r.getMessage() for r in errors]


async def test_a_filesystem_filled_past_its_reserve_stops_the_writer_and_keeps_room(
    env: Env, small_disk: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A quota larger than the disk: the reserve still holds, for the worker and the neighbour."""
    settings = tmp_path / "worker-settings.json"
    settings.write_text(
        # (a reserve the guard's look-ahead keeps on a loaded machine too: at 96 MiB a fresh
        # clone's full suite once saw the writer fill the disk before the guard's next look)
        json.dumps({"security": {"limits": {"disk": "4GiB", "disk_reserve": "160MiB"}}})
    )
    monkeypatch.setenv("XSKY_USER_SETTINGS", str(settings))
    await env.start_worker(kinds=["shell", "llm"])
    result = await env.run(
        plan(
            agent("1", "head -c 8G /dev/zero | split -b 4M -a 4 - fill."),
            agent("2", "sleep 4; echo neighbour-ok"),
        ),
        timeout=120,
        options=RunOptions(max_auto_replans=0),
    )
    by_id = {a.id: a for a in result.agents}
    assert by_id["2"].status == "completed" and by_id["2"].result == "neighbour-ok"
    assert by_id["1"].status == "failed" and "nearly full" in (by_id["1"].error or ""), by_id[
        "1"
    ].error
    free = subprocess.run(
        ["df", "-B1", "--output=avail", str(small_disk)], capture_output=True, text=True
    )
    assert int(free.stdout.split()[-1]) > 32 * 1024 * 1024  # room is left


async def test_a_tmpfs_workspace_filled_before_the_watcher_looks_is_named_as_its_disk_quota(
    env: Env, small_disk: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Files on a tmpfs count as the writer's memory: one written faster than the disk watcher
    looks meets the memory limit first. The verdict names the disk quota the workspace went
    past, not memory it never allocated; an allocation beside it is still named memory."""
    monkeypatch.setattr(disk, "INTERVAL", 30.0)  # the watcher does not look in time
    settings = tmp_path / "worker-settings.json"
    limits = {"memory": "128MiB", "disk": "32MiB", "disk_reserve": "16MiB"}
    settings.write_text(
        json.dumps({"security": {"limits": limits}, "permissions": {"allow": ["shell(python3:*)"]}})
    )
    monkeypatch.setenv("XSKY_USER_SETTINGS", str(settings))
    await env.start_worker(kinds=["shell", "llm"])
    result = await env.run(
        plan(
            agent("1", "head -c 1G /dev/zero > big"),
            agent("2", "python3 -c 'b = bytearray(1 << 30); print(len(b))'"),
        ),
        timeout=120,
        options=RunOptions(max_auto_replans=0),
    )
    by_id = {a.id: a for a in result.agents}
    assert by_id["1"].status == "failed", by_id["1"]
    assert "disk quota 32 MiB of the workspace reached" in (by_id["1"].error or ""), by_id[
        "1"
    ].error
    assert by_id["2"].status == "failed", by_id["2"]
    assert "memory limit 128 MiB reached" in (by_id["2"].error or ""), by_id["2"].error


async def test_a_command_waits_while_its_disk_is_below_the_reserve_says_so_and_runs_once_freed(
    env: Env, small_disk: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A nearly full disk usually passes (a cleanup, another run's end): the command waits for
    room, with the cause on the board, and runs once there is room — not a failed agent."""
    settings = tmp_path / "worker-settings.json"
    settings.write_text(json.dumps({"security": {"limits": {"disk_reserve": "96MiB"}}}))
    monkeypatch.setenv("XSKY_USER_SETTINGS", str(settings))
    await env.start_worker(kinds=["shell", "llm"])
    filler = small_disk / "filler"  # beside the worker's state: 48 MiB left, half the reserve
    free = os.statvfs(small_disk).f_bavail * os.statvfs(small_disk).f_frsize
    with open(filler, "wb") as fh:
        os.posix_fallocate(fh.fileno(), 0, free - 48 * 1024 * 1024)
    handle = await env.start(plan(agent("1", "echo ran")), options=RunOptions(max_auto_replans=0))

    async def says_it_waits() -> str:
        note = (await board(handle))["1"].last_progress or ""
        assert "before starting the command: the disk holding the workspace has" in note, note
        return note

    await eventually(says_it_waits, 60)
    filler.unlink()
    result = await asyncio.wait_for(run_outcome(handle), 60)
    report = {a.id: a for a in result.agents}["1"]
    assert report.status == "completed" and report.result == "ran", report
