"""Two runs side by side: what differed, agent by agent (``starter.py diff A B``, ``XSky.diff``).

For runs of one plan — a fork and its origin, a follow-up, a rerun — it says, per agent: a
definition the plans give differently (task, input, config, dependencies), the coordinator's
and people's decisions on it (the ledger's judgments), a status, a result (a line diff of
text; the fields that differ of JSON), attempts, tokens and cost, and time; agents only one
run has; and a summary line first. Pure: it reads what the runs
reported, nothing else.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from xsky.leader.ledger import LedgerEntry
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.runs import AgentReport


@dataclass
class AgentDiff:
    agent_id: str
    what: list[str] = field(default_factory=list)  # one line per difference

    @property
    def same(self) -> bool:
        return not self.what


@dataclass
class RunDiff:
    a: str
    b: str
    agents: list[AgentDiff]
    only_a: list[str]
    only_b: list[str]
    # what differs about the runs themselves (their variables), one line each
    run: list[str] = field(default_factory=list)

    @property
    def changed(self) -> list[str]:
        return [d.agent_id for d in self.agents if not d.same]

    def summary(self) -> str:
        parts = [f"{len(self.changed)} of {len(self.agents)} shared agent(s) differ"]
        if self.changed:
            parts[0] += f" ({', '.join('T-' + a for a in self.changed[:12])})"
        if self.only_a:
            parts.append(f"only in {self.a}: {', '.join('T-' + a for a in self.only_a[:12])}")
        if self.only_b:
            parts.append(f"only in {self.b}: {', '.join('T-' + a for a in self.only_b[:12])}")
        if self.run:
            parts.append(f"{len(self.run)} run variable(s) differ")
        return "; ".join(parts)


def _definition(a: WorkflowAgent | None, b: WorkflowAgent | None) -> list[str]:
    if a is None or b is None:
        return []
    said = []
    for name in ("name", "task", "input", "config", "depends", "for_each"):
        x, y = getattr(a, name), getattr(b, name)
        if x == y:
            continue
        if name == "config" and isinstance(x, dict) and isinstance(y, dict):
            # key by key: a whole config cut at 80 characters hid the change
            for key in sorted(set(x) | set(y)):
                if x.get(key) != y.get(key):
                    old, new = _where_they_differ(x.get(key), y.get(key))
                    said.append(f"config.{key}: {old} → {new}")
            continue
        said.append(f"{name}: {_short(x)} → {_short(y)}")
    return said


def _where_they_differ(x: Any, y: Any, width: int = 60) -> tuple[str, str]:
    """Two values shown short, from a little before where they first differ (two long
    commands alike but at their ends were both shown as the same cut start)."""
    sx, sy = _short(x, 10**6), _short(y, 10**6)
    if len(sx) <= width and len(sy) <= width:
        return sx, sy
    at = next(
        (i for i, (p, q) in enumerate(zip(sx, sy, strict=False)) if p != q), min(len(sx), len(sy))
    )
    start = max(0, at - 20)
    lead = "…" if start else ""
    return _short(lead + sx[start:], width), _short(lead + sy[start:], width)


def variable_diff(a: Mapping[str, str], b: Mapping[str, str]) -> list[str]:
    """One line per variable the two runs were given differently."""
    return [
        f"variable {name}: {_short(a.get(name, '(none)'), 60)} → {_short(b.get(name, '(none)'), 60)}"
        for name in sorted(set(a) | set(b))
        if a.get(name) != b.get(name)
    ]


def _short(value: Any, width: int = 80) -> str:
    text = (
        value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    )
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: width - 1] + "…"


def result_diff(x: str | None, y: str | None, lines: int = 12) -> list[str]:
    """How two results differ: the JSON fields that do (both JSON objects), else a line diff."""
    if x == y:
        return []
    try:
        jx, jy = json.loads(x or ""), json.loads(y or "")
    except (ValueError, RecursionError):
        jx = jy = None
    if isinstance(jx, dict) and isinstance(jy, dict):
        keys = sorted(set(jx) | set(jy))
        return [
            f"result.{k}: {_short(jx.get(k, '(none)'))} → {_short(jy.get(k, '(none)'))}"
            for k in keys
            if jx.get(k) != jy.get(k)
        ]
    body = list(
        difflib.unified_diff(
            (x or "").splitlines(), (y or "").splitlines(), "a", "b", n=0, lineterm=""
        )
    )[2:]
    shown = [f"  {line}" for line in body if not line.startswith("@@")][:lines]
    more = len([ln for ln in body if not ln.startswith("@@")]) - len(shown)
    return ["result differs:", *shown] + ([f"  … {more} more line(s)"] if more > 0 else [])


def _seconds(r: AgentReport) -> float | None:
    if r.started_at is None or r.ended_at is None:
        return None
    return (r.ended_at - r.started_at).total_seconds()


def agent_diff(
    agent_id: str,
    ra: AgentReport,
    rb: AgentReport,
    da: WorkflowAgent | None,
    db: WorkflowAgent | None,
    decided_a: list[str] | None = None,
    decided_b: list[str] | None = None,
) -> AgentDiff:
    d = AgentDiff(agent_id, _definition(da, db))
    carried = 0 in (ra.attempts, rb.attempts)  # carried over (a fork, a follow-up): not run there
    # the coordinator's and people's decisions on it — made where it ran: a carried result was
    # not judged again, and counts as the same
    if not carried and (decided_a or []) != (decided_b or []):
        d.what.append(
            f"decisions: {'; '.join(decided_a or []) or '(none)'} → {'; '.join(decided_b or []) or '(none)'}"
        )
    if ra.status != rb.status:
        d.what.append(f"status: {ra.status} → {rb.status}")
    d.what += result_diff(ra.result, rb.result) if ra.status == rb.status == "completed" else []
    if (ra.error or "") != (rb.error or ""):
        d.what.append(f"error: {_short(ra.error or '(none)')} → {_short(rb.error or '(none)')}")
    if carried:
        return d
    if ra.attempts != rb.attempts:
        # dispatches (the leader sent it again: a retry, an answer, a replan), not the board's
        # tries, which count Temporal's retries inside each dispatch too
        d.what.append(f"dispatches: {ra.attempts} → {rb.attempts}")
    ua, ub = ra.usage, rb.usage
    ta, tb = (ua.tokens if ua else 0), (ub.tokens if ub else 0)
    if ta != tb:
        cost = (
            f" (${ua.usd if ua else 0:.4f} → ${ub.usd if ub else 0:.4f})"
            if (ua and ua.usd) or (ub and ub.usd)
            else ""
        )
        d.what.append(f"tokens: {ta:,} → {tb:,}{cost}")
    sa, sb = _seconds(ra), _seconds(rb)
    if sa is not None and sb is not None and abs(sa - sb) >= max(1.0, 0.5 * min(sa, sb)):
        d.what.append(f"time: {sa:.1f}s → {sb:.1f}s")
    if ra.provider != rb.provider:
        d.what.append(f"answered by: {ra.provider or 'a tool'} → {rb.provider or 'a tool'}")
    return d


def decisions(entries: list[LedgerEntry]) -> dict[str, list[str]]:
    """Per agent, the judgments on it in a run's ledger: ``result: retry (leader)``."""
    out: dict[str, list[str]] = {}
    for e in entries:
        if e.task_id:
            out.setdefault(e.task_id.removeprefix("T-"), []).append(
                f"{e.point}: {e.verdict} ({e.by})"
            )
    return out


