"""tests/cli_zygote.py runs starter.py as a fresh interpreter does: the same exit code, stdout
and stderr, byte for byte; a command the asker stops waiting for is killed; one killed by a
signal says which."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys

import pytest

from tests.cli_zygote import ROOT, zygote

CASES = [
    ["validate", "examples/diamond.xml"],  # exit 0, a tree on stdout
    # exit 2 and a sentence on stderr, for the server of the environment given (unreachable)
    ["list"],
]


def _environ(address: str = "127.0.0.1:1") -> dict[str, str]:
    return dict(os.environ, TEMPORAL_ADDRESS=address, PYTHONUNBUFFERED="1")


@pytest.mark.parametrize("args", CASES, ids=lambda a: " ".join(a))
async def test_a_command_says_the_same_as_in_a_fresh_interpreter(args: list[str], tmp_path):
    env = dict(_environ(), XSKY_HOME=str(tmp_path / "home"))
    forked = await zygote().run(args, env, ROOT, 60)
    fresh = subprocess.run(
        [sys.executable, str(ROOT / "starter.py"), *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )
    assert forked == (fresh.returncode, fresh.stdout, fresh.stderr)


def _commands() -> set[int]:
    """The zygote's grandchildren: the commands it runs (each under a fork of its own)."""
    found = set()
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                status = open(f"/proc/{pid}/status").read()
            except OSError:
                continue
            ppid = int(status.split("PPid:")[1].split()[0])
            if ppid and ppid in _forks():
                found.add(int(pid))
    return found


def _forks() -> set[int]:
    forks = set()
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                status = open(f"/proc/{pid}/status").read()
            except OSError:
                continue
            if int(status.split("PPid:")[1].split()[0]) == zygote()._proc.pid:
                forks.add(int(pid))
    return forks


async def test_a_command_is_killed_when_its_asker_stops_waiting_and_a_signal_is_said():
    silent = socket.socket()  # accepts connections, never answers: `list` waits on it
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    try:
        env = _environ(f"127.0.0.1:{silent.getsockname()[1]}")
        with pytest.raises(asyncio.TimeoutError):
            await zygote().run(["list"], env, ROOT, 1)

        async def gone() -> None:
            for _ in range(100):
                if not _forks():
                    return
                await asyncio.sleep(0.05)
            raise AssertionError(f"still running: {_forks()}")

        await gone()
        asked = asyncio.create_task(zygote().run(["list"], env, ROOT, 30))
        for _ in range(200):
            if commands := _commands():
                break
            await asyncio.sleep(0.05)
        (command,) = commands
        os.kill(command, signal.SIGTERM)
        code, _, _ = await asked
        assert code == -signal.SIGTERM
    finally:
        silent.close()
