"""Failures a person caused are shown without the SDK's stack trace; others keep theirs."""

from __future__ import annotations

from temporalio.api.failure.v1 import Failure
from temporalio.exceptions import ApplicationError

from client.connect import DATA_CONVERTER, REFUSALS


def converted(error: Exception) -> Failure:
    try:  # raised, so that it has a traceback to show
        raise error
    except Exception as e:  # noqa: BLE001 - any error, converted as the worker would
        failure = Failure()
        DATA_CONVERTER.failure_converter.to_failure(e, DATA_CONVERTER.payload_converter, failure)
        return failure


def test_a_failed_run_and_a_refusal_carry_no_stack_trace():
    for kind in ("RunFailed", "RunCancelled", "Rejected", "PlanError"):
        failure = converted(ApplicationError("failed: 1 of 2 agents completed", type=kind))
        assert kind in REFUSALS
        assert failure.message == "failed: 1 of 2 agents completed"
        assert failure.stack_trace == "", kind


def test_a_bug_keeps_its_stack_trace():
    assert "test_plain_failures.py" in converted(ValueError("a bug")).stack_trace
    assert converted(ApplicationError("agent error", type="ToolError")).stack_trace