def diff_runs(
    a: str,
    plan_a: Workflow,
    reports_a: list[AgentReport],
    b: str,
    plan_b: Workflow,
    reports_b: list[AgentReport],
    ledger_a: list[LedgerEntry] | None = None,
    ledger_b: list[LedgerEntry] | None = None,
    variables_a: Mapping[str, str] | None = None,
    variables_b: Mapping[str, str] | None = None,
) -> RunDiff:
    """What differs between run ``a`` and run ``b`` (their last plans, their reports, and the
    judgments their ledgers hold)."""
    dec_a, dec_b = decisions(ledger_a or []), decisions(ledger_b or [])
    by_a, by_b = {r.id: r for r in reports_a}, {r.id: r for r in reports_b}
    defs_a, defs_b = {x.id: x for x in plan_a.agents}, {x.id: x for x in plan_b.agents}
    shared = [r.id for r in reports_a if r.id in by_b]
    return RunDiff(
        a=a,
        b=b,
        agents=[
            agent_diff(
                i, by_a[i], by_b[i], defs_a.get(i), defs_b.get(i), dec_a.get(i), dec_b.get(i)
            )
            for i in shared
        ],
        only_a=[r.id for r in reports_a if r.id not in by_b],
        only_b=[r.id for r in reports_b if r.id not in by_a],
        run=variable_diff(
            {**plan_a.variables, **(variables_a or {})}, {**plan_b.variables, **(variables_b or {})}
        ),
    )
