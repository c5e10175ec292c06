"""Nothing of an agent runs in a workspace while it is snapshotted or restored.

A snapshot reads the workspace and a restore rewrites it (activities/storage/snapshots.py);
a command or an MCP server of another attempt working in the same workspace on this worker
(a parallel agent, another run naming the same workspace, a pooled server) could meanwhile
swap files for links or change what is being read. So every sandboxed process tree that works
in a workspace registers its cgroup here (:func:`register`), and :func:`frozen` stops all of
them for the length of a snapshot or restore, and lets them go on after, whatever happens.

How, by what the machine has: cgroup v2's ``cgroup.freeze``; on cgroup v1, the freezer
controller where it is mounted — the processes are moved into a freezer cgroup of the freeze's
own for its length (attempt cgroups do not join the freezer hierarchy when they start: that
costs every command a migration, activities/sandbox/limits.py) —; else SIGSTOP and SIGCONT of
each process. A process that starts while the workspace is frozen is caught within
:data:`SWEEP` seconds (at once on v2: it joins a frozen cgroup).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

from activities.sandbox.pids import alive as process_alive

log = logging.getLogger("xsky.sandbox")

SWEEP = 0.01  # seconds between two looks for processes that started during a freeze
SETTLE = 2.0  # seconds a freeze waits for every process to be stopped before it goes on


class Freezable(Protocol):
    """What a freeze needs of a cgroup (activities/sandbox/limits.AttemptCgroup has it)."""

    version: int
    folders: dict[str, Path]

    def pids(self) -> list[int]: ...


_lock = threading.Lock()
_live: dict[str, dict[int, Freezable]] = {}  # workspace → registration → cgroup
_active: dict[str, _Freeze] = {}  # workspace → the freeze holding it
_tokens = itertools.count(1)
_freezer: Path | None | bool = False  # False: not looked for yet


def register(workspace: Path, cgroup: Freezable) -> Callable[[], None]:
    """``cgroup``'s processes work in ``workspace``: frozen while it is snapshotted or restored
    (at once, if it is now). Call what this returns when the cgroup's processes are gone (after
    they are killed, before the cgroup is removed): a frozen cgroup is then let go."""
    key, token = _key(workspace), next(_tokens)
    with _lock:
        _live.setdefault(key, {})[token] = cgroup
        freeze = _active.get(key)
        if freeze is not None:
            freeze.add(cgroup)

    def unregister() -> None:
        with _lock:
            group = _live.get(key, {})
            gone = group.pop(token, None)
            if not group:
                _live.pop(key, None)
            freeze = _active.get(key)
            if gone is not None and freeze is not None:
                freeze.release(gone)

    return unregister


def registered(workspace: Path) -> int:
    """How many cgroups work in ``workspace`` now (for the log and the tests)."""
    with _lock:
        return len(_live.get(_key(workspace), {}))


@contextlib.contextmanager
def frozen(workspace: Path) -> Iterator[None]:
    """Every registered process tree of ``workspace`` stopped until the block ends."""
    key = _key(workspace)
    with _lock:
        freeze = _active.get(key)
        if freeze is None:
            freeze = _active[key] = _Freeze(key)
        freeze.depth += 1
        for cgroup in _live.get(key, {}).values():
            freeze.add(cgroup)
    stop = threading.Event()
    sweeper = threading.Thread(target=_sweep, args=(freeze, stop), daemon=True)
    try:
        sweeper.start()
        freeze.settle()
        yield
    finally:
        stop.set()
        sweeper.join()
        with _lock:
            freeze.depth -= 1
            if freeze.depth == 0:
                _active.pop(key, None)
                freeze.thaw()


def _sweep(freeze: _Freeze, stop: threading.Event) -> None:
    """Catch what starts during the freeze (a command launched meanwhile) until it ends."""
    while not stop.wait(SWEEP):
        with _lock:
            freeze.sweep()


def _key(workspace: Path) -> str:
    return os.path.realpath(workspace)


class _Freeze:
    """One freeze of one workspace's cgroups; its state is changed under ``_lock`` only."""

    def __init__(self, key: str):
        self.key = key
        self.depth = 0
        self.groups: dict[int, Freezable] = {}
        self.freezer = _freezer_folder()  # v1: this freeze's own freezer cgroup, made on use
        self.made = False
        self.moved: dict[int, Path] = {}  # pid → the freezer cgroup it came from (v1)
        self.stopped: set[int] = set()  # pids sent SIGSTOP (no freezer)

    def add(self, cgroup: Freezable) -> None:
        self.groups[id(cgroup)] = cgroup
        if cgroup.version == 2:
            _write(cgroup.folders[""] / "cgroup.freeze", "1")
        else:
            self._catch(cgroup)

    def sweep(self) -> None:
        for cgroup in self.groups.values():
            if cgroup.version != 2:
                self._catch(cgroup)

    def _catch(self, cgroup: Freezable) -> None:
        for pid in cgroup.pids():
            if pid in self.moved or pid in self.stopped:
                continue
            if self.freezer is not None and self._frozen_folder():
                origin = _freezer_of(pid)
                if origin is not None and _write(self.freezer / "cgroup.procs", str(pid)):
                    self.moved[pid] = origin
                    continue
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGSTOP)
                self.stopped.add(pid)

    def _frozen_folder(self) -> bool:
        """This freeze's freezer cgroup, made and frozen before a process joins it (a process
        that joins a frozen one is frozen)."""
        if not self.made and self.freezer is not None:
            try:
                self.freezer.mkdir()
            except FileExistsError:
                pass
            except OSError as e:
                log.warning("freezing a workspace: no freezer cgroup (%s); SIGSTOP instead", e)
                self.freezer = None
                return False
            self.made = _write(self.freezer / "freezer.state", "FROZEN")
            if not self.made:
                self.freezer = None
        return self.made

    def settle(self) -> None:
        """Wait (briefly) until every process is stopped: a freeze is asynchronous."""
        deadline = time.monotonic() + SETTLE
        while time.monotonic() < deadline:
            with _lock:
                if self._settled():
                    return
            time.sleep(0.002)
        log.warning(
            "freezing workspace %s: some processes were not stopped in %gs", self.key, SETTLE
        )

    def _settled(self) -> bool:
        for cgroup in self.groups.values():
            if cgroup.version == 2:
                if "frozen 1" not in _read(cgroup.folders[""] / "cgroup.events"):
                    return False
        if self.made and self.freezer is not None and self.moved:
            if _read(self.freezer / "freezer.state").strip() != "FROZEN":
                return False
        return all(_state(pid) in ("T", "t", "X", "Z", None) for pid in self.stopped)

    def release(self, cgroup: Freezable) -> None:
        """One cgroup let go before the freeze ends (its command is over)."""
        self.groups.pop(id(cgroup), None)
        if cgroup.version == 2:
            _write(cgroup.folders[""] / "cgroup.freeze", "0")
            return
        for pid in cgroup.pids():
            self._let_go(pid)

    def _let_go(self, pid: int) -> None:
        origin = self.moved.pop(pid, None)
        if origin is not None:
            _write(origin / "cgroup.procs", str(pid))  # moved out of a frozen cgroup: thawed
        if pid in self.stopped:
            self.stopped.discard(pid)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGCONT)

    def thaw(self) -> None:
        for cgroup in self.groups.values():
            if cgroup.version == 2:
                _write(cgroup.folders[""] / "cgroup.freeze", "0")
        if self.made and self.freezer is not None:
            _write(self.freezer / "freezer.state", "THAWED")
            for pid in list(self.moved):
                self._let_go(pid)
            _remove(self.freezer)
        for pid in list(self.stopped):
            self._let_go(pid)
        self.groups.clear()


