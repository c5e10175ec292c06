"""The search attributes a run keeps up to date, so ``temporal workflow list --query`` and
the Web UI's filters find runs by what they are doing, e.g. ``XskyPending > 0``: runs
waiting on a person. ``starter.py server``/``up`` register them; a leader on a server
without them sets none (it asks first, in an activity)."""

from __future__ import annotations

from typing import Literal

# What XskyStatus says: the first five while a run is open, the last three once it ended.
XSKY_STATUSES = (
    "running",
    "reviewing",
    "paused",
    "waiting",
    "replanning",
    "completed",
    "failed",
    "cancelled",
)

# name → Temporal's type, as ``temporal server start-dev --search-attribute NAME=TYPE`` takes it
SEARCH_ATTRIBUTES: dict[str, Literal["Keyword", "Int"]] = {
    "XskyStatus": "Keyword",  # running | reviewing | paused | waiting | replanning | completed | failed | cancelled
    "XskyPlan": "Keyword",  # the plan's name
    "XskyFailed": "Int",  # agents failed so far
    "XskyPending": "Int",  # questions, approvals, escalations and plan reviews waiting for a person
    "XskyResumes": "Keyword",  # the ended run a follow-up run resumes (Run.retry after the end)
}


def dev_server_flags() -> list[str]:
    return [
        arg
        for name, kind in SEARCH_ATTRIBUTES.items()
        for arg in ("--search-attribute", f"{name}={kind}")
    ]
