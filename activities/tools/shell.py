"""The shell tool: one command in the run's workspace, with a timeout and capped output.

The command runs in its own process group so a timeout or a cancellation kills
everything it started, not only the shell.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from temporalio.exceptions import ApplicationError

from activities import beat as beats
from activities.sandbox import bwrap, disk, egress, freeze, git_guard, limits, liveness
from activities.sandbox import workspace as workspaces
from activities.sandbox.confine import scrubbed_env
from activities.sandbox.limits import AttemptCgroup, Limits, shown
from activities.tools import (
    ToolContext,
    ToolError,
    ToolResult,
    folder_identity,
    optional_number,
    require_str,
    values,
)
from xsky.outcomes import exit_verdict

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
    limit: str | None = None  # the sandbox limit the command ran into, named for a person
    notes: list[str] = field(default_factory=list)  # what the git guard undid after it
    # the end an earlier attempt's watchdog recorded: the command was not run again
    replayed: bool = False


STORM_SECONDS = 3  # refused forks in this many consecutive seconds: a fork storm, stopped


async def run_process(
    ctx: ToolContext, argv: list[str], timeout: float, limit: int
) -> ProcessResult:
    """Run ``argv`` in the workspace, inside the OS sandbox and its limits, in its own
    process group.

    Heartbeats while it runs; new output counts as progress. On timeout, cancellation, a
    limit or normal exit, everything it started is killed: nothing is left behind (and the
    sandbox dies with its parent, so a killed worker leaves nothing either).
    """
    _still_there(ctx, "before this command")
    ctx.workspace.mkdir(parents=True, exist_ok=True)
    if ctx.command_network is not None and not ctx.unconfined:
        # The settings allow some domains: the sandbox's only way out is a proxy that checks them.
        async with egress.serving(ctx.command_network, ctx.record, unix=True) as socket_path:
            base = ctx.confinement or bwrap.Confinement(workspace=ctx.workspace)
            routed = replace(
                ctx, confinement=replace(base, proxy_socket=Path(socket_path)), command_network=None
            )
            return await run_process(routed, argv, timeout, limit)
    command_name = argv[0]  # what the person asked for, not the sandbox that runs it
    c = ctx.confinement or bwrap.Confinement(workspace=ctx.workspace)
    if ctx.command_record is not None:
        done = await asyncio.to_thread(recorded_end, ctx.command_record, limit)
        if done is not None:
            # An earlier attempt of this dispatch ran it to its end and its worker was lost
            # before it could report: the command is not run again.
            done.notes += (
                [] if ctx.unconfined else await asyncio.to_thread(git_guard.sweep, c.workspace)
            )
            return done
    cgroup: AttemptCgroup | None = None
    if not ctx.unconfined:  # "security": {"sandbox": "off"}: reported on the board and in the log
        problem = bwrap.ready(c.sandbox_user)
        if problem is not None:
            raise ToolError(
                f"refused: the OS sandbox every command runs in cannot start: {problem}",
                details={"sandbox": "unavailable"},
            )
        full = await disk.room(
            ctx.workspace, c.limits.disk_reserve, _room_deadline(), ctx.progress, ctx.heartbeat
        )
        if full is not None:
            raise ToolError(f"refused: {full}", details={"limit": "disk_reserve"})
        who = bwrap.identity(c.sandbox_user)
        if who.drop and c.workspace.stat().st_uid != who.uid:  # made before the sandbox had a user
            await asyncio.to_thread(workspaces.make, c.workspace, who.uid, who.gid)
        c = replace(c, protected=bwrap.protected_paths(c.workspace))
        cgroup = limits.attempt_cgroup(c.limits)
        if cgroup is not None:  # stopped while its workspace is snapshotted or restored
            cgroup.when_removed(freeze.register(c.workspace, cgroup))
        argv = bwrap.command(argv, c, cgroup)
    else:
        argv = liveness.own_namespace(argv)
    with liveness.PULSE_THREAD.pipe() as fed:
        result = await _supervise(
            ctx,
            liveness.watched(argv, fed, liveness.quiet_after(), ctx.command_record, limit),
            fed,
            c,
            cgroup,
            command_name,
            timeout,
            limit,
        )
    if result.returncode == liveness.LOST_EXIT and "xsky: the worker " in result.stderr:
        # This worker stopped answering (SIGSTOP, a frozen machine) and the watchdog killed the
        # command, so that it cannot run beside the attempt the server gives another worker.
        # That attempt's next heartbeat is refused and it is cancelled here; should it not be
        # (the pause was shorter than the heartbeat timeout), the command failed.
        await asyncio.sleep(liveness.stale_wait())
        raise ToolError(
            f"the command was killed: {result.stderr.strip().splitlines()[-1][6:]} "
            "(nothing a command starts outlives a worker that stops answering)",
            retryable=True,
            details={"worker": "stopped"},
        )
    return result


async def _supervise(
    ctx: ToolContext,
    argv: list[str],
    fed: int,
    c: bwrap.Confinement,
    cgroup: AttemptCgroup | None,
    command_name: str,
    timeout: float,
    limit: int,
) -> ProcessResult:
    """Start ``argv`` (its watchdog fed by pipe ``fed``) and see it to its end."""
    started = time.monotonic()
    loop = asyncio.get_running_loop()
    try:
        transport, capture = await loop.subprocess_exec(
            lambda: _Capture(limit),
            *argv,
            cwd=ctx.workspace,
            env={
                **scrubbed_env(ctx.workspace),
                **c.extra_env,
                # the watchdog's, taken out of the command's environment (watchdog.c)
                **(
                    {liveness.SPARE_ENV: str(ctx.command_spare)}
                    if ctx.command_spare is not None
                    else {}
                ),
            },
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group: we can kill all of it
            pass_fds=(fed,),
        )
    except BaseException:
        if cgroup is not None:
            cgroup.remove()
        raise
    finally:
        os.close(fed)  # the watchdog has it
    pid = transport.get_pid()
    if not ctx.unconfined and (cgroup is None or cgroup.version == 1):
        # CPU weight without a cpu controller: the whole group niced before it forks (the
        # starting shell and bwrap take milliseconds to get there; a straggler keeps nice 0).
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PGRP, pid, limits.cpu_niceness(c.limits))

    def stop() -> None:
        if not capture.exited.done():
            # The watchdog first: a command the worker stops (cancelled, timed out, over a
            # limit) gets no record of its end, which would pass for one that finished.
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if cgroup is not None:
            cgroup.kill()
        _kill_group(pid)

    watch = None
    if not ctx.unconfined:
        watch = disk.Watch(
            c.workspace, c.limits.disk, c.limits.disk_reserve, kill=stop, cgroup=cgroup
        )
        disk.GUARD.add(watch)
    timed_out = False
    seen_output = 0
    storm = 0
    refused_forks = 0
    last_note = started
    verdict: str | None = None
    try:
        while not capture.exited.done():
            left = timeout - (time.monotonic() - started)
            if left <= 0:
                timed_out = True
                break
            await asyncio.wait([capture.exited], timeout=min(1.0, left))
            if watch is not None and watch.reason is not None:
                break
            if cgroup is not None:
                now_refused = cgroup.forks_refused()
                storm = storm + 1 if now_refused > refused_forks else 0
                refused_forks = now_refused
                if storm >= STORM_SECONDS:
                    verdict = (
                        f"process limit {c.limits.processes} reached: the command kept starting processes "
                        f"past it for {STORM_SECONDS} s and was stopped (security.limits.processes in the "
                        "worker's settings raises it)"
                    )
                    break
            if not capture.exited.done() and time.monotonic() - last_note >= 5:
                last_note = time.monotonic()
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
        stop()  # cancelled (run cancelled, worker shutting down): leave nothing behind
        transport.close()
        _release(watch, cgroup)
        raise
    # Done, timed out or over a limit: whatever the command left running goes with it.
    stop()
    if not capture.exited.done():
        await asyncio.wait([capture.exited], timeout=5)
    # Pipes close once the group is gone; a process that escaped it (setsid) is not waited for.
    await asyncio.wait([capture.closed], timeout=2)
    transport.close()
    if watch is not None and watch.reason is not None:
        verdict = watch.reason
    if verdict is None and cgroup is not None:
        verdict = cgroup.verdict()
        if (
            verdict is not None
            and watch is not None
            and verdict.startswith("memory limit")
            and cgroup.tmpfs_charged() > watch.quota
        ):
            # Its memory went to files it wrote on a tmpfs workspace: the disk is the cause.
            verdict = await asyncio.to_thread(watch.over_quota) or verdict
    await _released(watch, cgroup)
    stderr = capture.text(2, "stderr")
    code = transport.get_returncode()
    if not ctx.unconfined and code not in (0, None) and stderr.startswith("bwrap: "):
        # bubblewrap itself failed (a folder to bind is gone, say): nothing of the command ran.
        raise ToolError(
            f"the OS sandbox could not start this command: {stderr.strip()[:500]}",
            retryable=True,
            details={"sandbox": "failed"},
        )
    if verdict is None and not ctx.unconfined:
        verdict = _rlimit_verdict(code, stderr, c.limits)
    _still_there(ctx, "while this command ran")
    notes = [] if ctx.unconfined else await asyncio.to_thread(git_guard.sweep, c.workspace)
    return ProcessResult(
        code,
        capture.text(1, "stdout"),
        stderr,
        round(time.monotonic() - started, 3),
        timed_out,
        verdict,
        notes,
    )


def _still_there(ctx: ToolContext, when: str) -> None:
    """The attempt's workspace is the folder it found or made: one deleted under it (by hand, a
    cleanup script) is not made again empty for the next command, nor is a command that ran
    while it went taken for done — the attempt fails, not retried, as ``workspace_for`` fails
    the next one (chaos15: a run "completed" over work that was gone)."""
    if ctx.workspace_identity is None or folder_identity(ctx.workspace) == ctx.workspace_identity:
        return
    raise ApplicationError(
        f"the workspace {ctx.workspace} was deleted {when}, and the files this run's agents "
        "left there with it; the command's work is not taken for done in a folder made again "
        "empty — restore the workspace and retry the agent, or fork the run from an agent "
        "before its files were made",
        type="WorkspaceVanished",
        non_retryable=True,
    )


ROOM_WAIT = 300.0  # outside an activity (direct use, tests): how long a full disk is waited for
ROOM_MARGIN = 60.0  # of the attempt's start-to-close timeout, left for the command itself


def _room_deadline() -> float:
    """Until when (monotonic) a command waits for room on its workspace's disk: its attempt's
    start-to-close timeout less a margin for the command."""
    return beats.deadline(ROOM_MARGIN, ROOM_WAIT)


def recorded_end(path: Path, limit: int) -> ProcessResult | None:
    """The end of a command an earlier attempt of this dispatch ran, as its watchdog wrote it
    (activities/sandbox/watchdog.py); None when it did not end (or never started)."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or not isinstance(record.get("status"), int):
        return None

    def text(name: str, what: str) -> str:
        try:  # the head's bytes; a record of an older worker holds them as text
            head = base64.b64decode(record[f"{name}B64"]).decode("utf-8", "replace")
        except (KeyError, TypeError, ValueError):
            head = str(record.get(name, ""))
        value, dropped = head[:limit], record.get(f"{name}Dropped", 0)
        return value + (f"\n[… {what} cut: {dropped:,} more bytes not shown]" if dropped else "")

    return ProcessResult(
        record["status"],
        text("stdout", "stdout"),
        text("stderr", "stderr"),
        float(record.get("seconds", 0.0)),
        False,
        replayed=True,
    )


