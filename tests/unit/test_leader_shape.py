"""The leader stays a router over components, not a tower of floors.

LeaderCore once was a 14-class inheritance chain (each feature a floor over the last, hooks left
empty below for a floor above to fill); now each part of the leader is a component with its own
state, called from one method per event. These checks fail when that shape starts to go back:
a class of the leader's core that inherits behaviour from more than one of the project's own
classes above it, or a router that grows past the size of a router."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from enum import Enum
from pathlib import Path

import pydantic
import pytest

import xsky.leader
from tests.conftest import ROOT

# Lines the router (xsky/leader/core.py) may hold: its components' wiring and one method per
# event. Past it, an event's work has moved into the router instead of a component.
ROUTER_LINES = 800


def leader_classes() -> list[type]:
    """Every class defined in the leader's core (xsky/leader and its packages)."""
    found: list[type] = []
    for info in pkgutil.walk_packages(xsky.leader.__path__, "xsky.leader."):
        module = importlib.import_module(info.name)
        found += [
            c
            for _, c in inspect.getmembers(module, inspect.isclass)
            if c.__module__ == module.__name__
        ]
    return found


def own_bases(cls: type) -> list[type]:
    """The project's own classes above ``cls`` (pydantic's models, enums, exceptions and
    protocols are data and contracts, not behaviour)."""
    return [
        base
        for base in cls.__mro__[1:]
        if base.__module__.split(".")[0] in ("xsky", "workflows", "activities")
        and not issubclass(base, (pydantic.BaseModel, Enum, BaseException))
    ]


@pytest.mark.parametrize("cls", leader_classes(), ids=lambda c: f"{c.__module__}.{c.__name__}")
def test_a_class_of_the_leader_inherits_from_at_most_one_of_its_own(cls: type) -> None:
    bases = own_bases(cls)
    assert len(bases) <= 1, (
        f"{cls.__module__}.{cls.__name__} inherits from {len(bases)} of the project's classes "
        f"({', '.join(b.__name__ for b in bases)}): make the new behaviour a component the "
        "router calls (xsky/leader/core.py), not a floor over another"
    )


def test_the_rule_sees_a_tower() -> None:
    class Floor1:
        pass

    class Floor2(Floor1):
        pass

    Floor1.__module__ = Floor2.__module__ = "xsky.leader.example"

    class Floor3(Floor2):
        pass

    assert [b.__name__ for b in own_bases(Floor3)] == ["Floor2", "Floor1"]


def test_the_core_is_a_router() -> None:
    lines = len((ROOT / "xsky" / "leader" / "core.py").read_text().splitlines())
    assert lines <= ROUTER_LINES, (
        f"xsky/leader/core.py has {lines} lines, more than a router's {ROUTER_LINES}: move what an "
        "event does into the component it belongs to, and leave the router the order of the calls"
    )


def test_each_component_owns_a_part_of_the_state() -> None:
    """The leader's state is one model of its components' parts, none of them a slice of
    another: every field of LeaderState is a model of its own."""
    from xsky.leader.state import LeaderState

    for name, field in LeaderState.model_fields.items():
        kind = field.annotation
        assert isinstance(kind, type) and issubclass(kind, pydantic.BaseModel), name
    assert Path(ROOT / "xsky" / "leader" / "coordinator").is_dir()


def test_a_wire_model_sits_at_most_one_level_under_another_of_ours() -> None:
    """Messages share fields by declaring them, not by floors: a request was once four classes
    deep (RetryTaskRequest → TaskRequest → PersonRequest → WireModel), so that what one floor
    checked changed every request under it unseen."""
    import worker  # noqa: F401  (imports every model a worker serves)
    from xsky.wire import WireModel, wire_models

    deep = {
        m.__name__: [
            b.__name__ for b in m.__mro__[1:] if issubclass(b, WireModel) and b is not WireModel
        ]
        for m in wire_models()
    }
    assert {name: above for name, above in deep.items() if len(above) > 1} == {}
