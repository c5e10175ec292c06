"""Connecting to Temporal: the runtime, the client with xsky's data converter, and what to say
when the server cannot be reached."""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Sequence
from typing import Any, cast, get_args

from pydantic import BaseModel, ValidationError
from temporalio.api.common.v1 import Payload
from temporalio.api.failure.v1 import Failure
from temporalio.client import (
    Client,
)
from temporalio.contrib.pydantic import PydanticPayloadConverter, pydantic_data_converter
from temporalio.converter import (
    CompositePayloadConverter,
    DataConverter,
    DefaultFailureConverter,
    EncodingPayloadConverter,
    PayloadConverter,
    _payload_converter,
)
from temporalio.exceptions import ApplicationError
from temporalio.runtime import LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter

from activities.storage.payloads import external_storage
from xsky.config import Settings
from xsky.errors import (
    ConnectError,
)
from xsky.gcpause import gc_paused
from xsky.wire import WireModel
from xsky.wire_errors import one_sentence

log = logging.getLogger("xsky.refusals")

# -- the data converter ----------------------------------------------------------------------

# The product's own errors a person reads: the Web UI shows a failure's stack trace under its
# message, and these are sentences for a person, not Python errors — refusals (an update's
# validator said no, the run is busy or loading), a plan that cannot be made or does not fit,
# a spent budget, and how a run ended (its result rides a RunFailed or RunCancelled failure).
# Any other failure (a bug, an agent's error) keeps its trace: someone will need it.
REFUSALS = frozenset(
    {
        "Rejected",
        "Busy",
        "Loading",
        "StateRefused",
        "PlanError",
        "BudgetSpent",
        "RunFailed",
        "RunCancelled",
    }
)


class PlainRefusals(DefaultFailureConverter):
    """Temporal's failure converter, but the product's user-facing errors carry no stack
    trace (clients, workers and replayers all use it: client/connect.DATA_CONVERTER)."""

    def to_failure(
        self, exception: BaseException, payload_converter: PayloadConverter, failure: Failure
    ) -> None:
        super().to_failure(exception, payload_converter, failure)
        if isinstance(exception, ApplicationError) and exception.type in REFUSALS:
            failure.stack_trace = ""


# What people type into an update or a query (the stock CLI, the Web UI): a payload that does
# not fit is refused with one sentence naming the field, not a pydantic dump or "Failed
# decoding arguments". Signals check their payloads themselves (workflows/leader/signals.py).
# (Named when a payload first fails to decode: the leader's models are a tenth of a second
# of start-up that `list` and `status` of an unknown id do not need.)
@functools.cache
def person_inputs() -> frozenset[type[BaseModel]]:
    """The request models a person types (the updates' and queries' arguments)."""
    from xsky.leader.state import (
        AnswerRequest,
        ApprovePlanRequest,
        ApproveToolRequest,
        DefineRoleRequest,
        EndRunRequest,
        NudgeRequest,
        PageRequest,
        PauseRequest,
        ReplanRequest,
        ResumeRequest,
        RetryTaskRequest,
        SkipTaskRequest,
        TaskRequest,
    )

    return frozenset(
        {
            ReplanRequest,
            ApprovePlanRequest,
            TaskRequest,
            RetryTaskRequest,
            SkipTaskRequest,
            AnswerRequest,
            ApproveToolRequest,
            DefineRoleRequest,
            EndRunRequest,
            PauseRequest,
            ResumeRequest,
            NudgeRequest,
            PageRequest,
        }
    )


def _person_input(hint: Any) -> type[BaseModel] | None:
    """The request model ``hint`` names (alone or as ``X | None``), if it is a person's input."""
    inputs = person_inputs()
    for candidate in (hint, *get_args(hint)):
        if candidate in inputs:
            return cast(type[BaseModel], candidate)
    return None


@functools.cache
def _encoding_converters() -> tuple[EncodingPayloadConverter, ...]:
    """The encodings of pydantic's payload converter, made once per process."""
    return tuple(PydanticPayloadConverter().converters.values())


