"""Listing runs: the visibility query for xsky's search attributes."""

from __future__ import annotations

from xsky.lineage import descendants_clause, quoted


def list_query(
    query: str | None = None,
    *,
    status: str | None = None,
    waiting: bool = False,
    failed: bool = False,
    plan: str | None = None,
    descendants: str | None = None,
) -> str:
    """The Temporal visibility query for runs with these xsky search attributes (and ``query``)."""
    clauses = ["WorkflowType='LeaderWorkflow'"]
    if status:
        clauses.append(f"XskyStatus='{status}'")
    if waiting:
        clauses.append("XskyPending > 0")
    if failed:
        clauses.append("XskyFailed > 0")
    if plan:
        clauses.append("XskyPlan=" + quoted(plan))
    if descendants:
        clauses.append(descendants_clause(descendants))
    if query:
        clauses.append(f"({query})")
    return " AND ".join(clauses)
