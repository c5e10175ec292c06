"""Connecting to Temporal: the runtime, the client with xsky's data converter, and what to say
when the server cannot be reached."""

from __future__ import annotations

import dataclasses

from temporalio.api.failure.v1 import Failure
from temporalio.client import (
    Client,
)
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter, DefaultFailureConverter, PayloadConverter
from temporalio.exceptions import ApplicationError
from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter

from xsky.config import Settings
from xsky.errors import (
    ConnectError,
)

# -- the data converter ----------------------------------------------------------------------

# Refusals people read (an update's validator said no): the Web UI shows a failure's stack
# trace under its message, and a refusal is one sentence for a person, not a Python error.
REFUSALS = frozenset({"Rejected", "Busy", "Loading"})


class PlainRefusals(DefaultFailureConverter):
    """Temporal's failure converter, but refusals carry no stack trace."""

    def to_failure(
        self, exception: BaseException, payload_converter: PayloadConverter, failure: Failure
    ) -> None:
        super().to_failure(exception, payload_converter, failure)
        if isinstance(exception, ApplicationError) and exception.type in REFUSALS:
            failure.stack_trace = ""


DATA_CONVERTER: DataConverter = dataclasses.replace(
    pydantic_data_converter, failure_converter_class=PlainRefusals
)
"""pydantic payloads (xsky's models), refusals without a traceback: clients and workers."""


# -- connecting ------------------------------------------------------------------------------

_quiet_runtime: Runtime | None = None


def quiet_runtime() -> Runtime:
    """A Temporal runtime whose core logs only errors: while a server restarts the SDK retries
    on its own, and its retry warnings are not for the person watching a run."""
    global _quiet_runtime
    if _quiet_runtime is None:
        _quiet_runtime = Runtime(
            telemetry=TelemetryConfig(
                logging=LoggingConfig(
                    filter=TelemetryFilter(core_level="ERROR", other_level="ERROR")
                )
            )
        )
    return _quiet_runtime


async def connect_client(settings: Settings, runtime: Runtime | None = None) -> Client:
    """A Temporal client with xsky's data converter, or a ConnectError that says how to start a server."""
    try:
        return await Client.connect(
            **settings.connect_kwargs(),
            data_converter=DATA_CONVERTER,
            runtime=runtime or quiet_runtime(),
        )
    except Exception as e:  # noqa: BLE001 - the SDK raises RuntimeError for any connect failure
        raise ConnectError(
            f"cannot reach Temporal at {settings.address} (namespace {settings.namespace}): {connect_problem(e)}",
            "start a server there (`temporal server start-dev`), or point TEMPORAL_ADDRESS or a profile at one",
            topic="connect",
        ) from None


def connect_problem(error: BaseException) -> str:
    """The SDK's connect error (a Rust transport error's debug text) in a few words."""
    text = str(error)
    for needle, said in (
        ("Connection refused", "connection refused (is the server running?)"),
        ("dns error", "the host name does not resolve"),
        ("failed to lookup", "the host name does not resolve"),
        ("timed out", "timed out"),
        ("Timeout", "timed out"),
        ("certificate", "TLS certificate problem"),
        (
            "Unauthenticated",
            "not authenticated (check TEMPORAL_API_KEY or the profile's TLS settings)",
        ),
        ("PermissionDenied", "permission denied for this namespace"),
    ):
        if needle in text:
            return said
    first = text.splitlines()[0] if text else type(error).__name__
    return first if len(first) <= 160 else first[:159] + "…"
