"""The canary: which side of a skill an agent reads, and when staging replaces main.

**Assignment** is sticky: ``sha256("<run or trajectory id>:<skill>")`` read as a fraction
of 2^64 below p = 0.2 → staging, else main. The same run always gets the same side.

**Decision rule** (stated in docs/skills.md). Nothing is decided before both sides have at
least 20 UX scores. Then one Mann–Whitney statistic compares ``staging + 0.5`` with
``main`` (the margin is 0.5 points), read on both tails at α = 0.05:

- *non-inferiority* (upper tail): staging + 0.5 tends to score above main — staging is
  shown not to be worse than main by more than the margin → **promote**;
- *inferiority* (lower tail): staging + 0.5 tends to score below main — staging is shown
  to be worse by more than the margin → **discard**;
- neither: the evidence is not there yet → keep collecting; a staging version with no
  decision after 14 days is **discarded**. A new version must earn its place: not
  showing harm is not enough (LLM-written skills are not better by default).

Scores are integers 1–10 with many ties: mid-ranks, the tie-corrected variance and a
continuity correction.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

P_STAGING = 0.2
MIN_SCORES = 20
ALPHA = 0.05
MARGIN = 0.5
MAX_AGE = timedelta(days=14)

Side = Literal["main", "staging"]


def assign(key: str, skill: str, p: float = P_STAGING) -> Side:
    digest = hashlib.sha256(f"{key}:{skill}".encode()).digest()
    return "staging" if int.from_bytes(digest[:8], "big") / 2**64 < p else "main"


@dataclass
class Test:
    u: float
    z: float
    p_worse: float  # lower tail: staging worse than main by more than the margin
    p_not_worse: float  # upper tail: staging not worse than main by more than the margin


def shifted_test(staging: list[float], main: list[float], margin: float = MARGIN) -> Test:
    """Mann–Whitney U of ``staging + margin`` against ``main``, with both one-sided p-values.

    U counts pairs where the shifted staging score beats the main score (ties count ½).
    The p-values use the normal approximation with tie-corrected variance and a continuity
    correction towards the mean.
    """
    shifted = [s + margin for s in staging]
    n1, n2 = len(shifted), len(main)
    pooled = sorted([(v, 0) for v in shifted] + [(v, 1) for v in main])
    ranks: list[float] = [0.0] * len(pooled)
    ties = 0.0
    i = 0
    while i < len(pooled):
        j = i
        while j + 1 < len(pooled) and pooled[j + 1][0] == pooled[i][0]:
            j += 1
        mid = (i + j) / 2 + 1
        for k in range(i, j + 1):
            ranks[k] = mid
        t = j - i + 1
        ties += t**3 - t
        i = j + 1
    r1 = sum(r for r, (_, group) in zip(ranks, pooled, strict=True) if group == 0)
    u = r1 - n1 * (n1 + 1) / 2
    n = n1 + n2
    mean = n1 * n2 / 2
    var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)))
    if var <= 0:  # every score equal on both sides: nothing to tell them apart
        return Test(u, 0.0, 1.0, 1.0)
    sd = math.sqrt(var)
    z_low, z_high = (u - mean + 0.5) / sd, (u - mean - 0.5) / sd
    return Test(u, (u - mean) / sd, _phi(z_low), 1 - _phi(z_high))


def _phi(z: float) -> float:
    return 0.5 * (1 + math.erf(z / math.sqrt(2)))


@dataclass
class Decision:
    verdict: Literal["wait", "promote", "discard"]
    reason: str
    figures: dict[str, float] = field(default_factory=dict)

    def message(self) -> str:
        f = self.figures
        if not f:
            return self.reason
        return (
            f"{self.reason} (main: n={f['n_main']:.0f}, mean {f['mean_main']:.2f}; staging: n={f['n_staging']:.0f}, "
            f"mean {f['mean_staging']:.2f}; Mann-Whitney U={f['u']:.1f}, z={f['z']:.2f}, p={f['p']:.4f}; "
            f"margin {MARGIN}, alpha {ALPHA})"
        )


def decide(
    main: list[float],
    staging: list[float],
    started: datetime | None = None,
    now: datetime | None = None,
) -> Decision:
    """The rule above, applied to the scores so far."""
    figures: dict[str, float] = {
        "n_main": len(main),
        "n_staging": len(staging),
        "mean_main": _mean(main),
        "mean_staging": _mean(staging),
    }
    expired = started is not None and now is not None and now - started >= MAX_AGE
    if len(main) < MIN_SCORES or len(staging) < MIN_SCORES:
        if expired:
            return Decision(
                "discard",
                f"no decision after {MAX_AGE.days} days: fewer than {MIN_SCORES} scores on a side",
                {**figures, "u": float("nan"), "z": float("nan"), "p": float("nan")},
            )
        return Decision(
            "wait",
            f"waiting for {MIN_SCORES} scores on each side (main {len(main)}, staging {len(staging)})",
        )
    test = shifted_test(staging, main)
    if test.p_worse < ALPHA:
        return Decision(
            "discard",
            f"staging is worse than main by more than {MARGIN} points",
            {**figures, "u": test.u, "z": test.z, "p": test.p_worse},
        )
    if test.p_not_worse < ALPHA:
        return Decision(
            "promote",
            f"staging is shown not to be worse than main by more than {MARGIN} points",
            {**figures, "u": test.u, "z": test.z, "p": test.p_not_worse},
        )
    if expired:
        return Decision(
            "discard",
            f"no decision after {MAX_AGE.days} days: staging was not shown to be at least as good",
            {**figures, "u": test.u, "z": test.z, "p": test.p_not_worse},
        )
    return Decision(
        "wait",
        f"not yet shown either way (p = {test.p_not_worse:.3f} for not worse, {test.p_worse:.3f} for "
        f"worse, by {MARGIN}); collecting more scores",
    )


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")
