"""The leader's signals — ``pause``, ``resume``, ``nudge``, and ``report_progress`` from its own
attempts — and the update twins of the first three, which answer. Part of
:class:`workflows.leader.LeaderWorkflow` (a base class: workflow code, deterministic).

A signal cannot be refused to its sender (the stock CLI says "Signal workflow succeeded", the
Web UI "Workflow signaled." whatever happens next), and the SDK drops a signal whose payload
it cannot decode with nothing but a line in the worker's log. So each handler here takes the
raw payload and checks it itself: a malformed one — not JSON, not an object, an unknown
field, a field of the wrong type, a text over its cap, a progress report without its
dispatch's token — is refused where people look (the board's notes and the permission log,
``xsky/leader/audit.py``) and in the worker's log. Whoever needs an answer uses the twins
(``pause_run``, ``resume_run``, ``nudge_task``), updates whose validators run the same checks.

Runs recorded before the patch ``refusals-heard`` keep what they did: a malformed payload
dropped, ``pause null`` taken for a pause with the defaults.
"""

# Annotations stay objects (no `from __future__ import annotations`): the SDK reads each
# handler's type hints whenever a run imports this module into its sandbox (see workflow.py).

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pydantic import BaseModel
from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.common import RawValue

from workflows.leader.guards import ReportTokens, never_sent
from workflows.patches import patched

if TYPE_CHECKING:
    from workflows.leader.attempts import Attempts

with workflow.unsafe.imports_passed_through():
    from xsky.leader.commands import Command, Rejected
    from xsky.leader.core import LeaderCore
    from xsky.leader.limits import PAYLOAD_CHARS
    from xsky.leader.state import (
        InterventionResult,
        NudgeRequest,
        PauseRequest,
        PersonRequest,
        ResumeRequest,
    )
    from xsky.runs import ProgressReport
    from xsky.wire_errors import strict_problem

M = TypeVar("M", bound=BaseModel)

# What a signal sent with no payload at all gets (the Web UI's empty Data box, `temporal
# workflow signal` without --input): pause and resume take their defaults.
NO_INPUT = RawValue(Payload())


def _preview(raw: RawValue) -> str:
    return raw.payload.data[:PAYLOAD_CHARS].decode("utf-8", "replace")


def _handlers(cls: type) -> tuple[set[str], set[str]]:
    """The names of ``cls``'s updates and queries, as the SDK registered them (empty where a
    release of the SDK keeps them elsewhere: the refusal then names the signals only)."""
    try:
        defn = workflow._Definition.must_from_class(cls)
    except Exception:  # noqa: BLE001 - the SDK's own record: not a contract
        return set(), set()
    return {n for n in defn.updates if n}, {n for n in defn.queries if n}


def unknown_signal(name: str, updates: set[str], queries: set[str]) -> str:
    """Why a signal of ``name`` does nothing, and what to send instead."""
    if name in updates:
        return (
            f"{name} is an update, not a signal: use `temporal workflow update execute "
            f"--name {name}` (it answers); the signals are pause, resume and nudge"
        )
    if name in queries:
        return (
            f"{name} is a query, not a signal: use `temporal workflow query --type {name}`; "
            "the signals are pause, resume and nudge"
        )
    return f"no signal {name!r}: the signals are pause, resume and nudge; the rest are updates"