async def _released(watch: disk.Watch | None, cgroup: AttemptCgroup | None) -> None:
    """As :func:`_release`, on the event loop only while no wait is needed: a cgroup the kernel
    still counts busy is removed in a thread (its retries sleep 10 ms each, which held every
    agent's heartbeats on this worker's loop)."""
    if watch is not None:
        disk.GUARD.remove(watch)
    if cgroup is not None and not cgroup.remove(wait=False):
        await asyncio.to_thread(cgroup.remove)


def _release(watch: disk.Watch | None, cgroup: AttemptCgroup | None) -> None:
    if watch is not None:
        disk.GUARD.remove(watch)
    if cgroup is not None:
        cgroup.remove()


def _rlimit_verdict(code: int | None, stderr: str, lim: Limits) -> str | None:
    """The rlimit a command ran into, read from how it ended (the kernel's signal or errno)."""
    if code in (128 + signal.SIGXFSZ, -signal.SIGXFSZ) or "File size limit exceeded" in stderr:
        return (
            f"file size limit {shown(lim.file_size)} reached: a process wrote a larger file and was stopped "
            "(security.limits.file_size in the worker's settings raises it)"
        )
    if code not in (0, None) and "Too many open files" in stderr:
        return (
            f"open files limit {lim.open_files} reached (per process; security.limits.open_files in the "
            "worker's settings raises it)"
        )
    return None


