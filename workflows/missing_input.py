"""A query or an update sent without the input its handler needs is refused in one sentence.

The stock ``temporal`` CLI sends no payload when ``--input`` is left out
(``temporal workflow query -w ID --type nudges``); the SDK then calls the handler (or the
update's validator) with no argument, and the sender read a Python error:
``LeaderQueries.nudges() missing 1 required positional argument: 'req'``. This interceptor
answers such a call before the handler runs with what it takes:
``the query `nudges` needs its input: --input '{"taskId": …}'``.

Queries and update validators run for new requests only, never on replay (an update's accepted
event holds its payload): it changes no run's history, so no ``workflow.patched`` is needed.
``pause_run`` and ``resume_run`` sent without input are taken as ``--input '{}'`` — their signal
twins take none — and their handlers are given that empty request, on replay too: the validator
refused every update sent without input before (this interceptor, and a TypeError before it), so
no history holds one that was accepted, and no patch is needed either.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, ValidationError
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


def _request_model(handler: Callable[..., Any] | None) -> tuple[list[Any], Any]:
    """``handler``'s required parameters and the type hint of the first (None: none read)."""
    if handler is None:
        return [], None
    # The SDK binds an async handler to its workflow in a closure taking (*args, **kwargs)
    # (temporalio/workflow/_handlers.py, _bind_method): the method is its `fn`.
    try:
        inner = inspect.getclosurevars(handler).nonlocals.get("fn")
    except TypeError:  # not a function (a partial: a sync handler, whose signature is its own)
        inner = None
    try:
        params = list(inspect.signature(inner or handler).parameters.values())
    except (TypeError, ValueError):
        return [], None
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
        return [], None
    hint = required[0].annotation
    if isinstance(hint, str):  # a module with postponed annotations
        try:
            hint = typing.get_type_hints(inner or getattr(handler, "func", handler)).get(
                required[0].name
            )
        except Exception:  # noqa: BLE001 - a hint that cannot be read: say it less precisely
            hint = None
    return required, hint


def _models(hint: Any) -> list[type[BaseModel]]:
    return [
        c
        for c in (hint, *typing.get_args(hint))
        if isinstance(c, type) and issubclass(c, BaseModel)
    ]


def needed_input(handler: Callable[..., Any] | None) -> str | None:
    """What ``handler`` needs that a call without arguments lacks: the JSON it takes
    (``{"taskId": …}``), or "an argument"; None when it needs nothing."""
    required, hint = _request_model(handler)
    if not required:
        return None
    for model in _models(hint):
        return f"--input '{example(model)}'"
    return "an --input"


# The updates a call without input means `--input '{}'` for: the twins of the signals that take
# none (`temporal workflow signal --name resume` resumes). Others whose fields all have defaults
# (end_run, replan, set_budget, approve_plan) still ask for their input: a bare end_run would end
# the run, and the rest would be refused by their validators for want of a field anyway.
EMPTY_INPUT_TAKEN = frozenset({"pause_run", "resume_run"})


def empty_request(name: str, handler: Callable[..., Any] | None) -> BaseModel | None:
    """The request update ``name`` takes when it is sent without input — what ``--input '{}'``
    gives — for an update of :data:`EMPTY_INPUT_TAKEN`, else None. walk10/11: ``temporal
    workflow update execute --name resume_run`` was refused with "needs its input: --input
    '{"reason": …}'", though the resume signal takes none and the docs' recipe is ``'{}'``."""
    if name not in EMPTY_INPUT_TAKEN:
        return None
    required, hint = _request_model(handler)
    if len(required) != 1:
        return None
    for model in _models(hint):
        try:
            return model.model_validate({})
        except ValidationError:
            return None
    return None


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
            handler = workflow.get_update_handler(input.update)
            empty = empty_request(input.update, handler)
            if empty is not None:
                input = replace(input, args=[empty])
            elif (needed := needed_input(handler)) is not None:
                raise refusal("update", input.update, needed)
        self.next.handle_update_validator(input)

    async def handle_update_handler(self, input: HandleUpdateInput) -> Any:
        # (an update sent without input is accepted only when its request may be empty — the
        # validator above refused every other, and before this one too: no history holds an
        # accepted update without input, so its handler given the empty request replays alike)
        if not input.args:
            empty = empty_request(input.update, workflow.get_update_handler(input.update))
            if empty is not None:
                input = replace(input, args=[empty])
        return await self.next.handle_update_handler(input)


class MissingInput(Interceptor):
    """The worker's interceptor: queries and updates sent without their input are refused."""

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        return _Inbound
