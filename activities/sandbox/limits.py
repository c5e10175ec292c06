"""Resource limits of one sandboxed process tree: a cgroup of its own, and rlimits.

Why the cgroup filesystem directly, not ``systemd-run --scope``: workers run in containers
and VMs where systemd is not PID 1 (this project's own CI machine is one) and a scope
needs systemd's D-Bus. Writing the cgroup files is the same interface systemd uses, it
works wherever the worker may create cgroups (as root, or in a delegated subtree), and it
is the worker's own cgroup that the new ones nest under, so whatever bounds the worker
(a container's limit, a harness's) bounds its sandboxes too.

Both hierarchies are handled: cgroup v2 (one tree; ``memory.max``, ``pids.max``,
``cpu.weight``, ``cgroup.kill``) and v1 (a tree per controller; ``memory.limit_in_bytes``,
``pids.max``, ``cpu.shares``). Where no cgroup can be made, the rlimits alone hold and
the worker's log says so once: a process cap per user and an address-space cap stand in.

Every limit is the sandbox's, never the worker's: when a command hits one, the kernel
stops that command (an OOM kill inside its cgroup, a failed fork, EMFILE, SIGXFSZ) and
:meth:`AttemptCgroup.verdict` names the limit for the tool's error.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import logging
import os
import re
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from activities.sandbox.pids import alive as process_alive

log = logging.getLogger("xsky.sandbox")

GiB = 1024**3
MiB = 1024**2
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B?|B)?\s*$", re.I)
_UNITS = {"": 1, "B": 1, "K": 1024, "M": MiB, "G": GiB, "T": 1024**4}


def parse_size(value: int | str, what: str) -> int:
    """Bytes from ``4096``, ``"512MiB"``, ``"2G"``, ``"1.5GiB"``; a ValueError says how to write it."""
    if isinstance(value, bool):
        raise ValueError(
            f'{what} must be a size such as "2GiB" or a number of bytes, not {value!r}'
        )
    if isinstance(value, int):
        if value <= 0:
            raise ValueError(f"{what} must be positive, not {value}")
        return value
    m = _SIZE.match(str(value))
    if not m:
        raise ValueError(
            f'{what} {value!r} is not a size; write e.g. "2GiB", "512MiB" or a number of bytes'
        )
    number, unit = float(m.group(1)), (m.group(2) or "").upper()[:1]
    size = int(number * _UNITS[unit])
    if size <= 0:
        raise ValueError(f"{what} must be positive, not {value!r}")
    return size


def shown(size: int) -> str:
    """``2 GiB``, ``512 MiB``, ``3.5 KiB``: how limits are named in messages."""
    for unit, factor in (("GiB", GiB), ("MiB", MiB), ("KiB", 1024)):
        if size >= factor:
            value = size / factor
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{size} bytes"


@dataclass(frozen=True)
class Limits:
    """What one sandboxed command (and everything it starts) may use."""

    memory: int = 2 * GiB  # RAM of the whole process tree, page cache and its /tmp included
    processes: int = 512  # tasks alive at once (a fork storm stops here)
    cpu_weight: int = 50  # relative to the worker's 100: the worker stays responsive
    open_files: int = 4096  # descriptors per process (RLIMIT_NOFILE, soft = hard)
    file_size: int = 4 * GiB  # the largest file a process may write (RLIMIT_FSIZE)
    disk: int = 4 * GiB  # the workspace's size (activities/sandbox/disk.py enforces it)
    tmp: int = 512 * MiB  # the private /tmp, /var/tmp and /dev/shm (tmpfs: counted as memory)
    disk_reserve: int = 256 * MiB  # free space the workspace's filesystem always keeps
    browser_memory: int = 2 * GiB  # the worker's Chromium, all its pages together

    def described(self) -> str:
        return (
            f"memory {shown(self.memory)}, {self.processes} processes, {self.open_files} open files, "
            f"files up to {shown(self.file_size)}, workspace {shown(self.disk)}, /tmp {shown(self.tmp)}"
        )


# -- the cgroup hierarchy of this machine --------------------------------------------------------

# Only these two in v1: each hierarchy joined costs a start a cgroup migration (a few ms).
# An emergency freeze is done with SIGSTOP, and the CPU weight with the process group's
# nice value (:func:`cpu_niceness`) instead of the freezer and cpu hierarchies.
V1_CONTROLLERS = ("memory", "pids")


@dataclass(frozen=True)
class Hierarchy:
    """Where this worker may make cgroups: v2 (one folder) or v1 (one folder per controller)."""

    version: int
    parents: dict[str, Path]  # controller → the folder new cgroups go in ("" for v2)


_counter = itertools.count(1)
_hierarchy: Hierarchy | None | bool = False  # False: not probed yet


def hierarchy() -> Hierarchy | None:
    """The cgroup folders this worker may use, probed once (None: none; the log says why)."""
    global _hierarchy
    if _hierarchy is False:
        _hierarchy = _probe()
    return _hierarchy if isinstance(_hierarchy, Hierarchy) else None


def _own_cgroups() -> dict[str, str]:
    """controller → this process's cgroup path ("" is the v2 tree)."""
    out: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                out[name] = path
    return out


