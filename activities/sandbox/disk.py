"""The workspace's disk quota: enforced checks that fail the attempt, never the worker.

Why checks and not a filesystem per workspace: a loop-mounted image per run would be
exact, but it needs root and a mount per workspace that outlives every worker (or hides the
files from the person when it is unmounted). Instead one watcher thread per worker looks,
every 20 ms, at the free space of each filesystem a running sandbox writes to (``statvfs``:
one system call, no walking), and measures a workspace (``du``, outside the GIL) only when
that filesystem has grown by enough to matter:

- a workspace past its quota (``security.limits.disk``) has its command killed, and the
  attempt fails with "disk quota 4 GiB of the workspace reached";
- a filesystem whose free space falls below the reserve (``security.limits.disk_reserve``)
  has every sandbox writing to it frozen at once; those whose workspace grew are killed,
  the others go on — so the worker's own state and its neighbours keep room to finish;
- a command does not start while its workspace's filesystem is already below the reserve: it
  waits, saying so on the board, until there is room or its attempt's time runs short.

``RLIMIT_FSIZE`` (activities/sandbox/limits.py) also caps any single file, synchronously.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from activities.sandbox.limits import AttemptCgroup, shown

log = logging.getLogger("xsky.sandbox")
INTERVAL = 0.02
# How far ahead the watcher looks at the rate a filesystem fills: at least this long, and at
# least twice the time its last look took to come (a watcher held up by a busy machine looks
# further ahead), so a fast writer is stopped before the reserve is gone, not after.
LOOKAHEAD = 0.1
BASELINE_STEP = 1024 * 1024
DU_TIMEOUT = 30.0


def usage(workspace: Path) -> int | None:
    """Bytes the workspace takes on disk (allocated blocks, one filesystem), None if unknown."""
    try:
        out = subprocess.run(
            ["du", "-s", "-x", "-B1", str(workspace)],
            capture_output=True,
            text=True,
            timeout=DU_TIMEOUT,
        ).stdout
        return int(out.split()[0])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return None


def free_bytes(path: Path) -> tuple[int, int, int] | None:
    """(device, bytes used, bytes free for unprivileged writers) of the filesystem of ``path``."""
    try:
        st = os.statvfs(path)
        dev = os.stat(path).st_dev
    except OSError:
        return None
    return dev, (st.f_blocks - st.f_bfree) * st.f_frsize, st.f_bavail * st.f_frsize


def refusal(workspace: Path, reserve: int) -> str | None:
    """Why no command may start in ``workspace`` now (its disk is full), or None."""
    found = free_bytes(workspace)
    if found is not None and found[2] < reserve:
        return (
            f"the disk holding the workspace has {shown(found[2])} free, less than the "
            f"{shown(reserve)} the sandbox keeps for the worker and its neighbours; free space on it "
            "(security.limits.disk_reserve in the worker's settings sets the reserve)"
        )
    return None


def quota_reason(quota: int, size: int) -> str:
    return (
        f"disk quota {shown(quota)} of the workspace reached (it holds {shown(size)}): the command "
        "was stopped (security.limits.disk in the worker's settings raises it)"
    )


ROOM_FIRST_PAUSE = 1.0  # seconds between the notes of a disk below its reserve; doubled
ROOM_LONGEST_PAUSE = 15.0
BEAT_EVERY = 2.0  # a waiting attempt still heartbeats (its heartbeat timeout may be a few s)
# The disk is looked at this often while waiting (a statvfs: cheap) — room that comes back is
# used within it, not at the end of a pause of up to 15 s (chaos14: 14.6 s late, measured).
LOOK_EVERY = 0.5


async def room(
    workspace: Path,
    reserve: int,
    until: float,
    say: Callable[[str], None],
    beat: Callable[[str], None],
    what: str = "starting the command",
) -> str | None:
    """Wait while the workspace's disk is below the reserve, saying so (``say``, on the board)
    and heartbeating; None once it has room, the refusal if it has none at ``until``
    (monotonic). A nearly full disk usually passes — a cleanup, another run's end — so a
    command waits for it as an attempt waits for a full artifact store."""
    pause = ROOM_FIRST_PAUSE
    full = refusal(workspace, reserve)
    while full is not None:
        if time.monotonic() >= until:
            return full
        note = f"waiting {pause:g}s before {what}: {full}"
        log.warning("%s: %s", workspace, note)
        say(note)
        ends = min(until, time.monotonic() + pause)
        beaten = time.monotonic()
        while full is not None and time.monotonic() < ends:
            await asyncio.sleep(max(0.0, min(LOOK_EVERY, ends - time.monotonic())))
            if time.monotonic() - beaten >= BEAT_EVERY:
                beat(note)
                beaten = time.monotonic()
            full = refusal(workspace, reserve)
        pause = min(ROOM_LONGEST_PAUSE, pause * 2)
    return None


@dataclass
class Watch:
    """One running sandboxed command and its workspace."""

    workspace: Path
    quota: int
    reserve: int
    kill: Callable[[], None]
    cgroup: AttemptCgroup | None = None
    reason: str | None = None
    baseline: int | None = None  # the workspace's size when the command started
    size: int | None = None  # the last measurement
    dev: int = 0
    used_at_check: int = 0  # the filesystem's use at the last measurement
    next_check: int = 0  # measure again once the filesystem uses this many bytes
    done: threading.Event = field(default_factory=threading.Event)

    def stop(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
            self.kill()

    def over_quota(self) -> str | None:
        """Measured now: the quota reason if the workspace holds more than its quota.

        Asked when the kernel stopped a command for memory: pages written to a tmpfs
        workspace are charged to the command's memory, so a fast writer can meet the memory
        limit before the watcher's next look — the disk is then the truer cause."""
        size = usage(self.workspace)
        if size is None or size <= self.quota:
            return None
        return quota_reason(self.quota, size)


