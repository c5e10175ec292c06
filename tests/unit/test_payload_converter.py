"""xsky's payload converter (client/connect.PlainPayloadErrors): pydantic's, its encodings made
once per process and shared by every copy the SDK makes — the same payloads either way."""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from temporalio.contrib.pydantic import PydanticPayloadConverter
from temporalio.converter import _payload_converter
from temporalio.exceptions import ApplicationError

from client.connect import DATA_CONVERTER, LARGE_PAYLOAD, PlainPayloadErrors
from xsky.leader.state import AnswerRequest
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.runs import AgentOutcome, RunInput
from xsky.wire import WireModel


def test_copies_share_one_set_of_pydantics_encodings() -> None:
    ours, again, pydantics = PlainPayloadErrors(), PlainPayloadErrors(), PydanticPayloadConverter()
    assert list(ours.converters) == list(pydantics.converters)
    for encoding, converter in ours.converters.items():
        assert converter is again.converters[encoding]
        assert type(converter) is type(pydantics.converters[encoding])
    # what the SDK does with the data converter for each payload's storage context
    copy = dataclasses.replace(DATA_CONVERTER)
    assert copy.payload_converter is not DATA_CONVERTER.payload_converter


@pytest.mark.parametrize(
    "value",
    [
        AgentOutcome(kind="completed", result="ok", started_at=datetime(2026, 1, 2, tzinfo=UTC)),
        {"a": [1, 2.5, None, "é"]},
        "text",
        b"\x00bytes",
        None,
    ],
)
def test_the_payloads_are_pydantics(value: object) -> None:
    ours, pydantics = PlainPayloadErrors(), PydanticPayloadConverter()
    payloads = ours.to_payloads([value])
    assert payloads == pydantics.to_payloads([value])
    hint = [type(value)] if value is not None else None
    assert ours.from_payloads(payloads, hint) == pydantics.from_payloads(payloads, hint)


def test_a_request_that_does_not_fit_is_still_refused_in_one_sentence() -> None:
    bad = PydanticPayloadConverter().to_payloads([{"request_id": 3}])
    with pytest.raises(ApplicationError) as refused:
        PlainPayloadErrors().from_payloads(bad, [AnswerRequest])
    assert refused.value.type == "Rejected"
    assert refused.value.message.startswith("AnswerRequest: ")


def test_xskys_models_say_on_their_class_that_they_have_no_transfer_converter() -> None:
    # found on the class (no pydantic metaclass raising for a missing attribute per payload)
    assert _payload_converter._TRANSFER_TYPE_CONVERTER_ATTR in vars(WireModel)
    assert _payload_converter._TRANSFER_TYPE_CONVERTER_ATTR not in AgentOutcome.model_fields
    assert _payload_converter._get_transfer_type_converter(AgentOutcome) is None
    before = AgentOutcome(kind="completed", result="ok")
    assert AgentOutcome.model_validate_json(before.model_dump_json()) == before


def _collections_while(decode: Callable[[], object]) -> int:
    """How many times the cycle collector ran while ``decode`` ran."""
    runs = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            runs.append(info["generation"])

    gc.collect()
    gc.callbacks.append(seen)
    try:
        decode()
    finally:
        gc.callbacks.remove(seen)
    return len(runs)


def test_a_large_payload_is_decoded_with_the_collector_paused() -> None:
    """A 10,000-agent run's input (2 MB) is hundreds of thousands of objects: decoded with the
    collector on, it walks the growing heap again and again inside the run's first workflow
    task (which the SDK fails after 2 s). A small payload is decoded as before."""
    agents = [
        WorkflowAgent(id=str(i), name="llm", task=f"step {i}", depends=[str(i - 1)] if i else [])
        for i in range(10_000)
    ]
    run = RunInput(workflow=Workflow(name="big", task_id="t", agents=agents))
    converter = PlainPayloadErrors()
    [large] = converter.to_payloads([run])
    assert len(large.data) >= LARGE_PAYLOAD
    assert gc.isenabled()
    decoded: list[object] = []
    # once, as the collector resumes (it walks the new objects a single time) ...
    paused = _collections_while(
        lambda: decoded.extend(converter.from_payloads([large], [RunInput]))
    )
    assert paused <= 1
    assert decoded == [run]
    assert gc.isenabled()  # on again after
    # ... where the same decoding with the collector on (the SDK's converter) runs it ~70 times
    assert _collections_while(
        lambda: PydanticPayloadConverter().from_payloads([large], [RunInput])
    ) > 10 * max(paused, 1)


def test_a_large_payload_that_does_not_fit_leaves_the_collector_on() -> None:
    converter = PlainPayloadErrors()
    [large] = converter.to_payloads([{"workflow": {"name": "x" * LARGE_PAYLOAD}}])
    with pytest.raises(Exception):  # noqa: B017 - pydantic's error: the point is the collector
        converter.from_payloads([large], [RunInput])
    assert gc.isenabled()
