"""A run's results as stored: every agent's report (inline, or by reference for a large run)
and an agent's whole result text (by reference when it was large)."""

from __future__ import annotations

from activities.artifacts import open_store, read_blob, removed_by_gc
from xsky.config import Settings
from xsky.errors import XSkyError
from xsky.runs import AgentReport, RunResult


def reports_of(settings: Settings, result: RunResult) -> list[AgentReport]:
    """Every agent's report of a result: inline, or for a large run from the artifact store."""
    if result.results_ref is None:
        return result.agents
    try:
        text = read_blob(open_store(settings), result.results_ref)
    except (FileNotFoundError, ValueError) as e:
        gone = removed_by_gc(open_store(settings).objects, result.workflow_id)
        raise XSkyError(
            f"the full results of {result.workflow_id} are not readable: its stored objects "
            f"were {gone}"
            if gone
            else f"the full results of {result.workflow_id} are not readable here ({e}); "
            "read them with the workers' XSKY_STORE (or XSKY_ARTIFACTS)"
        ) from None
    return [AgentReport.model_validate_json(line) for line in text.splitlines() if line.strip()]


def result_text(settings: Settings, report: AgentReport) -> str:
    """An agent's whole result, read from the artifact store when it was stored by reference."""
    if report.result_ref is None:
        return report.result or ""
    try:
        return open_store(settings).read_text(report.result_ref)
    except (FileNotFoundError, ValueError) as e:
        return f"(not readable here: {e})"
