"""Benchmark: how long a new worker takes to serve — what a lost worker's replacement costs a
run before its agents move again.

`python worker.py` is started against a dev server on free ports and timed until it logs that
it serves; beside it `python -c "import temporalio.worker"` (the SDK's share). With
``--against DIR`` (another checkout of xsky, e.g. ``git archive v0.11.2 | tar -x -C DIR``)
that tree's worker runs in the same rounds, interleaved, for a before/after ratio.

    python bench/worker_start.py [--rounds 6] [--against /tmp/old]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cli.devserver import DevServer, free_port  # noqa: E402 - after the path is set


def serving(root: Path, env: dict[str, str], log: Path) -> float:
    """Seconds from spawning ``root``'s worker.py to its "serving" line."""
    t0 = time.perf_counter()
    with open(log, "wb") as fh:
        proc = subprocess.Popen(
            [sys.executable, str(root / "worker.py"), "--grace", "1"],
            cwd=root,
            env=env,
            stdout=fh,
            stderr=subprocess.STDOUT,
        )
    try:
        while b"serving" not in log.read_bytes():
            if proc.poll() is not None:
                raise SystemExit(f"the worker of {root} exited:\n{log.read_text()[-2000:]}")
            time.sleep(0.01)
        return time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(30)


def imported(module: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", f"import {module}"], check=True, timeout=120)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--against", type=Path, help="another checkout of xsky to time beside")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="xsky-bench-"))
    server = DevServer(
        db_path=tmp / "t.db", port=free_port(), headless=True, log_path=tmp / "server.log"
    )
    server.start(timeout=90)
    env = {
        **os.environ,
        "TEMPORAL_ADDRESS": server.address,
        "XSKY_HOME": str(tmp / "home"),
        "XSKY_TASK_QUEUE": "bench-start",
    }
    trees = {"this tree": ROOT, **({str(args.against): args.against} if args.against else {})}
    times: dict[str, list[float]] = {name: [] for name in [*trees, "import temporalio.worker"]}
    try:
        for r in range(args.rounds):
            for name, root in trees.items():
                times[name].append(serving(root, env, tmp / f"{r}-{len(times[name])}.log"))
            times["import temporalio.worker"].append(imported("temporalio.worker"))
    finally:
        server.stop()
    print(f"a worker's start until it serves, {args.rounds} rounds, medians (min–max):")
    for name, values in times.items():
        print(
            f"  {name:32} {statistics.median(values):6.2f} s  ({min(values):.2f}–{max(values):.2f})"
        )
    if args.against:
        ratio = statistics.median(times[str(args.against)]) / statistics.median(times["this tree"])
        print(f"  {args.against} ÷ this tree: {ratio:.2f}×")


if __name__ == "__main__":
    main()
