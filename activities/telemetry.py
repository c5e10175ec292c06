"""The worker's telemetry: Prometheus metrics, OpenTelemetry traces, JSON logs.

Metrics are the Temporal SDK's own: one :class:`temporalio.runtime.Runtime` serves its
runtime metrics and xsky's (recorded through ``activity.metric_meter()`` and
``workflow.metric_meter()``, see activities/metrics.py and workflows/leader/metrics.py)
on one ``/metrics`` endpoint.

Traces go through the SDK's :class:`TracingInterceptor` to an OTLP/HTTP exporter, one
trace per run. A run started by a client without tracing (the CLI, the Web UI, a
schedule) has no trace context to inherit, so its workflow derives one from its own
identity (:func:`run_trace_ids`): deterministic, so every worker that replays or
continues the run puts its spans in the same trace, under a ``RunWorkflow`` root span.
"""

from __future__ import annotations

import contextvars
import dataclasses
import hashlib
import json
import logging
import weakref
from datetime import UTC, datetime, timedelta
from typing import Any

import opentelemetry.trace
from temporalio import activity, workflow
from temporalio.contrib.opentelemetry import TracingInterceptor, TracingWorkflowInboundInterceptor
from temporalio.runtime import (
    LogForwardingConfig,
    LoggingConfig,
    PrometheusConfig,
    Runtime,
    TelemetryConfig,
    TelemetryFilter,
)
from temporalio.worker import ExecuteWorkflowInput, WorkflowInterceptorClassInput

# Model calls take seconds to minutes: the SDK's default buckets stop at 10 s.
LLM_LATENCY_BUCKETS_MS = [100, 250, 500, 1000, 2500, 5000, 10_000, 30_000, 60_000, 120_000, 300_000]
# Set on a run's RunWorkflow span when it is the root of the run's trace (not exported).
_ROOT_MARK = "xsky.runRoot"
TRACING_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


class TelemetryError(Exception):
    """Telemetry cannot start as asked; the message says what to change."""


def metrics_address(value: str) -> str:
    """``--metrics-port`` as a bind address: ``N`` (every interface) or ``HOST:N``."""
    host, _, port = value.rpartition(":")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise TelemetryError(
            f"--metrics-port must be a port number (1-65535) or HOST:PORT, not {value!r}"
        )
    return f"{host or '0.0.0.0'}:{int(port)}"


# Seconds between a worker's heartbeats to the server (the SDK's default is a minute; None: none).
WORKER_HEARTBEAT: float | None = 3.0
# The runtimes made here that send worker heartbeats (``beats``).
_BEATING: weakref.WeakSet[Runtime] = weakref.WeakSet()


def beats(runtime: Runtime) -> bool:
    """Do workers on ``runtime`` send the server worker heartbeats (one made by ``runtime``)?"""
    return runtime in _BEATING


def runtime(metrics_bind: str | None, core_logs: logging.Logger | None) -> Runtime:
    """The SDK runtime: Prometheus on ``metrics_bind`` (if given); Core's own log lines sent
    to ``core_logs`` (if given, so they come out in the worker's log format)."""
    logging_config = LoggingConfig.default
    if core_logs is not None:
        logging_config = LoggingConfig(
            filter=TelemetryFilter(core_level="WARN", other_level="ERROR"),
            forwarding=LogForwardingConfig(logger=core_logs),
        )
    metrics = None
    if metrics_bind is not None:
        metrics = PrometheusConfig(
            bind_address=metrics_bind,
            histogram_bucket_overrides={"xsky_llm_latency": LLM_LATENCY_BUCKETS_MS},
        )
    every = None if WORKER_HEARTBEAT is None else timedelta(seconds=WORKER_HEARTBEAT)
    try:
        made = Runtime(
            telemetry=TelemetryConfig(logging=logging_config, metrics=metrics),
            # The server lists each worker with its last heartbeat: a worker that stopped
            # answering is told from one that is busy (client/workers.py).
            worker_heartbeat_interval=every,
        )
    except ValueError as e:
        if metrics_bind is None or "prometheus" not in str(e).lower():
            # an option of the runtime's own (a heartbeat interval out of range): not the
            # metrics' address, which it was said to be even with no metrics asked (chaos14)
            raise TelemetryError(f"cannot start Temporal's runtime: {e}") from None
        reason = (
            "the address is in use (another worker or exporter has it)"
            if "in use" in str(e).lower()
            else str(e)
        )
        raise TelemetryError(
            f"cannot serve metrics on {metrics_bind}: {reason}; choose another --metrics-port"
        ) from None
    if every is not None:
        _BEATING.add(made)
    return made


# -- traces -------------------------------------------------------------------------------------


def run_trace_ids(workflow_id: str, first_execution_run_id: str) -> tuple[int, int]:
    """The trace id and root span id of a run started without a trace context."""
    digest = hashlib.sha256(
        f"xsky-run\x00{workflow_id}\x00{first_execution_run_id}".encode()
    ).digest()
    return int.from_bytes(digest[:16], "big") or 1, int.from_bytes(digest[16:24], "big") or 1