def _mounts() -> dict[str, Path]:
    """controller → mount point of its v1 hierarchy, and "" → the v2 mount."""
    out: dict[str, Path] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            fields, extra = left.split(), right.split()
            if len(extra) < 3:
                continue
            if extra[0] == "cgroup2":
                out.setdefault("", Path(fields[4]))
            elif extra[0] == "cgroup":
                for opt in extra[2].split(","):
                    if opt in V1_CONTROLLERS:
                        out.setdefault(opt, Path(fields[4]))
    return out


def _sweep(parent: Path) -> None:
    """Empty ``xsky-<pid>`` folders of workers that are gone (a killed worker leaves its own)."""
    with contextlib.suppress(OSError):
        for entry in parent.iterdir():
            name = entry.name
            if name.startswith("xsky-") and name[5:].isdigit() and not process_alive(int(name[5:])):
                for child in [*entry.glob("*/"), entry]:
                    with contextlib.suppress(OSError):
                        child.rmdir()


def _forget(where: Hierarchy) -> None:
    """At exit: this worker's own cgroup folders go (empty by then, or they stay harmlessly)."""
    for folder in where.parents.values():
        for child in [*folder.glob("*/"), folder]:
            with contextlib.suppress(OSError):
                child.rmdir()


def _probe() -> Hierarchy | None:
    found = _probe_hierarchy()
    if found is not None:
        atexit.register(_forget, found)
    return found


def _probe_hierarchy() -> Hierarchy | None:
    mounts, own = _mounts(), _own_cgroups()
    tag = f"xsky-{os.getpid()}"
    v2 = mounts.get("")
    if v2 is not None:
        base = v2 / own.get("", "/").lstrip("/")
        controllers = _read(base / "cgroup.controllers").split()
        if {"memory", "pids"} <= set(controllers):
            parent = _v2_delegate(base, tag, controllers)
            if parent is not None:
                return Hierarchy(2, {"": parent})
    if {"memory", "pids"} <= mounts.keys():
        parents: dict[str, Path] = {}
        for name in V1_CONTROLLERS:
            if name not in mounts:
                continue
            folder = mounts[name] / own.get(name, "/").lstrip("/") / tag
            _sweep(folder.parent)
            try:
                folder.mkdir(exist_ok=True)
            except OSError as e:
                if name in ("memory", "pids"):
                    log.warning(
                        "sandbox limits: cannot make cgroups in %s (%s); commands run with rlimits only",
                        folder.parent,
                        e,
                    )
                    return None
                continue
            parents[name] = folder
        return Hierarchy(1, parents)
    log.warning(
        "sandbox limits: no cgroup hierarchy with the memory and pids controllers is writable here; "
        "commands run with rlimits only (run the worker as root or in a delegated cgroup)"
    )
    return None


def _v2_delegate(base: Path, tag: str, controllers: list[str]) -> Path | None:
    """A v2 folder under this worker's cgroup whose children get memory, pids and cpu.

    v2 lets a cgroup with processes in it hand no controllers to children, so when this
    worker is alone in its cgroup it moves itself into a leaf (``…/xsky-<pid>/worker``) and
    the attempts go beside it. Processes that are not this worker's are never moved: with
    company in the cgroup, the limits fall back to rlimits and the log says so.
    """
    wanted = " ".join(f"+{c}" for c in ("memory", "pids", "cpu") if c in controllers)
    try:
        members = [p for p in _read(base / "cgroup.procs").split() if p]
        if members and members != [str(os.getpid())]:
            log.warning(
                "sandbox limits: this worker shares its cgroup %s with other processes, so cgroup v2 "
                "cannot give its sandboxes controllers; commands run with rlimits only (start the "
                "worker in a cgroup of its own, e.g. a systemd service with Delegate=yes)",
                base,
            )
            return None
        root = base / tag
        root.mkdir(exist_ok=True)
        leaf = root / "worker"
        leaf.mkdir(exist_ok=True)
        (leaf / "cgroup.procs").write_text(str(os.getpid()))
        (base / "cgroup.subtree_control").write_text(wanted)
        (root / "cgroup.subtree_control").write_text(wanted)
        return root
    except OSError as e:
        log.warning("sandbox limits: cgroup v2 under %s is not usable (%s); rlimits only", base, e)
        return None


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _write(path: Path, value: str) -> bool:
    try:
        path.write_text(value)
        return True
    except OSError:
        return False


