"""A workflow's current details — the Web UI's pane — drawn when someone asks for them.

The SDK keeps a run's current details as a string that workflow code sets
(``workflow.set_current_details``), and reads it only to answer the metadata query the Web UI
and the CLI send (``__temporal_workflow_metadata``); it is in no command and no history. The
leader set its board there after every workflow task: py-spy of 200-agent fan-outs put drawing
it at a third of the leader's workflow-side CPU, for a pane nobody may be looking at.
:func:`draw_details` gives the run a drawer instead, which the query calls: the board is drawn
when it is looked at, from the state the run holds then (a query reads, it changes nothing).

The SDK offers no hook for this: the run's own instance answers ``workflow_get_current_details``
with the drawer (an attribute of that one instance, in front of its class's method). Where a
release no longer has that method, the text is drawn and set whenever the state changes, as
before (slower, the same pane), and tests/unit/test_current_details.py fails so that the change
is seen.
"""

from __future__ import annotations

from collections.abc import Callable

from temporalio import workflow
from temporalio.workflow import _Runtime

# The method of the SDK's workflow instance that the metadata query reads the details through.
_GETTER = "workflow_get_current_details"


def supported(runtime: object) -> bool:
    """Does this workflow instance read its current details through ``_GETTER``?"""
    return callable(getattr(type(runtime), _GETTER, None))


def draw_details(draw: Callable[[], str], version: Callable[[], object] = lambda: None) -> bool:
    """The run's current details are ``draw()``, drawn when they are read (in workflow code: a
    run's instance keeps the last drawer given); True. What was drawn is kept while the run's
    history and ``version()`` stay as they were: a run's state and ``workflow.now()`` change in
    workflow tasks, so the pages and CLIs that read the pane meanwhile (a query each, on the
    run's worker) cost one drawing — ``version`` names changes its history length misses (a
    rejected update's task; the results of local activities within one task).

    False where the SDK has no hook: the text was drawn and set now, and the caller draws it
    again when the state changes, as before."""
    runtime = _Runtime.current()
    if not supported(runtime):
        workflow.set_current_details(draw())
        return False
    kept: dict[str, object] = {}

    def drawn() -> str:
        at = (workflow.info().get_current_history_length(), version())
        if kept.get("at") != at:
            try:
                kept["text"] = draw()
            # In a query, an error would fail the Web UI's whole metadata query (its lists of
            # queries, signals and updates too): the pane says what went wrong instead.
            except Exception as e:  # noqa: BLE001
                workflow.logger.warning("the run's details could not be drawn: %s", e)
                kept["text"] = f"(the board could not be drawn: {e})"
            kept["at"] = at
        return str(kept["text"])

    setattr(runtime, _GETTER, drawn)
    return True
