"""xsky's metrics and spans recorded in activities: agent attempts, tool calls, model calls.

Metrics go through ``activity.metric_meter()``: the worker's Temporal runtime serves them
on its ``/metrics`` endpoint (``worker.py --metrics-port``) beside the SDK's own, with the
SDK's labels (namespace, task_queue, activity_type, workflow_type) and ours. Spans go to the
global tracer provider: when tracing is on (activities/telemetry.py) they are children of the
activity's ``RunActivity`` span, in the run's trace; otherwise they cost next to nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import opentelemetry.trace
from opentelemetry.trace import Span, Status, StatusCode
from temporalio import activity
from temporalio.common import MetricMeter
from temporalio.exceptions import ApplicationError
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from activities.tools import NeedsHuman
from xsky.kinds import queue_kind
from xsky.plan.agent_config import tool_name
from xsky.runs import AgentInput

_tracer = opentelemetry.trace.get_tracer("xsky")


def _meter() -> MetricMeter:
    # Outside an activity (a unit test, a script) there is nowhere to record.
    return activity.metric_meter() if activity.in_activity() else MetricMeter.noop


# -- agent attempts -----------------------------------------------------------------------------


class AgentAttempts(Interceptor):
    """Counts every ``run_agent`` attempt a worker runs, by agent kind and how it ended
    (xsky_agent_attempts); an agent that is one direct tool call gets that call's span."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _CountedAttempt(next)


class _CountedAttempt(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        if (
            activity.info().activity_type != "run_agent"
            or not input.args
            or not isinstance(input.args[0], AgentInput)
        ):
            return await self.next.execute_activity(input)
        agent = input.args[0].agent
        kind, tool = queue_kind(agent.name), tool_name(agent.config)
        counter = _meter().create_counter(
            "xsky_agent_attempts", "run_agent attempts by agent kind and how they ended"
        )
        try:
            if tool is None:
                outcome = await self.next.execute_activity(input)
            else:
                async with tool_span(tool):
                    outcome = await self.next.execute_activity(input)
        except asyncio.CancelledError:
            details = activity.cancellation_details()
            timed_out = details is not None and details.timed_out
            counter.add(1, {"kind": kind, "result": "timeout" if timed_out else "cancelled"})
            raise
        except BaseException:
            counter.add(1, {"kind": kind, "result": "error"})
            raise
        counter.add(1, {"kind": kind, "result": getattr(outcome, "kind", "completed")})
        return outcome


# -- tool calls ---------------------------------------------------------------------------------


def tool_call(tool: str, decision: str) -> None:
    """A tool call the permission gate decided: allowed, denied, asked, approved or refused."""
    _meter().create_counter(
        "xsky_tool_calls", "tool calls by tool and the permission gate's decision"
    ).add(1, {"tool": tool, "decision": decision})
    span = _tool_span.get()
    if span is not None:
        span.set_attribute("xsky.decision", decision)


_tool_span: contextvars.ContextVar[Span | None] = contextvars.ContextVar(
    "xsky_tool_span", default=None
)


@contextlib.asynccontextmanager
async def tool_span(tool: str) -> AsyncIterator[Span]:
    """A span for one tool call, with the permission gate's decision. A question or an
    approval the call waits for is not an error."""
    with _tracer.start_as_current_span(
        f"tool {tool}",
        attributes={"xsky.tool": tool},
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        token = _tool_span.set(span)
        try:
            yield span
        except NeedsHuman as need:
            span.set_attribute("xsky.waitsFor", need.kind)
            raise
        except Exception as e:
            span.record_exception(e)
            span.set_status(Status(StatusCode.ERROR, f"{type(e).__name__}: {e}"))
            raise
        finally:
            _tool_span.reset(token)


# -- model calls --------------------------------------------------------------------------------


class ModelCall:
    """One chat completion: its span, then its latency and tokens once it ended."""

    def __init__(self, model: str, span: Span):
        self.model = model
        self.span = span

    def answered(self, response: Any) -> None:
        usage = getattr(response, "usage", None)
        prompt = getattr(usage, "prompt_tokens", 0) or 0
        completion = getattr(usage, "completion_tokens", 0) or 0
        self.span.set_attributes(
            {"gen_ai.usage.input_tokens": prompt, "gen_ai.usage.output_tokens": completion}
        )
        tokens = _meter().create_counter(
            "xsky_llm_tokens", "tokens used by model and type (prompt, completion)"
        )
        if prompt:
            tokens.add(prompt, {"model": self.model, "type": "prompt"})
        if completion:
            tokens.add(completion, {"model": self.model, "type": "completion"})


def model_cost(model: str, usd: float) -> None:
    """A model call's cost by the worker's prices (xsky_llm_usd_micro: millionths of a USD)."""
    if usd > 0:
        _meter().create_counter(
            "xsky_llm_usd_micro", "model cost by model, in millionths of a USD (settings prices)"
        ).add(round(usd * 1_000_000), {"model": model})


@contextlib.contextmanager
def model_call(model: str) -> Iterator[ModelCall]:
    """Time one model call (xsky_llm_latency, by model and outcome: ``ok`` or the error's
    type) and trace it (a ``chat <model>`` span, OpenTelemetry's GenAI attribute names)."""
    began = time.monotonic()
    outcome = "ok"
    with _tracer.start_as_current_span(
        f"chat {model}",
        kind=opentelemetry.trace.SpanKind.CLIENT,
        attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": model},
    ) as span:
        call = ModelCall(model, span)
        try:
            yield call
        except ApplicationError as e:
            outcome = e.type or "error"
            raise
        except BaseException as e:
            outcome = type(e).__name__
            raise
        finally:
            _meter().create_histogram(
                "xsky_llm_latency", "model call latency by model and outcome", "ms"
            ).record(round((time.monotonic() - began) * 1000), {"model": model, "outcome": outcome})
