"""Nothing of an agent runs in a workspace while it is snapshotted or restored: the sandboxed
process trees registered for a workspace (a shell command's, an MCP server's) stop for the
length of ``freeze.frozen`` and go on after — one started meanwhile too — on this machine's
real cgroups (v1 with the freezer mounted here; v2 or SIGSTOP elsewhere)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from activities.sandbox import bwrap, freeze, limits
from activities.sandbox.bwrap import Confinement
from activities.sandbox.workspace import make
from activities.tools import ToolContext
from activities.tools.shell import shell

pytestmark = pytest.mark.skipif(
    limits.hierarchy() is None, reason="no cgroup this worker may make here"
)

COUNTER = """
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
n = 0
while True:
    n += 1
    os.pwrite(fd, b"%20d" % n, 0)
    time.sleep(0.001)
"""


def count(path: Path) -> int:
    text = path.read_bytes().strip() if path.exists() else b""
    return int(text) if text else 0


@pytest.fixture
def cgroup() -> Iterator[limits.AttemptCgroup]:
    group = limits.attempt_cgroup(limits.Limits())
    assert group is not None
    try:
        yield group
    finally:
        group.kill()
        group.remove()


def started(group: limits.AttemptCgroup, out: Path) -> subprocess.Popen[bytes]:
    """A process that joins ``group`` (as a sandbox launch does) and counts into ``out``."""
    joins = "; ".join(f"echo $$ > {f}" for f in group.procs_files)
    return subprocess.Popen(
        ["/bin/sh", "-c", f'{joins}; exec "$0" -c "$1" "$2"', sys.executable, COUNTER, str(out)]
    )


def counting(group: limits.AttemptCgroup, out: Path) -> subprocess.Popen[bytes]:
    """:func:`started`, once it counts."""
    proc = started(group, out)
    deadline = time.monotonic() + 10
    while count(out) < 5:
        assert time.monotonic() < deadline and proc.poll() is None, "the counter did not start"
        time.sleep(0.01)
    return proc


def still(path: Path, seconds: float = 0.3) -> bool:
    before = count(path)
    time.sleep(seconds)
    return count(path) == before


def test_a_registered_process_tree_stops_while_frozen_and_goes_on_after(
    tmp_path: Path, cgroup: limits.AttemptCgroup
):
    ws = tmp_path / "ws"
    ws.mkdir()
    cgroup.when_removed(freeze.register(ws, cgroup))
    first = counting(cgroup, tmp_path / "first")
    other = tmp_path / "elsewhere"  # a workspace nobody snapshots: not frozen
    with freeze.frozen(other):
        assert not still(tmp_path / "first")
    with freeze.frozen(ws):
        time.sleep(0.05)
        assert still(tmp_path / "first"), "a registered process ran during the freeze"
        # started during the freeze (a command launched meanwhile): caught too
        late = started(cgroup, tmp_path / "late")
        time.sleep(0.2)
        assert still(tmp_path / "late") and still(tmp_path / "first")
    assert not still(tmp_path / "first") and not still(tmp_path / "late")
    assert first.poll() is None and late.poll() is None


def test_a_cgroup_let_go_during_a_freeze_runs_again(tmp_path: Path, cgroup: limits.AttemptCgroup):
    ws = tmp_path / "ws"
    ws.mkdir()
    unregister = freeze.register(ws, cgroup)
    counting(cgroup, tmp_path / "n")
    with freeze.frozen(ws):
        assert still(tmp_path / "n")
        unregister()  # its command is over (killed): it is not held frozen
        assert not still(tmp_path / "n")
    assert freeze.registered(ws) == 0


@pytest.mark.skipif(bwrap.ready() is not None, reason=f"no OS sandbox here: {bwrap.ready()}")
async def test_a_shell_command_in_the_workspace_stops_while_it_is_frozen(tmp_path: Path):
    """The shell tool registers its cgroup: a command writing a line every 20 ms writes none
    while its workspace is frozen (from another thread, as a snapshot is taken), and finishes
    after."""
    who = bwrap.identity()
    ws = make(tmp_path / "ws", *((who.uid, who.gid) if who.drop else (None, None)))
    ctx = ToolContext(
        "run-1",
        "1",
        ws,
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        lambda note: None,
        confinement=Confinement(workspace=ws),
    )
    ticks = ws / "ticks"
    command = asyncio.create_task(
        shell(
            ctx,
            {"command": "for i in $(seq 80); do echo $i >> ticks; sleep 0.02; done", "timeout": 60},
        )
    )
    while not ticks.exists() or len(ticks.read_text().split()) < 3:
        assert not command.done(), command
        await asyncio.sleep(0.01)
    seen: list[int] = []

    def snapshot() -> None:
        with freeze.frozen(ws):
            time.sleep(0.05)
            seen.append(len(ticks.read_text().split()))
            time.sleep(0.5)
            seen.append(len(ticks.read_text().split()))

    taker = threading.Thread(target=snapshot)
    taker.start()
    await asyncio.to_thread(taker.join)
    assert seen[0] == seen[1] < 80, seen
    result = await command
    assert ticks.read_text().split() == [str(n) for n in range(1, 81)], result
    assert freeze.registered(ws) == 0  # let go when the command's cgroup went
    assert os.path.isdir(ws)
