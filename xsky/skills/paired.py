"""The paired test: a skill version against its baseline on tasks it was not written from.

Before a version is published (a first version onto ``main``) or kept under canary (a
``staging`` version), the configured model runs held-out tasks twice — with the version's
SKILL.md loaded and with the baseline (``main``'s, or no skill for a first version) — and a
blind comparator (another model call that sees the two outputs unlabelled, in an order drawn
per trial) scores each 1–10. This module is the pure part: which atoms are held out, the
statistics, the verdict and how a result is written down.

**Statistics.** For n trials (at least :data:`MIN_TRIALS`) the differences
``d = score(with) − score(baseline)`` give the mean difference and a two-sided 95 % Student-t
confidence interval for it (mean ± t(0.975, n−1)·sd/√n); the win rate counts a tie as half a
win. A version **beats** its baseline only when the interval's lower bound is above 0 — with
three trials that takes a consistent, sizeable gain (the field's evidence: most published skills
give none). Every figure is ``model-judged``: the comparator is a model, not a measurement.
"""

from __future__ import annotations

import hashlib
import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

MIN_TRIALS = 3  # trials a side, at least
TRIALS = 3
HOLD_OUT_SHARE = 4  # one atom in four (at least one) is kept out of the edit for the test
RECORD = ".paired.json"  # the result, committed on the version's branch
KIND: Literal["model-judged"] = "model-judged"
# two-sided 95 % Student-t quantiles t(0.975, df) for df = 1..30; beyond, the normal's 1.96
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip

Verdict = Literal["better", "worse", "no difference shown", "not run"]
ScoreKind = Literal["heuristic", "model-judged"]


class Trial(BaseModel):
    """One task run with and without the version, as the blind comparator scored it."""

    model_config = ConfigDict(extra="ignore")
    task: str  # the held-out atom whose intent was the task
    shown_first: Literal["with", "baseline"]  # which output the comparator saw as "1"
    with_score: int = Field(ge=1, le=10)
    baseline_score: int = Field(ge=1, le=10)


class PairedResult(BaseModel):
    """A paired test's outcome, stored with the version (``.paired.json``) and in the entity."""

    model_config = ConfigDict(extra="ignore")
    version: str  # the commit tested (the record is committed on top of it)
    baseline: str  # "main <sha>" or "no skill"
    verdict: Verdict
    reason: str = ""
    kind: ScoreKind = KIND
    model: str = ""
    trials: list[Trial] = Field(default_factory=list)
    held_out: list[str] = Field(default_factory=list)  # atom ids the tasks came from
    win_rate: float | None = None
    mean_difference: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    record_commit: str | None = None  # the commit holding .paired.json (the version's new tip)

    @property
    def passed(self) -> bool:
        return self.verdict == "better"

    def line(self) -> str:
        """One line for status, list, show, events and commit messages, labelled with its kind."""
        if self.verdict == "not run":
            return f"paired test not run: {self.reason}"
        return (
            f"paired test ({self.kind}, {len(self.trials)} trials a side vs {self.baseline}): "
            f"{self.verdict}; win rate {self.win_rate:.2f}, mean difference {self.mean_difference:+.2f} "
            f"(95% t-interval {self.ci_low:+.2f} to {self.ci_high:+.2f})"
        )


def t_quantile(df: int) -> float:
    return _T975[df - 1] if 1 <= df <= len(_T975) else 1.96


def summarise(
    trials: list[Trial], version: str, baseline: str, model: str, held_out: list[str]
) -> PairedResult:
    """The statistics and verdict of the trials (see the module's doc)."""
    base = PairedResult(
        version=version, baseline=baseline, verdict="not run", model=model, held_out=held_out
    )
    n = len(trials)
    if n < MIN_TRIALS:
        return base.model_copy(
            update={
                "trials": trials,
                "reason": f"{n} trial(s) judged; the test needs at least {MIN_TRIALS} a side",
            }
        )
    diffs = [float(t.with_score - t.baseline_score) for t in trials]
    mean = sum(diffs) / n
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    half = t_quantile(n - 1) * sd / math.sqrt(n)
    low, high = mean - half, mean + half
    wins = sum(1.0 if d > 0 else 0.5 if d == 0 else 0.0 for d in diffs)
    verdict: Verdict = "better" if low > 0 else "worse" if high < 0 else "no difference shown"
    reason = {
        "better": f"the version beats {baseline}: the interval is above 0",
        "worse": f"the version does worse than {baseline}: the interval is below 0",
        "no difference shown": f"the interval includes 0: no gain over {baseline} is shown",
    }[verdict]
    return base.model_copy(
        update={
            "trials": trials,
            "verdict": verdict,
            "reason": reason,
            "win_rate": round(wins / n, 3),
            "mean_difference": round(mean, 3),
            "ci_low": round(low, 3),
            "ci_high": round(high, 3),
        }
    )


def not_run(version: str, baseline: str, reason: str, model: str = "") -> PairedResult:
    """A test that could not run (no model, no held-out task): never a reason to promote."""
    return PairedResult(
        version=version, baseline=baseline, verdict="not run", reason=reason, model=model
    )


def hold_out(atom_ids: list[str]) -> tuple[list[str], list[str]]:
    """(written from, held out): one atom in :data:`HOLD_OUT_SHARE` (at least one, when there
    are two or more), chosen by a hash of its id — the same atoms whatever their order."""
    if len(atom_ids) < 2:
        return list(atom_ids), []
    ranked = sorted(atom_ids, key=lambda a: hashlib.sha256(a.encode()).hexdigest())
    out = set(ranked[: max(1, len(atom_ids) // HOLD_OUT_SHARE)])
    return [a for a in atom_ids if a not in out], [a for a in atom_ids if a in out]


def tasks(held_out: list[str], n: int = TRIALS) -> list[str]:
    """The atom each of ``n`` trials takes its task from (round robin over the held-out)."""
    return [held_out[i % len(held_out)] for i in range(n)] if held_out else []


def first_shown(version: str, trial: int) -> Literal["with", "baseline"]:
    """Which output the comparator sees first in a trial: drawn from the version and the
    trial's number, so the order is unpredictable to the comparator yet the same on a retry."""
    bit = hashlib.sha256(f"{version}:{trial}".encode()).digest()[0] & 1
    return "with" if bit else "baseline"


def kind_label(kinds: list[str]) -> str:
    """How a set of scores was made: ``heuristic``, ``model-judged``, or the mix, counted."""
    found = sorted(set(kinds))
    if not found:
        return "no scores"
    if len(found) == 1:
        return found[0]
    return "mixed: " + ", ".join(f"{kinds.count(k)} {k}" for k in found)
