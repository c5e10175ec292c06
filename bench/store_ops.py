"""Benchmark: what an agent attempt asks of its store — every call a request someone pays for
on S3 — before and after "one durable write per attempt", side by side.

For each kind of attempt — an instant no-op, a shell command (``echo hi``), a model agent of
three iterations (two tool calls, against the scripted OpenAI-compatible server of
tests/fake_llm.py) — the store calls of one attempt (reads, writes), on the local store and on
S3 (moto), through the ``run_agent`` activity itself (bench/store_ops_attempt.py). Then a
200-agent fan-out of no-ops through a dev server, on each store: its median wall time, the
S3 ÷ local ratio, and the store calls of one run, leader's and agents' (bench/store_ops_fanout.py).

The code before is read from git (commit ``BEFORE``, main's head when the work began),
exported to a temporary folder and measured as it was, each measurement in a process of its
own with that tree first on its path (the measuring scripts are copied beside it). moto is a
Python S3 server on this machine: its times bound the client's and the round trips' cost from
above, not a network's latency; the counts are what they would be anywhere.

    python bench/store_ops.py [--rounds 10] [--fanout-rounds 3] [--no-fanout] [--before REV]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.s3server import s3_server  # noqa: E402

BEFORE = "52d6b43"  # main's head before one durable write per attempt
KINDS = {
    "noop": "no-op attempt",
    "shell": "shell attempt (echo hi)",
    "model": "model attempt (3 iterations)",
}
# The measuring scripts, new with this benchmark: copied into the exported tree.
SCRIPTS = ("bench/store_ops_attempt.py", "bench/store_ops_fanout.py", "tests/counting_store.py")


def exported(commit: str, into: Path, scripts: tuple[str, ...] = SCRIPTS) -> Path:
    """The tree of ``commit``, with the measuring scripts beside its code."""
    data = subprocess.check_output(["git", "-C", str(ROOT), "archive", "--format=tar", commit])
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(into, filter="data")
    for script in scripts:
        shutil.copy2(ROOT / script, into / script)
    return into


def measured(tree: Path, script: str, *args: str, endpoint: str) -> dict[str, Any]:
    """One measuring script's JSON, run in ``tree`` (its code first on the path)."""
    env = {**os.environ, "XSKY_BENCH_S3": endpoint, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, script, *args],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{script} {' '.join(args)} in {tree} failed:\n{done.stderr[-3000:]}")
    row: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(row["tree"]).resolve() == tree.resolve(), f"measured {row['tree']}, not {tree}"
    return row


def main(rounds: int, fanout_rounds: int, fanout: bool, before: str = BEFORE) -> None:
    with tempfile.TemporaryDirectory(prefix="xsky-store-ops-") as tmp, s3_server() as s3:
        trees = {"before": exported(before, Path(tmp) / "before"), "after": ROOT}
        print(f"before: {before} (exported to {trees['before']}); after: {ROOT}")
        print(f"S3: moto at {s3.endpoint}; {rounds} attempts of each kind, each a first attempt\n")
        rows: dict[tuple[str, str, str], dict[str, Any]] = {}
        for kind in KINDS:
            for store in ("local", "s3"):
                for side, tree in trees.items():
                    rows[(kind, store, side)] = measured(
                        tree,
                        "bench/store_ops_attempt.py",
                        kind,
                        store,
                        str(rounds),
                        endpoint=s3.endpoint,
                    )
        print("per attempt, before → after")
        print(f"{'':30}{'store':>6}{'reads':>12}{'writes':>12}{'S3 requests':>14}{'ms':>18}")
        for kind, label in KINDS.items():
            for store in ("local", "s3"):
                b, a = rows[(kind, store, "before")], rows[(kind, store, "after")]
                print(
                    f"{label:30}{store:>6}"
                    f"{change(b['reads'], a['reads']):>12}"
                    f"{change(b['writes'], a['writes']):>12}"
                    f"{change(requests(b), requests(a)):>14}"
                    f"{b['ms']:>9.1f} → {a['ms']:<6.1f}"
                )
                label = ""
        print("\nby call (before → after):")
        for kind in KINDS:
            b, a = rows[(kind, "s3", "before")], rows[(kind, "s3", "after")]
            names = sorted(set(b["calls"]) | set(a["calls"]))
            shown = ", ".join(
                f"{n} {b['calls'].get(n, 0):g}→{a['calls'].get(n, 0):g}" for n in names
            )
            print(f"  {KINDS[kind]}: {shown}")
        if not fanout:
            return
        print(f"\n200-agent fan-out of no-ops (median of {fanout_rounds} runs per store):")
        print(f"{'':10}{'local':>10}{'S3':>10}{'S3/local':>10}{'reads':>16}{'writes':>16}")
        for side, tree in trees.items():
            f = measured(
                tree, "bench/store_ops_fanout.py", str(fanout_rounds), endpoint=s3.endpoint
            )
            print(
                f"{side:10}{f['local']['seconds']:>9.2f}s{f['s3']['seconds']:>9.2f}s"
                f"{f['ratio']:>9.2f}×"
                f"{f['local']['reads']:>7} / {f['s3']['reads']:<6}"
                f"{f['local']['writes']:>7} / {f['s3']['writes']:<6}"
            )
        print("(reads and writes of one run: local / S3, the leader's and the agents')")


def requests(row: dict[str, Any]) -> float | None:
    """The S3 requests of one attempt (None on the local store)."""
    found = row.get("requests") or {}
    return float(sum(found.values())) if found else None


def change(before: float | None, after: float | None) -> str:
    def shown(n: float | None) -> str:
        return "-" if n is None else f"{n:g}"

    return f"{shown(before)} → {shown(after)}"


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10, help="attempts of each kind (default 10)")
    ap.add_argument(
        "--fanout-rounds", type=int, default=3, help="fan-out runs per store (default 3)"
    )
    ap.add_argument("--no-fanout", action="store_true", help="the attempts' counts only")
    ap.add_argument(
        "--before", default=BEFORE, help=f"the git revision compared with (default {BEFORE})"
    )
    a = ap.parse_args()
    main(a.rounds, a.fanout_rounds, not a.no_fanout, a.before)
