"""Benchmark: transcript ingestion (MB/s) and the cost of a skills tick when nothing changed.

Generates a seeded corpus of Claude Code sessions and Codex rollouts (multi-turn, tool
calls and results, large outputs, errors, thinking, compactions, subagents, Skill use and
SKILL.md reads, planted credentials), ingests it the way the scan workflow does with the
offline TaskAgent (scan → render → split → commit until a scan finds nothing), then tops
the corpus up with small sessions to ≥ 10,000 files and times a scan with nothing changed.

    python bench/ingest.py [--mb 200] [--files 10000] [--workers N] [--dir DIR] [--quick]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from activities.skills.pipeline import _split_offline
from activities.skills.render import render_delta
from activities.skills.scan import commit_delta, scan
from bench.corpus import Generator
from bench.corpus_pools import MARK, MARK_UP
from xsky.skills.runs import DeltaInput, DeltaRef, ScanInput
from xsky.skills.sources import Source

SCAN = ScanInput(limit=5000, settle_seconds=0)


# -- ingestion -------------------------------------------------------------------------------


def _one(home: Path, delta: DeltaRef) -> int:
    """render → offline split → commit, as the delta workflow does; the atoms written."""
    render_delta(home, delta)
    _split_offline(home, DeltaInput(delta=delta))
    result = commit_delta(home, delta)
    if not result.committed:
        raise RuntimeError(f"{delta.label()}: not committed ({result.reason})")
    return len(result.atoms)


def ingest(home: Path, sources: list[Source], workers: int = 1) -> dict[str, float]:
    """Scan and process deltas until a scan finds none."""
    started = time.perf_counter()
    rounds = deltas = 0
    pool = ProcessPoolExecutor(workers) if workers > 1 else None
    try:
        while True:
            found = scan(home, sources, SCAN)
            for problem in found.problems:
                print(f"  scan problem: {problem}")
            if not found.deltas:
                break
            rounds += 1
            deltas += len(found.deltas)
            if pool is None:
                for d in found.deltas:
                    _one(home, d)
            else:
                list(pool.map(_one, [home] * len(found.deltas), found.deltas, chunksize=4))
    finally:
        if pool is not None:
            pool.shutdown()
    return {"seconds": time.perf_counter() - started, "rounds": rounds, "deltas": deltas}


def count_atoms(home: Path) -> int:
    n = 0
    for sessions in home.glob("*_sessions"):
        for traj in os.scandir(sessions):
            if traj.is_dir():
                with os.scandir(os.path.join(traj.path, "tasks")) as it:
                    n += sum(
                        1 for e in it if e.name.startswith("atom_") and e.name.endswith(".json")
                    )
    return n


def leaks(home: Path, planted: dict[str, str]) -> dict[str, int]:
    """Planted secrets found in the views and atoms, by kind."""
    token = re.compile(r"[A-Za-z0-9_\-+/.=]*(?:" + MARK + "|" + MARK_UP + r")[A-Za-z0-9_\-+/.=]*")
    found: dict[str, int] = {}
    for path in home.glob("*_sessions/**/*"):
        if path.suffix not in (".md", ".json") or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if MARK not in text and MARK_UP not in text:
            continue
        for m in token.finditer(text):
            kind = next(
                (k for s, k in planted.items() if s in m.group(0) or m.group(0) in s), "unknown"
            )
            found[kind] = found.get(kind, 0) + 1
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--mb", type=float, default=200, help="corpus size in MB (10^6 bytes), half per format"
    )
    ap.add_argument(
        "--files",
        type=int,
        default=10_000,
        help="files the no-change tick scans (small sessions top the corpus up)",
    )
    ap.add_argument(
        "--workers",
        type=int,
        default=0,
        help="also ingest with a pool of N processes (into a second skills home)",
    )
    ap.add_argument("--repeat", type=int, default=5, help="no-change ticks timed")
    ap.add_argument(
        "--dir",
        type=Path,
        help="work folder (must be empty or absent; kept); default a temporary folder, removed",
    )
    ap.add_argument("--seed", type=int, default=20261128)
    ap.add_argument("--quick", action="store_true", help="a smoke run: 10 MB, 1,000 files")
    args = ap.parse_args()
    if args.quick:
        args.mb, args.files = min(args.mb, 10), min(args.files, 1000)

    if args.dir is not None:
        if args.dir.exists() and any(args.dir.iterdir()):
            ap.error(f"{args.dir} is not empty")
        work = args.dir
        work.mkdir(parents=True, exist_ok=True)
    else:
        work = Path(tempfile.mkdtemp(prefix="xsky-bench-ingest-"))
    try:
        run(args, work)
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


def run(args: argparse.Namespace, work: Path) -> None:
    root = work / "transcripts"
    sources = [
        Source("claude-code", root / "claude" / "projects", "bench"),
        Source("codex", root / "codex", "bench"),
    ]

    t0 = time.perf_counter()
    gen = Generator(root, args.seed)
    gen.corpus(int(args.mb * 1e6))
    corpus_files, corpus_bytes = gen.files, gen.bytes
    cc_bytes = sum(p.stat().st_size for p in (root / "claude").rglob("*.jsonl"))
    print(
        f"generated {corpus_bytes / 1e6:.1f} MB in {corpus_files:,} files ({cc_bytes / 1e6:.1f} MB Claude Code, "
        f"{(corpus_bytes - cc_bytes) / 1e6:.1f} MB Codex; {len(gen.secrets.planted):,} secrets planted) in {time.perf_counter() - t0:.1f} s"
    )

    home = work / "home"
    one = ingest(home, sources)
    atoms = count_atoms(home)
    print(
        f"ingested (1 process): {one['seconds']:.1f} s, {one['deltas']:,} deltas in {one['rounds']} scan rounds, {atoms:,} atoms"
    )
    pool = None
    if args.workers > 1:
        pool = ingest(work / "home-pool", sources, args.workers)
        print(
            f"ingested ({args.workers} processes): {pool['seconds']:.1f} s, {pool['deltas']:,} deltas, {count_atoms(work / 'home-pool'):,} atoms"
        )
    leaked = leaks(home, gen.secrets.planted)

    t0 = time.perf_counter()
    gen.small(max(0, args.files - corpus_files))
    small_files = gen.files - corpus_files
    small_gen = time.perf_counter() - t0
    top = ingest(home, sources)
    print(
        f"topped up with {small_files:,} small sessions ({(gen.bytes - corpus_bytes) / 1e6:.1f} MB, generated in {small_gen:.1f} s), "
        f"ingested in {top['seconds']:.1f} s"
    )

    ticks, deltas, files = [], 0, 0
    for _ in range(args.repeat):
        t = time.perf_counter()
        res = scan(home, sources, SCAN)
        ticks.append(time.perf_counter() - t)
        deltas += len(res.deltas) + res.remaining
        files = res.files
    median, worst = statistics.median(ticks), max(ticks)

    mb = corpus_bytes / 1e6
    print()
    print(
        f"{'corpus':34}{mb:>10.1f} MB in {corpus_files:,} files (Claude Code + Codex, ~half each)"
    )
    print(
        f"{'ingestion, 1 process':34}{one['seconds']:>10.1f} s   {mb / one['seconds']:>7.2f} MB/s   {atoms:,} atoms"
    )
    if pool is not None:
        print(
            f"{f'ingestion, {args.workers} processes':34}{pool['seconds']:>10.1f} s   {mb / pool['seconds']:>7.2f} MB/s"
        )
    print(
        f"{'small sessions, 1 process':34}{top['seconds']:>10.1f} s   {small_files / max(top['seconds'], 1e-9):>7.0f} files/s"
    )
    print(
        f"{'planted secrets leaked':34}{sum(leaked.values()):>10,} of {len(gen.secrets.planted):,}"
        + (f"  ({', '.join(f'{k} {v}' for k, v in sorted(leaked.items()))})" if leaked else "")
    )
    print(
        f"{f'no-change tick over {files:,} files':34}{median * 1e3:>10.0f} ms median, {worst * 1e3:.0f} ms max of {args.repeat}; "
        f"{deltas} deltas found"
    )
    ok = worst < 1.0 and deltas == 0 and files >= args.files
    print(
        f"target (no-change tick < 1 s over ≥ {args.files:,} files, 0 deltas): {'met' if ok else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