async def shell(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    """Run ``command`` with bash in the workspace. A non-zero exit fails unless
    ``allowFailure``; it, a timeout and a limit's stop are not retried (retrying would
    repeat what the command did and fail the same way)."""
    command = require_str(args, "command", "shell", '{"tool": "shell", "command": "ls -la"}')
    timeout = optional_number(args, "timeout", 120, 0.1, 24 * 3600, "shell")
    limit = int(
        optional_number(args, "maxOutputBytes", DEFAULT_MAX_OUTPUT, 1024, 64 * 1024 * 1024, "shell")
    )
    allow_failure = bool(args.get("allowFailure", False))
    with values.provided(ctx, values.checked(args.get("values"), "shell")) as (ctx, prelude):
        proc = await run_process(ctx, ["bash", "-c", prelude + command], timeout, limit)
    details: dict[str, Any] = {
        "exitCode": proc.returncode,
        "stderr": proc.stderr[-4000:],
        "seconds": proc.seconds,
        "timedOut": proc.timed_out,
    }
    if proc.notes:
        details["gitGuard"] = proc.notes
    if proc.replayed:
        details["notRunAgain"] = (
            "the command had run to its end in an earlier attempt whose worker was lost before it "
            "reported: its recorded result is returned, and it was not run again"
        )
    if proc.limit is not None:
        details["limit"] = proc.limit
        raise ToolError(f"the command was stopped: {proc.limit}: {command[:200]}", details=details)
    if proc.timed_out:
        raise ToolError(
            f"the command ran past its {timeout:g}s timeout and was killed: {command[:200]}",
            details=details,
        )
    if proc.returncode != 0 and not allow_failure:
        # Deterministic: the same command in the same workspace fails the same way (an agent
        # whose <config> sets "retries" asks for retries all the same: activities/agents/activity.py).
        tail = (proc.stderr.strip() or proc.stdout.strip())[-1500:]
        verdict = exit_verdict(command, proc.returncode, tail)
        raise ToolError(verdict.message, retryable=verdict.retryable, details=details)
    out = proc.stdout.rstrip("\n")
    if proc.notes:  # said where the agent reads it: what it planted in git will not run
        out += "\n[xsky git guard: " + "; ".join(proc.notes) + "]"
    return ToolResult(out, details)
