"""The wire: how every model of xsky travels, as JSON through Temporal and as text in plans.

Every model derives from :class:`WireModel`: camelCase on the wire (the seed's style, which
the stock ``temporal`` CLI and the Web UI show), snake_case in Python. Text a model holds may
be written into a plan's XML, so it holds only what XML 1.0 can carry (:data:`XmlText`).
Below every package of the pure core: the plan, roles and the skill pipeline's models all
stand on it.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, StringConstraints
from pydantic.alias_generators import to_camel

# Characters XML 1.0 cannot carry at all, even escaped.
XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
# The same, as a character class checked in pydantic-core (Rust regex, no surrogates): plans
# can hold 10,000 agents.
XML_ILLEGAL_CLASS = "\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\ufffe\\uffff"
XmlText = Annotated[str, StringConstraints(pattern=f"^[^{XML_ILLEGAL_CLASS}]*$")]


def scrub_xml_illegal(text: str) -> str:
    """Replace characters XML cannot carry (e.g. a NUL in shell output) with U+FFFD."""
    return XML_ILLEGAL.sub("\ufffd", text)


class WireModel(BaseModel):
    """Base of every model: camelCase on the wire, checked fields and assignments.

    Unknown fields are ignored, not refused: these models travel through Temporal history,
    and a history recorded by an older version (with a field since removed) must still
    decode on replay. Strictness about unknown names lives where people type them: the
    XML reader and settings files refuse unknown elements, attributes and keys.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        validate_assignment=True,
        serialize_by_alias=True,  # camelCase on the wire, also through Temporal's converter
        # Each model's validator and serializer are built when it is first used, not as its
        # module is imported: a command (`validate`, `status`) uses a few of the ~140 models
        # it imports. A worker builds them all before it serves (:func:`build_models`), so
        # no workflow task builds one.
        defer_build=True,
    )

    def wire(self) -> dict[str, Any]:
        """The JSON shape with the seed's camelCase names."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


def wire_models() -> list[type[WireModel]]:
    """Every model imported so far: the subclasses of :class:`WireModel`, at any depth."""
    found: list[type[WireModel]] = []
    todo = list(WireModel.__subclasses__())
    while todo:
        model = todo.pop()
        if model not in found:
            found.append(model)
            todo.extend(model.__subclasses__())
    return found


def build_models() -> int:
    """Build the validator and serializer of every model imported so far whose building was
    deferred (a worker, before it serves: a first run's workflow task would build those it
    uses, 120–165 ms for all of them); how many were built. A model that cannot be built
    raises here, as the worker starts, not in the workflow task that first uses it."""
    built = 0
    for model in wire_models():
        if not model.__pydantic_complete__:
            model.model_rebuild()  # (its nested models' validators are reused once built)
            built += 1
    return built
