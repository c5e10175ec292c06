"""The export canary's plan and its record: which side of a skill an exported folder shows when,
and which side was installed at a given moment.

Tools that only read a folder (Claude Code's ``~/.claude/skills``, Codex's ``~/.codex/skills``
or a project's ``.agents/skills``) cannot be assigned a side per run, as xsky's own agents
are (:func:`xsky.skills.canary.assign`). So the *folder* takes turns: time is cut into
windows of :data:`WINDOW` (6 h, aligned on the Unix epoch, so on UTC midnight), and in each
window the folder shows main or staging, drawn with probability :data:`P_STAGING_WINDOW`
from ``sha256("<skill>:<staging commit>:<window index>")``. The draw is sticky (the same
window always gives the same side, whoever runs the export and however often) and
reproducible; a new staging version draws a fresh sequence. A hash rather than plain
alternation: with 4 windows a day, alternation would show the same side at the same hours
every day, and the morning's tasks are not the evening's.

p = 0.5, not the 0.2 of per-run assignment: one person's sessions in a window all land on
one side, and the decision needs :data:`xsky.skills.canary.MIN_SCORES` sessions on *each*
side; at 0.5 that is about 2 × 20 sessions that used the skill, at 0.2 about 100.

The record (``switches.jsonl``) is the truth, the plan only what the exporter aims for:
every time an exported folder is switched, a line says when, to which side and commit, and
where. A session's use of the skill at time t is scored on the side of the last switch
before t (:func:`installed_at`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from xsky.wire import WireModel as Wire

WINDOW = timedelta(hours=6)
P_STAGING_WINDOW = 0.5

Side = Literal["main", "staging"]


def window_of(t: datetime) -> int:
    """The index of the window ``t`` falls in (windows start at the epoch, every :data:`WINDOW`)."""
    return int(t.astimezone(UTC).timestamp() // WINDOW.total_seconds())


def window_start(index: int) -> datetime:
    return datetime.fromtimestamp(index * WINDOW.total_seconds(), UTC)


def planned_side(skill: str, staging_commit: str, index: int, p: float = P_STAGING_WINDOW) -> Side:
    """The side a skill's exported folder shows in window ``index`` while ``staging_commit``
    is under canary."""
    digest = hashlib.sha256(f"{skill}:{staging_commit}:{index}".encode()).digest()
    return "staging" if int.from_bytes(digest[:8], "big") / 2**64 < p else "main"


def next_switch(skill: str, staging_commit: str, now: datetime, limit: int = 64) -> datetime | None:
    """When the planned side next changes after ``now`` (None if not within ``limit`` windows)."""
    here = window_of(now)
    side = planned_side(skill, staging_commit, here)
    for index in range(here + 1, here + 1 + limit):
        if planned_side(skill, staging_commit, index) != side:
            return window_start(index)
    return None


@dataclass(frozen=True)
class Switch:
    """One line of ``switches.jsonl``: the exported folder ``to`` shows ``side`` at ``commit``
    from ``at`` on."""

    at: str  # ISO 8601, UTC
    side: Side
    commit: str
    to: str  # the exported folder (the symlink or managed copy)
    how: Literal["symlink", "copy"] = "symlink"
    window: int | None = None  # the plan's window index; None when not under canary
    staging: str | None = None  # the staging commit under canary at the time, if any

    def line(self) -> str:
        return json.dumps(asdict(self), sort_keys=True) + "\n"

    @property
    def when(self) -> datetime:
        return parse_time(self.at)


def parse_switches(text: str) -> list[Switch]:
    """The log's lines in order; a torn or foreign line is skipped (the log is append-only)."""
    found = []
    for line in text.splitlines():
        try:
            data = json.loads(line)
            if data.get("side") not in ("main", "staging") or not data.get("commit"):
                continue
            at = str(data["at"])
            parse_time(at)
            window, staging = data.get("window"), data.get("staging")
            found.append(
                Switch(
                    at=at,
                    side=data["side"],
                    commit=str(data["commit"]),
                    to=str(data.get("to", "")),
                    how="copy" if data.get("how") == "copy" else "symlink",
                    window=window if isinstance(window, int) else None,
                    staging=staging if isinstance(staging, str) else None,
                )
            )
        except (ValueError, TypeError, AttributeError, KeyError):
            continue
    return found


def installed_at(switches: list[Switch], t: datetime) -> Switch | None:
    """The switch in force at ``t``: the latest one at or before it (None: before the first).

    Several exported folders (``~/.claude/skills`` and ``~/.codex/skills``) follow one plan,
    so the log is read as one sequence whatever ``to`` says; a session's ``Skill`` call does
    not say which folder it came from.
    """
    best: Switch | None = None
    for s in switches:
        if s.when <= t and (best is None or s.when >= best.when):
            best = s
    return best


def canary_started(switches: list[Switch], staging_commit: str) -> datetime | None:
    """When an exported folder first showed this staging version (None: never yet)."""
    times = [s.when for s in switches if s.side == "staging" and s.commit == staging_commit]
    return min(times) if times else None


def last_for(switches: list[Switch], to: str) -> Switch | None:
    """The latest record for one exported folder."""
    mine = [s for s in switches if s.to == to]
    return mine[-1] if mine else None


def parse_time(value: str) -> datetime:
    """An ISO time as written by Claude Code / Codex (``…Z``) or by us; naive means UTC."""
    t = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    return t if t.tzinfo else t.replace(tzinfo=UTC)


class CanaryExported(Wire):
    """To a skill's entity: an exported folder first showed ``staging_commit`` at ``at``, so
    the canary's age counts from then (never earlier than the staging commit)."""

    staging_commit: str
    at: str  # ISO 8601, UTC
