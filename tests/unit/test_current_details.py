"""workflows/details.py with the installed SDK: the hook it uses is there, and without it the
details are drawn and set at once (as the SDK's own API does)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from temporalio.worker._workflow_instance import _WorkflowInstanceImpl
from temporalio.workflow import _Runtime

from workflows import details


def test_the_installed_sdk_reads_current_details_through_the_hooked_method() -> None:
    # If this fails, a new SDK reads a run's current details another way: every board is drawn
    # after every workflow task again (correct, slower); look at workflows/details.py.
    assert details.supported(_WorkflowInstanceImpl.__new__(_WorkflowInstanceImpl))
    assert (
        "workflow_get_current_details"
        in _WorkflowInstanceImpl._temporal_workflow_metadata.__code__.co_names
    )


class _Older:
    """A runtime that has no getter to hook: details are only set."""

    def __init__(self) -> None:
        self.set: list[str] = []

    def workflow_set_current_details(self, text: str) -> None:
        self.set.append(text)


class _Hooked(_Older):
    def workflow_get_current_details(self) -> str:
        return self.set[-1] if self.set else ""


@pytest.mark.parametrize("runtime_class", [_Older, _Hooked])
def test_details_are_drawn_when_read_or_at_once_without_the_hook(
    runtime_class: type[_Older], monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime: Any = runtime_class()
    monkeypatch.setattr(_Runtime, "current", staticmethod(lambda: runtime))
    history = [5]  # the run's history length, as workflow.info() would give it
    monkeypatch.setattr(
        details.workflow,
        "info",
        lambda: SimpleNamespace(get_current_history_length=lambda: history[0]),
    )
    drawn: list[int] = []
    version = [0]

    def draw() -> str:
        drawn.append(1)
        return f"board {len(drawn)}"

    on_demand = details.draw_details(draw, lambda: version[0])
    if runtime_class is _Older:
        # drawn at once, and set; the caller draws again when the state changes
        assert not on_demand and runtime.set == ["board 1"] and len(drawn) == 1
        return
    assert on_demand and runtime.set == [] and drawn == []  # nothing drawn until read
    assert runtime.workflow_get_current_details() == "board 1"
    assert runtime.workflow_get_current_details() == "board 1"  # nothing happened since
    history[0] = 9  # a workflow task: the state may have changed
    assert runtime.workflow_get_current_details() == "board 2"
    version[0] = 1  # a change the history's length does not show (a rejected update's task)
    assert runtime.workflow_get_current_details() == "board 3"
    assert runtime.workflow_get_current_details() == "board 3"


def test_a_drawer_that_fails_says_so_in_the_pane(monkeypatch: pytest.MonkeyPatch) -> None:
    # In the metadata query an error would fail it whole (the Web UI's lists of queries,
    # signals and updates too): the pane says what went wrong instead.
    runtime: Any = _Hooked()
    monkeypatch.setattr(_Runtime, "current", staticmethod(lambda: runtime))
    monkeypatch.setattr(
        details.workflow,
        "info",
        lambda: SimpleNamespace(get_current_history_length=lambda: 3),
    )

    warned: list[str] = []
    monkeypatch.setattr(
        details.workflow, "logger", SimpleNamespace(warning=lambda m, *a: warned.append(m % a))
    )

    def broken() -> str:
        raise KeyError("T-9")

    assert details.draw_details(broken)
    assert runtime.workflow_get_current_details() == "(the board could not be drawn: 'T-9')"
    assert warned == ["the run's details could not be drawn: 'T-9'"]  # and in the worker's log
