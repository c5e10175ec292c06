"""The shell tool: one command in the run's workspace, with a timeout and capped output.

The command runs in its own process group so a timeout or a cancellation kills
everything it started, not only the shell.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from activities.sandbox import bwrap as os_sandbox
from activities.sandbox import egress
from activities.sandbox.confine import scrubbed_env
from activities.tools import (
    ToolContext,
    ToolError,
    ToolResult,
    optional_number,
    require_str,
    values,
)

DEFAULT_MAX_OUTPUT = 1024 * 1024


class _Capture(asyncio.SubprocessProtocol):
    """Collects output up to a limit (the rest is counted) and notices exit at once.

    asyncio's ``Process.wait()`` only returns once every pipe is closed, so a background
    child holding stdout would keep it waiting; ``process_exited`` fires on exit itself.
    """

    def __init__(self, limit: int):
        loop = asyncio.get_running_loop()
        self.limit = limit
        self.buffers = {1: bytearray(), 2: bytearray()}
        self.dropped = {1: 0, 2: 0}
        self.exited: asyncio.Future[None] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        buf = self.buffers[fd]
        room = self.limit - len(buf)
        if room > 0:
            buf += data[:room]
        self.dropped[fd] += max(0, len(data) - max(room, 0))

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)

    def text(self, fd: int, what: str) -> str:
        text = bytes(self.buffers[fd]).decode("utf-8", errors="replace")
        if self.dropped[fd]:
            text += f"\n[… {what} cut: {self.dropped[fd]:,} more bytes not shown]"
        return text


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


@dataclass
class ProcessResult:
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool


def confined(ctx: ToolContext, argv: list[str]) -> list[str]:
    """``argv`` wrapped in the OS sandbox, or a ToolError saying how to fix a missing one."""
    if ctx.unconfined:
        return argv  # "security": {"sandbox": "off"}: reported on the board and in the worker's log
    problem = os_sandbox.ready()
    if problem is not None:
        raise ToolError(
            f"refused: the OS sandbox every command runs in cannot start: {problem}",
            details={"sandbox": "unavailable"},
        )
    return os_sandbox.wrap(argv, ctx.confinement or os_sandbox.Confinement(workspace=ctx.workspace))


async def run_process(
    ctx: ToolContext, argv: list[str], timeout: float, limit: int
) -> ProcessResult:
    """Run ``argv`` in the workspace, inside the OS sandbox, in its own process group.

    Heartbeats while it runs; new output counts as progress. On timeout, cancellation or
    normal exit, the whole process group is killed: nothing it started is left behind (and
    the sandbox dies with its parent, so a killed worker leaves nothing either).
    """
    ctx.workspace.mkdir(parents=True, exist_ok=True)
    if ctx.command_network is not None and not ctx.unconfined:
        # The settings allow some domains: the sandbox's only way out is a proxy that checks them.
        async with egress.serving(ctx.command_network, ctx.record, unix=True) as socket_path:
            base = ctx.confinement or os_sandbox.Confinement(workspace=ctx.workspace)
            routed = replace(
                ctx, confinement=replace(base, proxy_socket=Path(socket_path)), command_network=None
            )
            return await run_process(routed, argv, timeout, limit)
    command_name = argv[0]  # what the person asked for, not the sandbox that runs it
    argv = confined(ctx, argv)
    started = time.monotonic()
    loop = asyncio.get_running_loop()
    transport, capture = await loop.subprocess_exec(
        lambda: _Capture(limit),
        *argv,
        cwd=ctx.workspace,
        env=scrubbed_env(ctx.workspace),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: we can kill all of it
    )
    pid = transport.get_pid()
    timed_out = False
    seen_output = 0
    try:
        while not capture.exited.done():
            left = timeout - (time.monotonic() - started)
            if left <= 0:
                timed_out = True
                break
            done, _ = await asyncio.wait([capture.exited], timeout=min(5.0, left))
            if not done:
                produced = (
                    len(capture.buffers[1])
                    + len(capture.buffers[2])
                    + capture.dropped[1]
                    + capture.dropped[2]
                )
                note = f"{Path(command_name).name} running for {time.monotonic() - started:.0f}s, {produced:,} bytes of output"
                # New output is progress (the stall ladder resets); silence is only liveness.
                (ctx.progress if produced > seen_output else ctx.heartbeat)(note)
                seen_output = produced
    except BaseException:
        _kill_group(pid)  # cancelled (run cancelled, worker shutting down): leave nothing behind
        transport.close()
        raise
    # Done or timed out: whatever the command left running goes with it.
    _kill_group(pid)
    if timed_out:
        await asyncio.wait([capture.exited], timeout=5)
    # Pipes close once the group is gone; a process that escaped it (setsid) is not waited for.
    await asyncio.wait([capture.closed], timeout=2)
    transport.close()
    return ProcessResult(
        transport.get_returncode(),
        capture.text(1, "stdout"),
        capture.text(2, "stderr"),
        round(time.monotonic() - started, 3),
        timed_out,
    )


async def shell(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    """Run ``command`` with bash in the workspace. Non-zero exit fails unless ``allowFailure``."""
    command = require_str(args, "command", "shell", '{"tool": "shell", "command": "ls -la"}')
    timeout = optional_number(args, "timeout", 120, 0.1, 24 * 3600, "shell")
    limit = int(
        optional_number(args, "maxOutputBytes", DEFAULT_MAX_OUTPUT, 1024, 64 * 1024 * 1024, "shell")
    )
    allow_failure = bool(args.get("allowFailure", False))
    with values.provided(ctx, values.checked(args.get("values"), "shell")) as (ctx, prelude):
        proc = await run_process(ctx, ["bash", "-c", prelude + command], timeout, limit)
    details = {
        "exitCode": proc.returncode,
        "stderr": proc.stderr[-4000:],
        "seconds": proc.seconds,
        "timedOut": proc.timed_out,
    }
    if proc.timed_out:
        raise ToolError(
            f"the command ran past its {timeout:g}s timeout and was killed: {command[:200]}",
            details=details,
        )
    if proc.returncode != 0 and not allow_failure:
        tail = (proc.stderr.strip() or proc.stdout.strip())[-1500:]
        raise ToolError(
            f"the command exited with status {proc.returncode}: {command[:200]}\n{tail}".rstrip(),
            retryable=True,
            details=details,
        )
    return ToolResult(proc.stdout.rstrip("\n"), details)