# -- the v1 freezer hierarchy ----------------------------------------------------------------------

_folders = itertools.count(1)


def _freezer_folder() -> Path | None:
    """A new name for a freeze's freezer cgroup beside this worker's own (v1, where the freezer
    controller is mounted and writable; None elsewhere)."""
    global _freezer
    if _freezer is False:
        _freezer = _own_freezer()
        if isinstance(_freezer, Path):
            _sweep_dead(_freezer)
    if not isinstance(_freezer, Path):
        return None
    return _freezer / f"xsky-{os.getpid()}-freeze-{next(_folders)}"


def _own_freezer() -> Path | None:
    mount = None
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            fields, extra = left.split(), right.split()
            if len(extra) >= 3 and extra[0] == "cgroup" and "freezer" in extra[2].split(","):
                mount = Path(fields[4])
                break
    if mount is None:
        return None
    own = _freezer_of(os.getpid())
    folder = own if own is not None else mount
    return folder if os.access(folder / "cgroup.procs", os.W_OK) else None


def _freezer_of(pid: int) -> Path | None:
    """The v1 freezer cgroup folder ``pid`` is in (None: gone, or no freezer)."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    path = next(
        (line.split(":", 2)[2] for line in lines if "freezer" in line.split(":", 2)[1].split(",")),
        None,
    )
    for line in mounts:
        left, _, right = line.partition(" - ")
        fields, extra = left.split(), right.split()
        if path is not None and len(extra) >= 3 and "freezer" in extra[2].split(","):
            return Path(fields[4]) / path.lstrip("/")
    return None


def _sweep_dead(parent: Path) -> None:
    """Freezes left by workers that died during one: thawed (their processes may then end)."""
    with contextlib.suppress(OSError):
        for entry in parent.iterdir():
            owner = entry.name.removeprefix("xsky-").partition("-freeze-")[0]
            if entry.name.startswith("xsky-") and owner.isdigit() and not process_alive(int(owner)):
                _write(entry / "freezer.state", "THAWED")
                for pid in _read(entry / "cgroup.procs").split():
                    _write(parent / "cgroup.procs", pid)
                _remove(entry)


def _remove(folder: Path) -> None:
    for _ in range(50):
        try:
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            for pid in _read(folder / "cgroup.procs").split():  # forked meanwhile: out too
                origin = folder.parent
                _write(origin / "cgroup.procs", pid)
            time.sleep(0.002)


def _state(pid: int) -> str | None:
    """The one-letter state of ``pid`` (``T`` stopped), None when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
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
