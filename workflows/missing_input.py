"""A query or an update sent without the input its handler needs is refused in one sentence.

The stock ``temporal`` CLI sends no payload when ``--input`` is left out
(``temporal workflow query -w ID --type nudges``); the SDK then calls the handler (or the
update's validator) with no argument, and the sender read a Python error:
``LeaderQueries.nudges() missing 1 required positional argument: 'req'``. This interceptor
answers such a call before the handler runs with what it takes:
``the query `nudges` needs its input: --input '{"taskId": …}'``.

Queries and update validators run for new requests only, never on replay (an update's accepted
event holds its payload): it changes no run's history, so no ``workflow.patched`` is needed.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel
from temporalio import workflow
from temporalio.exceptions import ApplicationError
from temporalio.worker import (
    HandleQueryInput,
    HandleUpdateInput,
    Interceptor,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
)

from xsky.wire_errors import example


def needed_input(handler: Callable[..., Any] | None) -> str | None:
    """What ``handler`` needs that a call without arguments lacks: the JSON it takes
    (``{"taskId": …}``), or "an argument"; None when it needs nothing."""
    if handler is None:
        return None
    # The SDK binds an async handler to its workflow in a closure taking (*args, **kwargs)
    # (temporalio/workflow/_handlers.py, _bind_method): the method is its `fn`.
    try:
        inner = inspect.getclosurevars(handler).nonlocals.get("fn")
    except TypeError:  # not a function (a partial: a sync handler, whose signature is its own)
        inner = None
    try:
        params = list(inspect.signature(inner or handler).parameters.values())
    except (TypeError, ValueError):
        return None
    if inner is not None:
        params = params[1:]  # the workflow object the closure passes
    required = [
        p
        for p in params
        if p.default is inspect.Parameter.empty
        and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        and p.name != "self"
    ]
    if not required:
        return None
    hint = required[0].annotation
    if isinstance(hint, str):  # a module with postponed annotations
        try:
            hint = typing.get_type_hints(inner or getattr(handler, "func", handler)).get(
                required[0].name
            )
        except Exception:  # noqa: BLE001 - a hint that cannot be read: say it less precisely
            hint = None
    for candidate in (hint, *typing.get_args(hint)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return f"--input '{example(candidate)}'"
    return "an --input"


def refusal(kind: str, name: str, needed: str) -> ApplicationError:
    return ApplicationError(
        f"the {kind} `{name}` needs its input: {needed} (docs/steering.md shows each)"
        + ("; nothing was changed" if kind == "update" else ""),
        type="Rejected",
        non_retryable=True,
    )


class _Inbound(WorkflowInboundInterceptor):
    async def handle_query(self, input: HandleQueryInput) -> Any:
        if not input.args:
            needed = needed_input(workflow.get_query_handler(input.query))
            if needed is not None:
                raise refusal("query", input.query, needed)
        return await self.next.handle_query(input)

    def handle_update_validator(self, input: HandleUpdateInput) -> None:
        if not input.args:
            needed = needed_input(workflow.get_update_handler(input.update))
            if needed is not None:
                raise refusal("update", input.update, needed)
        self.next.handle_update_validator(input)


class MissingInput(Interceptor):
    """The worker's interceptor: queries and updates sent without their input are refused."""

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        return _Inbound
