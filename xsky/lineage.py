"""A run's lineage: every run it descends from through follow-up runs (``retry`` after the
end) and forks, kept in the search attribute ``XskyLineage`` (a KeywordList) that the client
sets when it starts the run — so ``XskyLineage = 'ID'`` finds every descendant of ID, the
grandchildren too, where ``XskyResumes`` (set by the leader) names only the direct parent.

It is registered beside the leader's own attributes (``starter.py server``/``up``,
docker-compose.yml) but is not one of them: the leader never sets or changes it."""

from __future__ import annotations

import json

NAME = "XskyLineage"
TYPE = "KeywordList"  # as ``temporal operator search-attribute create --type`` takes it
# Temporal refuses a search attribute value over 2 KiB (SearchAttributesSizeOfValueLimit):
# the list is kept under that with room to spare.
MAX_BYTES = 1800


def lineage_of(parent: str, parent_lineage: list[str]) -> list[str]:
    """The lineage of a run started from ``parent``: the parent's own, then the parent. A
    chain too long for one value keeps its first run (every descendant of the first run stays
    findable) and as many of the nearest as fit."""
    chain = [r for r in parent_lineage if r != parent] + [parent]
    chain = list(dict.fromkeys(chain))
    while len(chain) > 2 and len(json.dumps(chain)) > MAX_BYTES:
        del chain[1]  # the oldest but the first
    return chain


def quoted(value: str) -> str:
    """A string literal of Temporal's list-filter language."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def descendants_clause(run_id: str) -> str:
    """The list filter for every run descended from ``run_id`` (runs started before lineage
    was kept are found by the parent ``XskyResumes`` names)."""
    return f"({NAME} = {quoted(run_id)} OR XskyResumes = {quoted(run_id)})"


def register_flags() -> list[str]:
    """``temporal server start-dev`` flags that register it."""
    return ["--search-attribute", f"{NAME}={TYPE}"]
