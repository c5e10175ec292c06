"""Benchmark: what a workspace snapshot costs since its filesystem half runs in a helper process
as the sandbox user, through directory descriptors — against the in-process code it replaced.

A workspace of 200 small files (1–4 KiB, in 10 folders) on the local store; for each of the two
implementations, side by side: a take with nothing changed, a take with 10 files changed, and a
restore on another "host" after those 10 changed (a second workspace folder and marks, one
store). Median of the rounds, in milliseconds, and the difference per snapshot. The old code is
read from git (commit ``BEFORE``, the last one with the in-process walk), so it is measured as
it was, not a copy. Run as root, the new code drops to an unprivileged uid (65534) as a root
worker does.

    python bench/snapshots.py [--rounds 15] [--files 200]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from activities.storage.local import LocalStore  # noqa: E402
from activities.storage.snapshots import Snapshots  # noqa: E402

BEFORE = "dbd7f8c"  # activities/storage/snapshots.py before the helper process
KEY = "_workspaces/bench"


def old_snapshots() -> Any:
    """The in-process Snapshots of commit BEFORE, loaded from git."""
    source = subprocess.check_output(
        ["git", "-C", str(ROOT), "show", f"{BEFORE}:activities/storage/snapshots.py"]
    )
    module = types.ModuleType("old_snapshots")
    module.__file__ = f"<{BEFORE}:activities/storage/snapshots.py>"
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module.Snapshots


def fill(folder: Path, files: int) -> list[Path]:
    made = []
    for n in range(files):
        path = folder / f"dir{n % 10}" / f"file{n:04d}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(1024 + (n * 37) % 3072))
        made.append(path)
    return made


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return (time.perf_counter() - start) * 1000


def measure(
    make: Callable[..., Any], base: Path, files: int, rounds: int, owner: Any
) -> dict[str, float]:
    """Median milliseconds of: take unchanged, take with 10 changed, restore of those 10."""
    shutil.rmtree(base, ignore_errors=True)
    store = LocalStore(base / "store")
    folders = []
    for name in ("a", "b"):
        folder = base / name / "workspace"
        folder.mkdir(parents=True)
        if owner is not None:
            os.chown(folder, *owner)
        folders.append(folder)
    a = make(store, KEY, folders[0], base / "a" / "marks", owner)
    b = make(store, KEY, folders[1], base / "b" / "marks", owner)
    paths = fill(folders[0], files)
    if owner is not None:
        for p in folders[0].rglob("*"):
            os.chown(p, *owner)
    a.take()
    b.restore()
    times: dict[str, list[float]] = {
        "take, nothing changed": [],
        "take, 10 changed": [],
        "restore, 10 changed": [],
    }
    for r in range(rounds):
        times["take, nothing changed"].append(timed(a.take))
        for p in paths[r * 10 % files : r * 10 % files + 10]:
            p.write_bytes(os.urandom(2048))
        times["take, 10 changed"].append(timed(a.take))
        times["restore, 10 changed"].append(timed(b.restore))
    return {what: statistics.median(ms) for what, ms in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--files", type=int, default=200)
    args = parser.parse_args()
    owner = (65534, 65534) if os.geteuid() == 0 else None
    with tempfile.TemporaryDirectory(prefix="xsky-bench-snapshots-") as tmp:
        old = measure(old_snapshots(), Path(tmp) / "old", args.files, args.rounds, owner)
        new = measure(Snapshots, Path(tmp) / "new", args.files, args.rounds, owner)
    who = f"as uid {owner[0]}" if owner else "as the worker's user"
    print(
        f"workspace of {args.files} files, local store, median of {args.rounds} rounds (new: {who})"
    )
    print(f"{'':24}{'in-process (before)':>22}{'helper process (now)':>22}{'difference':>12}")
    for what in old:
        print(
            f"{what:24}{old[what]:>19.1f} ms{new[what]:>19.1f} ms{new[what] - old[what]:>+9.1f} ms"
        )


if __name__ == "__main__":
    main()