_forced_ids: contextvars.ContextVar[tuple[int, int] | None] = contextvars.ContextVar(
    "xsky_forced_ids", default=None
)


class _RunWorkflowTracing(TracingWorkflowInboundInterceptor):
    """Workflow side: without a trace context from the starter, the run's own one."""

    _derived = False

    def _load_workflow_context_carrier(self) -> dict[str, Any] | None:
        carrier = super()._load_workflow_context_carrier()
        if carrier:
            return carrier
        info = workflow.info()
        trace_id, span_id = run_trace_ids(info.workflow_id, info.first_execution_run_id)
        self._derived = True
        self._workflow_context_carrier = {"traceparent": f"00-{trace_id:032x}-{span_id:016x}-01"}
        return self._workflow_context_carrier

    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        # As the SDK's, but a derived context's RunWorkflow span is the trace's root.
        with self._top_level_workflow_context(success_is_complete=True):
            self._completed_span(
                f"RunWorkflow:{workflow.info().workflow_type}",
                kind=opentelemetry.trace.SpanKind.SERVER,
                additional_attributes={_ROOT_MARK: True} if self._derived else None,
            )
            return await self.next.execute_workflow(input)


class RunTracingInterceptor(TracingInterceptor):
    """The SDK's tracing interceptor, with one trace per run however the run was started."""

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[TracingWorkflowInboundInterceptor]:
        super().workflow_interceptor_class(input)
        return _RunWorkflowTracing

    def _completed_workflow_span(self, params: Any) -> Any:
        if not (params.attributes or {}).get(_ROOT_MARK):
            return super()._completed_workflow_span(params)
        # The root: a span with exactly the derived ids, parent of every other span of the run.
        derived = opentelemetry.trace.get_current_span(
            self.text_map_propagator.extract(params.context)
        ).get_span_context()
        attributes = {k: v for k, v in params.attributes.items() if k != _ROOT_MARK}
        token = _forced_ids.set((derived.trace_id, derived.span_id))
        try:
            return super()._completed_workflow_span(
                dataclasses.replace(params, context={}, attributes=attributes)
            )
        finally:
            _forced_ids.reset(token)


@dataclasses.dataclass
class Tracing:
    interceptor: RunTracingInterceptor
    provider: Any  # opentelemetry.sdk.trace.TracerProvider

    def shutdown(self) -> None:
        """Send the spans still buffered (the worker exits without atexit hooks)."""
        self.provider.shutdown()


def otlp_headers(raw: str | None) -> dict[str, str] | None:
    """``OTEL_EXPORTER_OTLP_HEADERS`` (``k=v,k2=v2``, values URL-encoded) as a dict."""
    from urllib.parse import unquote

    if not raw:
        return None
    pairs = (item.split("=", 1) for item in raw.split(",") if "=" in item)
    return {unquote(k).strip(): unquote(v).strip() for k, v in pairs}


def start_tracing(service_name: str, headers: dict[str, str] | None = None) -> Tracing:
    """A tracer provider exporting over OTLP/HTTP; the exporter reads the standard
    ``OTEL_EXPORTER_OTLP_*`` variables (endpoint, timeout) itself. The headers come from the
    worker's secret store: they left the environment, where agents could read them."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

    class RunRootIds(RandomIdGenerator):
        """Random ids, except for a run's root span: the ids its workflow derived."""

        def generate_trace_id(self) -> int:
            forced = _forced_ids.get()
            return forced[0] if forced else super().generate_trace_id()

        def generate_span_id(self) -> int:
            forced = _forced_ids.get()
            return forced[1] if forced else super().generate_span_id()

    provider = TracerProvider(
        resource=Resource.create({"service.name": service_name}), id_generator=RunRootIds()
    )
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(headers=headers)))
    opentelemetry.trace.set_tracer_provider(provider)
    # always_create_workflow_spans stays off: a workflow always has a context (its own if need
    # be), and a query that brings none (the Web UI's, the CLI's) makes no span.
    return Tracing(RunTracingInterceptor(provider.get_tracer("xsky")), provider)


# -- logs ---------------------------------------------------------------------------------------


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, and the workflow or activity
    the line was logged in (from the SDK's logger adapters, or the running activity)."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key in ("temporal_workflow", "temporal_activity"):
            if isinstance(getattr(record, key, None), dict):
                entry[key.removeprefix("temporal_")] = getattr(record, key)
        if "activity" not in entry and activity.in_activity():
            info = activity.info()
            entry["activity"] = {
                "activity_id": info.activity_id,
                "activity_type": info.activity_type,
                "attempt": info.attempt,
                "workflow_id": info.workflow_id,
                "task_queue": info.task_queue,
            }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def use_json_logs(level: str) -> None:
    """Every log line as JSON; the SDK's adapters put their context in fields, not the message."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    logging.basicConfig(level=level, handlers=[handler], force=True)
    workflow.logger.workflow_info_on_message = False
    activity.logger.activity_info_on_message = False