# Payloads at least this large are decoded with the cycle collector paused (xsky/gcpause.py).
LARGE_PAYLOAD = 256 * 1024


class PlainPayloadErrors(PydanticPayloadConverter):
    """pydantic's payload converter; a person's request that does not fit its model is an
    ApplicationError ("Rejected") of one sentence: the SDK hands such an error to the update's
    or query's caller as it is (any other decoding error it wraps as "Failed decoding arguments").

    Its encodings are shared: a ``DataConverter`` makes its payload converter anew for every
    copy of itself, and the SDK copies it for every payload a workflow task carries (with the
    payload's storage context) and every activity it runs — pydantic's converter made its JSON
    encoding, a schema serializer and a cache of type adapters each time, where one of each
    serves every copy (they hold no per-payload state; the type adapters' cache is shared)."""

    def __init__(self) -> None:
        CompositePayloadConverter.__init__(self, *_encoding_converters())

    def from_payloads(
        self, payloads: Sequence[Payload], type_hints: list[type] | None = None
    ) -> list[Any]:
        try:
            if sum(len(p.data) for p in payloads) < LARGE_PAYLOAD:
                return super().from_payloads(payloads, type_hints)
            # A large plan's models (a run's input of 30,000 agents: 4 MB) are hundreds of
            # thousands of objects; made with the collector on, it walks the growing heap again
            # and again — 430 ms against 130–200 ms paused. In a workflow task that counts
            # against the SDK's 2 s deadlock detector (a 30,000-agent run's first task failed it).
            with gc_paused():
                return super().from_payloads(payloads, type_hints)
        except ValidationError as e:
            for hint in type_hints or []:
                model = _person_input(hint)
                if model is not None:
                    said = f"{model.__name__}: {one_sentence(model, e)}"
                    log.warning("refused a request that does not fit: %s", said)
                    raise ApplicationError(said, type="Rejected", non_retryable=True) from None
            raise


# The SDK looks up a converter of its own on the class of every value it converts; a pydantic
# model's class answers a missing attribute by raising (its metaclass's __getattr__), which
# inside a workflow's sandbox cost ~65 µs a payload (py-spy: 12 % of the leader's thread on a
# 200-agent fan-out). xsky's models say on their class that they have none.
_CONVERTER_ATTR: str | None = getattr(_payload_converter, "_TRANSFER_TYPE_CONVERTER_ATTR", None)
if _CONVERTER_ATTR:
    setattr(WireModel, _CONVERTER_ATTR, None)


DATA_CONVERTER: DataConverter = dataclasses.replace(
    pydantic_data_converter,
    payload_converter_class=PlainPayloadErrors,
    failure_converter_class=PlainRefusals,
    external_storage=external_storage(),
)
"""pydantic payloads (xsky's models), a person's bad request said in one sentence, refusals
without a traceback, payloads over 256 KiB in the store (Temporal's External Storage,
activities/storage/payloads.py): clients, workers and replayers."""


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
        problem = connect_problem(e)
        if problem == "timed out":
            # (chaos11: a frozen server made every command wait, then say to start one — and
            # `starter.py up` said it was up)
            raise ConnectError(
                f"cannot reach Temporal at {settings.address} (namespace {settings.namespace}): "
                "nothing answered in time",
                "a server there may be frozen, overloaded or still starting (see its log), or "
                "a firewall drops the connection; try again in a moment",
                topic="connect-timeout",
            ) from None
        raise ConnectError(
            f"cannot reach Temporal at {settings.address} (namespace {settings.namespace}): {problem}",
            # (worded for the library's callers: the CLI words its own, cli/hints.py; a stock
            # `temporal server start-dev` lacks xsky's search attributes, so it is not named)
            "start a Temporal server there with xsky's search attributes (docs/deployment.md), "
            "or point TEMPORAL_ADDRESS or a profile at one",
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