# -- one attempt's cgroup -------------------------------------------------------------------------


# How long :meth:`AttemptCgroup.kill` waits in all for a cgroup's processes to be gone (as 50
# rounds of 5 ms did), its first look again, and its longest pause between two.
KILL_WAIT = 0.25
KILL_FIRST_PAUSE = 0.0005
KILL_PAUSE = 0.005


class AttemptCgroup:
    """The cgroup of one sandboxed command: made before it starts, removed after it ends."""

    def __init__(self, where: Hierarchy, limits: Limits):
        self.version = where.version
        self.limits = limits
        name = f"a{next(_counter)}-{time.monotonic_ns() % 10**9}"
        self.folders = {c: parent / name for c, parent in where.parents.items()}
        self._base_events = {"oom": 0, "max": 0}
        self._on_remove: list[Callable[[], None]] = []

    def when_removed(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` when the cgroup is removed, before its folders go: a registry that
        holds it lets it go (activities/sandbox/freeze.py thaws a cgroup it froze)."""
        self._on_remove.append(callback)

    def create(self) -> None:
        for folder in self.folders.values():
            folder.mkdir()
        lim = self.limits
        if self.version == 2:
            f = self.folders[""]
            _write(f / "memory.max", str(lim.memory))
            _write(f / "memory.swap.max", "0")  # no escape into swap past the memory limit
            _write(f / "memory.oom.group", "0")  # kill the hog, not the whole tree
            _write(f / "pids.max", str(lim.processes))
            _write(f / "cpu.weight", str(max(1, min(10000, lim.cpu_weight))))
            return
        if "memory" in self.folders:
            m = self.folders["memory"]
            _write(m / "memory.limit_in_bytes", str(lim.memory))
            _write(m / "memory.memsw.limit_in_bytes", str(lim.memory))  # only with swap accounting
        if "pids" in self.folders:
            _write(self.folders["pids"] / "pids.max", str(lim.processes))

    @property
    def procs_files(self) -> list[str]:
        """The files a process writes ``0`` into to join this cgroup (before it drops root)."""
        return [str(folder / "cgroup.procs") for folder in self.folders.values()]

    def pids(self) -> list[int]:
        found: set[int] = set()
        for folder in self.folders.values():
            found.update(int(p) for p in _read(folder / "cgroup.procs").split() if p.isdigit())
        return sorted(found)

    def _events(self) -> tuple[int, int]:
        """(OOM kills, refused forks) so far."""
        if self.version == 2:
            f = self.folders[""]
            return _field(_read(f / "memory.events"), "oom_kill"), _field(
                _read(f / "pids.events"), "max"
            )
        oom = (
            _field(_read(self.folders["memory"] / "memory.oom_control"), "oom_kill")
            if ("memory" in self.folders)
            else 0
        )
        forks = (
            _field(_read(self.folders["pids"] / "pids.events"), "max")
            if ("pids" in self.folders)
            else 0
        )
        return oom, forks

    def written(self) -> int:
        """Bytes its processes wrote so far (``wchar``: files, tmpfs and pipes alike; a reaped
        child's count goes to its parent, so the tree's total survives its exits)."""
        total = 0
        for pid in self.pids():
            try:
                for line in Path(f"/proc/{pid}/io").read_text().splitlines():
                    if line.startswith("wchar:"):
                        total += int(line.split()[1])
            except (OSError, ValueError):
                continue
        return total

    def tmpfs_charged(self) -> int:
        """Bytes of tmpfs files its processes wrote that still count against its memory (the
        kernel charges them there until they are deleted, after the writers are gone too)."""
        if self.version == 2:
            return _field(_read(self.folders[""] / "memory.stat"), "shmem")
        if "memory" not in self.folders:
            return 0
        stat = _read(self.folders["memory"] / "memory.stat")
        return max(_field(stat, "total_shmem"), _field(stat, "shmem"))

    def forks_refused(self) -> int:
        return self._events()[1]

    def verdict(self) -> str | None:
        """The limit this command ran into, named for a person (None: none)."""
        oom, forks = self._events()
        lim = self.limits
        if oom:
            return (
                f"memory limit {shown(lim.memory)} reached: the kernel stopped a process of this command "
                f"(security.limits.memory in the worker's settings raises it)"
            )
        if forks:
            return (
                f"process limit {lim.processes} reached: {forks} attempts to start a process were refused "
                "(security.limits.processes in the worker's settings raises it)"
            )
        return None

    def freeze(self, frozen: bool) -> None:
        if self.version == 2:
            _write(self.folders[""] / "cgroup.freeze", "1" if frozen else "0")
        elif "freezer" in self.folders:
            _write(self.folders["freezer"] / "freezer.state", "FROZEN" if frozen else "THAWED")
        else:
            for pid in self.pids():
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGSTOP if frozen else signal.SIGCONT)

    def kill(self) -> None:
        """Every process of the cgroup, now (a fork storm included: frozen first)."""
        if self.version == 2 and _write(self.folders[""] / "cgroup.kill", "1"):
            return
        self.freeze(True)
        # Right after a command ends the kernel still lists its exiting processes for a
        # moment: looked at again after 0.5 ms, then 1, 2, 4, 5, 5 … ms (a fixed 5 ms was
        # 2.9 ms a command on average at load 17, up to 30 ms, all of it on the worker's
        # event loop), for as long in all as before (KILL_WAIT).
        pause, waited = KILL_FIRST_PAUSE, 0.0
        while True:
            pids = self.pids()
            if not pids or waited >= KILL_WAIT:
                break
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            self.freeze(False)  # SIGKILL reaches frozen tasks only once they thaw (v1)
            time.sleep(pause)
            waited += pause
            pause = min(pause * 2, KILL_PAUSE)
        self.freeze(False)

    def remove(self, wait: bool = True) -> bool:
        """Removed once empty; a cgroup still busy is killed and removed (retried briefly).
        ``wait=False``: one try each, never a sleep (an event loop's thread), and whether it
        is gone — right after its command ended the kernel may still count the exited
        processes for a moment (EBUSY: one command in three on a loaded 2-core VM), and
        the retries' sleeps then belong on a thread of their own."""
        while self._on_remove:
            self._on_remove.pop()()
        gone = True
        for folder in self.folders.values():
            for attempt in range(40 if wait else 1):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if not wait:
                        gone = False
                        break
                    if attempt == 5:
                        self.kill()
                    time.sleep(0.01)
        return gone


def _field(text: str, name: str) -> int:
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == name and value.strip().isdigit():
            return int(value)
    return 0


def cpu_niceness(limits: Limits) -> int:
    """The nice value that stands for ``cpu_weight`` where the cgroup has no cpu controller
    (v1, rlimits only): the kernel's weight table gives nice n about 1.25**-n of nice 0."""
    weight, nice = max(1, limits.cpu_weight), 0
    while nice < 19 and 100 * 1.25 ** -(nice + 1) >= weight:
        nice += 1
    return nice


def attempt_cgroup(limits: Limits) -> AttemptCgroup | None:
    """A new, empty cgroup with ``limits`` for one command, or None where cgroups cannot be made."""
    where = hierarchy()
    if where is None:
        return None
    group = AttemptCgroup(where, limits)
    try:
        group.create()
    except OSError as e:
        log.warning(
            "sandbox limits: could not make a cgroup (%s); this command runs with rlimits only", e
        )
        group.remove()
        return None
    return group


def rlimit_words(limits: Limits, cgroup: bool) -> list[str]:
    """``ulimit`` option/value pairs for the sandbox's starting shell (POSIX units: ``-f`` in
    512-byte blocks): no core dumps (a crash hands nothing to a core handler), open files,
    file size. Without a cgroup, an address-space cap (``-v``, KiB) stands in for memory;
    processes are then bounded by nothing but the memory (``ulimit -u`` is not portable)."""
    words = [
        "-c",
        "0",
        "-n",
        str(limits.open_files),
        "-f",
        str(max(1, limits.file_size // 512)),
    ]
    if not cgroup:
        words += ["-v", str(max(1, limits.memory // 1024))]
    return words