class DiskGuard:
    """The watcher thread (one per worker process, started on first use)."""

    def __init__(self) -> None:
        self._watches: list[Watch] = []
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._full_at: dict[int, int] = {}  # device → its use when last found nearly full
        self._seen: dict[int, tuple[int, float]] = {}  # device → (its use, when) at the last look

    def add(self, watch: Watch) -> None:
        found = free_bytes(watch.workspace)
        if found is not None:
            watch.dev, watch.used_at_check = found[0], found[1]
            # Measured first once its disk has grown a little (most commands write nothing
            # worth a walk): its size then, less at most that much, is its size at the start.
            watch.next_check = found[1] + BASELINE_STEP
        with self._lock:
            self._watches.append(watch)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="xsky-disk-guard", daemon=True
                )
                self._thread.start()

    def remove(self, watch: Watch) -> None:
        watch.done.set()
        with self._lock:
            with contextlib.suppress(ValueError):
                self._watches.remove(watch)

    def _run(self) -> None:
        while True:
            with self._lock:
                watches = list(self._watches)
            if not watches:
                time.sleep(INTERVAL)
                with self._lock:
                    if not self._watches:
                        self._thread = None
                        return
                continue
            try:
                self._tick(watches)
            # the guard must outlive any one odd filesystem
            except Exception:
                log.exception("disk guard: a check failed")
            time.sleep(INTERVAL)

    def _tick(self, watches: list[Watch]) -> None:
        by_dev: dict[int, list[Watch]] = {}
        for w in watches:
            by_dev.setdefault(w.dev, []).append(w)
        for group in by_dev.values():
            found = free_bytes(group[0].workspace)
            if found is None:
                continue
            dev, used, free = found
            if free < min(w.reserve for w in group) + self._coming(dev, used):
                # Still full, and nobody wrote since the last look: no one to freeze again.
                if used > self._full_at.get(dev, -1) + 1024 * 1024:
                    self._full_at[dev] = used
                    self._emergency(group, used, free)
                continue
            self._full_at.pop(dev, None)
            for w in group:
                if used >= w.next_check:
                    self._measure(w, used)

    def _coming(self, dev: int, used: int) -> int:
        """What the filesystem will have taken by the look after next, at the rate it grew
        since the last look (0 when it shrank, or on a first look)."""
        now = time.monotonic()
        last = self._seen.get(dev)
        self._seen[dev] = (used, now)
        gap = now - last[1] if last is not None else 0.0
        # (a look a second ago or more is no rate: the guard slept with no command to watch)
        if last is None or not 0 < gap < 1.0 or used <= last[0]:
            return 0
        return int((used - last[0]) / gap * max(LOOKAHEAD, 2 * gap))

    def _measure(self, w: Watch, used: int) -> None:
        size = usage(w.workspace)
        if w.done.is_set() or size is None:
            return
        if w.baseline is None:
            w.baseline = size
        w.size, w.used_at_check = size, used
        if size > w.quota and not self._writing(w):
            # Over the quota, but this command writes nothing of it (an agent of the same run
            # beside the one that filled the workspace): it may finish.
            w.next_check = used + 8 * 1024 * 1024
            return
        if size > w.quota:
            w.stop(quota_reason(w.quota, size))
            return
        # Measure again once the filesystem has grown by half of what is left of the quota.
        w.next_check = used + max(8 * 1024 * 1024, (w.quota - size) // 2)

    @staticmethod
    def _writing(w: Watch) -> bool:
        """Has this command written a noticeable amount (1 MiB)? Unknown without a cgroup: yes."""
        return w.cgroup is None or w.cgroup.written() >= 1024 * 1024

    def _emergency(self, group: list[Watch], used: int, free: int) -> None:
        """The filesystem is nearly full: freeze every writer, stop those that grew it."""
        live = [w for w in group if not w.done.is_set() and w.reason is None]
        for w in live:
            if w.cgroup is not None:
                w.cgroup.freeze(True)
        try:
            by_workspace: dict[Path, list[Watch]] = {}
            for w in live:
                by_workspace.setdefault(w.workspace, []).append(w)
            for workspace, sharing in by_workspace.items():
                size = usage(workspace)
                if size is None:
                    continue
                before = min((w.baseline for w in sharing if w.baseline is not None), default=None)
                grew = size - (before if before is not None else size)
                if before is not None and grew <= 4 * 1024 * 1024 and size <= sharing[0].quota:
                    for w in sharing:
                        w.size = size
                    continue
                # Agents of one run share a workspace: the one that wrote the most is the filler,
                # and only a command that wrote something at all is a suspect (once the filler
                # is stopped, the disk may stay full a moment longer: its neighbour is not it).
                writer = max(
                    sharing, key=lambda w: w.cgroup.written() if w.cgroup is not None else 0
                )
                if all(w.cgroup is not None for w in sharing):
                    culprits = [writer] if self._writing(writer) else []
                else:
                    culprits = sharing
                for w in culprits:
                    if size > w.quota:  # its quota was the first limit it passed: say that one
                        w.stop(quota_reason(w.quota, size))
                        continue
                    w.stop(
                        f"the disk holding the workspace is nearly full ({shown(free)} free, the sandbox keeps "
                        f"{shown(w.reserve)}): this command wrote {shown(max(grew, 0))} to the workspace and was "
                        "stopped so the worker and its neighbours keep room"
                    )
        finally:
            for w in live:
                if w.cgroup is not None:
                    w.cgroup.freeze(False)


GUARD = DiskGuard()
