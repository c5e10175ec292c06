"""Benchmark: what a long watch leaves in the run's state — its plan history folded (patch
plan-growth-folded) and as it was before, side by side.

A watch writes a plan version per firing (up to its ``maxFirings``, at most 1,000), and each
version kept the whole plan's XML, which grows by two agents a firing: the history grew with
the square of the firings, and the leader carries it through every continue-as-new (a large
version's XML was stored through an activity each). Folded, only the watch's newest version
keeps its XML and the watch keeps at most ``GROWTH_LISTED`` entries.

Through the leader's pure core (the unit tests' shell: no server), a watch of N firings, each
firing answered: the plan state's JSON size, the history's entries, and the core's time per
firing, folded and not. Target: the folded state grows linearly (bytes per firing flat as N
grows) and is ≤ 1/10 of the unfolded one from 100 firings.

    python bench/watch_history.py [--firings 10 100 300 1000] [--unfolded-up-to 300]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.unit.test_watches import watched


def measure(firings: int, fold: bool) -> tuple[int, int, float]:
    started = time.perf_counter()
    shell = watched(firings, fold)
    took = time.perf_counter() - started
    state = shell.core.plans.state
    return len(state.model_dump_json()), len(state.history), took / firings


def main(sizes: list[int], unfolded_up_to: int) -> None:
    print("a watch of N firings, every firing answered; the plan state (its JSON) after it ended")
    print(
        f"{'firings':>8}{'folded':>12}{'entries':>9}{'ms/firing':>11}"
        f"{'unfolded':>12}{'entries':>9}{'ms/firing':>11}{'folded/unfolded':>17}"
    )
    ok = True
    per: list[float] = []
    for n in sizes:
        size, entries, took = measure(n, True)
        per.append(size / n)
        row = f"{n:>8}{size / 1024:>10.0f}Ki{entries:>9}{took * 1000:>11.1f}"
        if n <= unfolded_up_to:
            usize, uentries, utook = measure(n, False)
            row += (
                f"{usize / 1024:>10.0f}Ki{uentries:>9}{utook * 1000:>11.1f}{size / usize:>16.3f}×"
            )
            if n >= 100 and size * 10 > usize:
                ok = False
        else:
            row += f"{'(not run: quadratic)':>49}"
        print(row)
    flat = max(per[1:] or per) <= 1.5 * min(per[1:] or per)  # bytes per firing, past the first
    print(
        f"target (folded ≤ 1/10 of unfolded from 100 firings; bytes per firing flat): "
        f"{'met' if ok and flat else 'NOT met'}"
    )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--firings", type=int, nargs="+", default=[10, 100, 300, 1000])
    ap.add_argument("--unfolded-up-to", type=int, default=300)
    args = ap.parse_args()
    main(args.firings, args.unfolded_up_to)