class LeaderSignals:
    """The signal handlers and their twins (mixed into LeaderWorkflow)."""

    if TYPE_CHECKING:
        _attempts: Attempts

        @property
        def _core(self) -> LeaderCore: ...

        def _when_ready(self, signal: Callable[[], None]) -> None: ...

        def _apply(self, commands: list[Command]) -> None: ...

        def _validated(
            self, check: Callable[[], None], req: PersonRequest | None = None
        ) -> None: ...

        async def _ready(self, check: Callable[[], None]) -> LeaderCore: ...

    @property
    def _tokens(self) -> ReportTokens:
        return self._attempts.tokens

    # -- reading a signal's payload ----------------------------------------------------------------

    def _decoded(self, raw: RawValue, model: type[M], empty: M | None) -> M | str | None:
        """The payload as ``model`` (``empty`` when there was none); a string: why it is
        refused; None: dropped as before the patch (a payload the SDK could not decode)."""
        if raw is NO_INPUT or not raw.payload.metadata:
            return empty if empty is not None else self._strictly(model, None)
        converter = workflow.payload_converter()
        try:
            before = converter.from_payload(raw.payload, cast(type[Any], model | None))
        except Exception:  # noqa: BLE001 - the SDK would have dropped it: so do old runs
            before = None
            failed = True
        else:
            failed = False
        # What the handler took before the patch: a decodable payload, null as the defaults.
        old = before if isinstance(before, model) else (empty if not failed else None)
        encoding = raw.payload.metadata.get("encoding", b"").decode("utf-8", "replace")
        problem: str | None
        if encoding != "json/plain":
            problem = f"its payload is not JSON (encoding {encoding or 'none'}); send a JSON object"
        else:
            try:
                problem = strict_problem(model, converter.from_payload(raw.payload))
            except Exception:  # noqa: BLE001 - declared JSON, but not
                problem = "its payload is not valid JSON"
        if problem is None and isinstance(before, model):
            return before
        if not patched("refusals-heard"):
            return old
        return problem or "its payload does not fit"

    def _strictly(self, model: type[M], value: Any) -> M | str | None:
        problem = strict_problem(model, value)
        if problem is None:
            return model.model_validate(value)
        return problem if patched("refusals-heard") else None

    def _refused(self, what: str, raw: RawValue, why: str, task_id: str = "") -> None:
        workflow.logger.warning("%s refused: %s", what, why)
        self._when_ready(
            lambda: self._core.people.refuse(what, _preview(raw), why, workflow.now(), task_id)
        )

    # -- pause and resume -----------------------------------------------------------------------

    @workflow.signal(
        name="pause",
        description="Stop dispatching new agents; {cancelRunning}: also stop running ones (they "
        "resume later). A signal cannot answer: the pause_run update does.",
    )
    def pause(self, raw: RawValue = NO_INPUT) -> None:
        req = self._decoded(raw, PauseRequest, PauseRequest())
        if isinstance(req, str):
            self._refused("pause signal", raw, req)
        elif req is not None:
            request = req

            def apply() -> None:
                if patched("refusals-heard"):
                    try:
                        self._core.checks.pause(request)
                    except Rejected as e:
                        self._core.people.refuse(
                            "pause signal", _preview(raw), str(e), workflow.now()
                        )
                        return
                self._apply(self._core.people.pause(request))

            self._when_ready(apply)

    @workflow.signal(
        name="resume",
        description="Dispatch again after a pause. A signal cannot answer: the resume_run update does.",
    )
    def resume(self, raw: RawValue = NO_INPUT) -> None:
        req = self._decoded(raw, ResumeRequest, ResumeRequest())
        if isinstance(req, str):
            self._refused("resume signal", raw, req)
        elif req is not None:
            self._when_ready(lambda: self._core.people.resume())

    @workflow.update(
        description="Pause, answered (the pause signal's twin): {cancelRunning} also stops "
        "running agents, {reason} is shown on the board."
    )
    async def pause_run(self, req: PauseRequest) -> InterventionResult:
        core = await self._ready(lambda: self._core.checks.pause(req))
        result, stops = core.people.pause_run(req)
        self._apply(stops)
        return result

    @pause_run.validator
    def _validate_pause_run(self, req: PauseRequest) -> None:
        self._validated(lambda: self._core.checks.pause(req), req)

    @workflow.update(description="Resume after a pause, answered (the resume signal's twin).")
    async def resume_run(self, req: ResumeRequest) -> InterventionResult:
        core = await self._ready(lambda: self._core.checks.resume(req))
        return core.people.resume_run()

    @resume_run.validator
    def _validate_resume_run(self, req: ResumeRequest) -> None:
        self._validated(lambda: self._core.checks.resume(req), req)

    # -- nudges ---------------------------------------------------------------------------------

    @workflow.signal(
        name="nudge",
        description="A message for one agent ({taskId}, {message}), delivered at its next step. "
        "A signal cannot answer: the nudge_task update does.",
    )
    def nudge(self, raw: RawValue = NO_INPUT) -> None:
        req = self._decoded(raw, NudgeRequest, None)
        if isinstance(req, str):
            self._refused("nudge signal", raw, req)
            return
        if req is None:
            workflow.logger.warning('nudge ignored: it needs {"taskId": …, "message": …}')
            return
        request = req

        def deliver() -> None:
            if patched("refusals-heard"):
                try:
                    self._core.checks.nudge(request)
                except Rejected as e:
                    workflow.logger.warning("nudge signal refused: %s", e)
                    self._core.people.refuse(
                        "nudge signal", _preview(raw), str(e), workflow.now(), request.task_id
                    )
                    return
            if not self._core.people.nudge(request, workflow.now()):
                workflow.logger.warning(
                    "nudge ignored: no task %s or an empty message", request.task_id
                )

        self._when_ready(deliver)

    @workflow.update(
        description="A message for one agent ({taskId}, {message}), answered (the nudge "
        "signal's twin): refused for an agent that cannot read it."
    )
    async def nudge_task(self, req: NudgeRequest) -> InterventionResult:
        core = await self._ready(lambda: self._core.checks.nudge(req))
        return core.people.nudge_task(req, workflow.now())

    @nudge_task.validator
    def _validate_nudge_task(self, req: NudgeRequest) -> None:
        self._validated(lambda: self._core.checks.nudge(req), req)

    # -- a signal of another name ---------------------------------------------------------------------

    @workflow.signal(dynamic=True, description="Any other name: refused, and said where.")
    def unknown_signal(self, name: str, args: Sequence[RawValue]) -> None:
        """A signal the leader has no handler for — an update's name (`temporal workflow
        signal --name resume_run`, which the stock CLI says "succeeded"), a typo — is refused
        where people look, as a malformed payload is: counted on the board, written in the
        permission log (its entries are capped) and in the worker's log; no command, so a spam
        of them adds no event to the history beyond the server's own for each signal. Before
        the patch the SDK kept it unhandled in the worker's memory, with nothing said."""
        if not patched("unknown-signals-refused"):
            return  # (a history recorded before: the signal was buffered and never handled)
        why = unknown_signal(name[:80], *_handlers(type(self)))  # (a name is the sender's text)
        workflow.logger.warning("signal refused: %s", why)
        payload = _preview(args[0]) if args else ""
        self._when_ready(
            lambda: self._core.people.refuse(f"{name[:80]} signal", payload, why, workflow.now())
        )

    # -- the agents' own reports -----------------------------------------------------------------

    @workflow.signal(
        name="report_progress",
        description="Sent by running agents (with their dispatch's token): alive and moving "
        "(message, iteration, tokens).",
    )
    def report_progress(self, raw: RawValue = NO_INPUT) -> None:
        report = self._decoded(raw, ProgressReport, None)
        if isinstance(report, str):
            self._refused("report_progress signal", raw, report)
            return
        if report is None:
            return
        spoofed = self._tokens.problem(report)
        if spoofed is not None:
            self._refused("report_progress signal", raw, spoofed, report.task_id)
            return
        checked = report

        def take() -> None:
            # A dispatch the run never sent (of a task not dispatched yet, or one whose tokens
            # went with continue-as-new) has no token to check: refused, its usage unsettled
            # (a forged report of 900 million tokens stopped a run). Asked only of such a one.
            task = self._core.board.task_by_id(checked.task_id)
            never = task is not None and (task.attempt == 0 or checked.dispatch > task.attempt)
            if never and patched("reports-of-every-dispatch-checked"):
                why = never_sent(checked)
                workflow.logger.warning("report_progress signal refused: %s", why)
                self._core.people.refuse(
                    "report_progress signal", _preview(raw), why, workflow.now(), checked.task_id
                )
                return
            self._core.report_progress(checked, workflow.now())

        self._when_ready(take)
