"""What the leader guards for its attempts: their inputs stay within a budget, and only they
may report their progress. Workflow code (deterministic), used by workflows/leader/attempts.py
and workflows/leader/signals.py."""

from __future__ import annotations

import hashlib

from temporalio import workflow

from workflows.leader.blobs import save_blob
from workflows.patches import patched

with workflow.unsafe.imports_passed_through():
    from xsky.leader.limits import INPUT_BUDGET
    from xsky.plan.models import WorkflowAgent
    from xsky.runs import AgentInput, ProgressReport


# Dispatches per task whose tokens are kept: a late report of an older one is refused.
KEPT_DISPATCHES = 32


class ReportTokens:
    """One token per dispatch, in its attempts' input: a ``report_progress`` signal is taken
    only with its dispatch's token. Anyone may signal a run (the stock CLI, the Web UI), and a
    spoofed report (``activityAttempt: 1000000``) would have put a lie on the board or held
    off the stall ladder; one without the token is dropped, logged and counted as refused."""

    def __init__(self) -> None:
        # task id → its dispatches' tokens, the latest last (an earlier dispatch's final
        # report of what it spent may come after the next one began)
        self._by_task: dict[str, dict[int, str]] = {}
        # patched("refusals-heard"), asked of the SDK at the first dispatch only: it answers a
        # patch the same for the rest of the run
        self._heard: bool | None = None

    def issue(self, task_id: str, dispatch: int) -> str | None:
        """The token of ``dispatch`` of ``task_id``, for its attempts' input (None: the run
        predates tokens)."""
        if self._heard is None:
            self._heard = patched("refusals-heard")
        if not self._heard:
            return None
        token = str(workflow.uuid4())
        tokens = self._by_task.setdefault(task_id, {})
        tokens[dispatch] = token
        while len(tokens) > KEPT_DISPATCHES:
            del tokens[next(iter(tokens))]
        return token

    def problem(self, report: ProgressReport) -> str | None:
        """Why ``report`` is not from the attempt it names (None: it is, or the task got no
        token: one scheduled before tokens, on replay)."""
        tokens = self._by_task.get(report.task_id)
        if tokens is None:
            return None  # no dispatch of it to speak for: the core drops it as stale
        latest = next(reversed(tokens))
        if report.dispatch == latest:
            if report.token != tokens[latest]:
                return (
                    "it does not carry its dispatch's token (only the agent's own attempt may "
                    "report)"
                )
            return None
        # Another dispatch of the task (its usage is still settled): its own token, or nothing.
        # Asked only where the answer differs from before, when reports of other dispatches
        # were taken unchecked.
        if report.token == tokens.get(report.dispatch) is not None:
            return None
        if not patched("reports-of-every-dispatch-checked"):
            return None
        if report.dispatch > latest:
            return never_sent(report)
        if report.dispatch not in tokens:
            return (
                f"it names dispatch {report.dispatch} of {report.task_id}, too old for its token "
                "to be checked"
            )
        return "it does not carry its dispatch's token (only the agent's own attempt may report)"


def never_sent(report: ProgressReport) -> str:
    """Why a report naming a dispatch the run never sent is refused."""
    return f"it names dispatch {report.dispatch} of {report.task_id}, which the run never sent"


async def within_budget(agent_input: AgentInput) -> AgentInput:
    """``agent_input`` as it travels: whole when its JSON fits :data:`INPUT_BUDGET`, else in
    the artifact store with a reference in its place (the activity reads it back). A large
    task text, a person's long approvals or a pile of answers cannot make the workflow task
    that schedules the attempt too large for Temporal (it would fail, and be retried, for
    ever)."""
    text = agent_input.model_dump_json(by_alias=True)
    size = len(text.encode("utf-8", "surrogatepass"))
    if size <= INPUT_BUDGET or not patched("agent-input-by-reference"):
        return agent_input
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    name = (
        f"input-{agent_input.task_id}-v{agent_input.plan_version}-d{agent_input.dispatch}-{digest}"
    )
    workflow.logger.info(
        "%s's input is %d bytes, over the %d-byte budget: it travels by reference",
        agent_input.task_id,
        size,
        INPUT_BUDGET,
    )
    ref = await save_blob(name, text)
    agent = agent_input.agent
    return AgentInput(
        run_id=agent_input.run_id,
        task_id=agent_input.task_id,
        agent=WorkflowAgent(id=agent.id, name=agent.name, task=f"(stored as {name})"),
        execution_id=agent_input.execution_id,
        plan_version=agent_input.plan_version,
        dispatch=agent_input.dispatch,
        report_token=agent_input.report_token,
        input_ref=ref,
    )
