"""The plan growing by itself: a forEach's items (:mod:`xsky.plan.loops`) and a watch's polls
and firings (:mod:`xsky.plan.watches`), each step a plan version.

Not a replan: nothing running changes, no request is withdrawn, no stall ladder starts over.
Its state is the plan's (the versions say what grew and why); the router calls
:meth:`Growth.instead_of_start` for each ready task before it starts one, and
:meth:`Growth.poll_ended` when a task completes or is skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime

from xsky.leader.attempt_input import AttemptInputs
from xsky.leader.board import TaskBoard
from xsky.leader.commands import SATISFIED
from xsky.leader.flow import Flow
from xsky.leader.plans import PlanBook
from xsky.leader.replan import merge_plan
from xsky.leader.tasks import TaskState
from xsky.plan import loops, watches
from xsky.plan.models import Workflow
from xsky.plan.variables import RenderError

# A workflow's patch question (workflows/patches.patched), handed to the components that ask
# one only where it matters; None outside a workflow (every patch taken).
Patched = Callable[[str], bool] | None


class Growth:
    """Loops expanded and watches run, as plan versions the run writes itself."""

    def __init__(
        self,
        run_id: str,
        flow: Flow,
        board: TaskBoard,
        plans: PlanBook,
        inputs: AttemptInputs,
        variables: Callable[[], Mapping[str, str]],
    ) -> None:
        self.run_id = run_id
        self.variables = variables  # the run's (a first plan from a sentence sets them later)
        self.flow = flow
        self.board = board
        self.plans = plans
        self.inputs = inputs
        # a grower's older versions folded in the plan's history (patch plan-growth-folded)
        self.fold = False
        # the workflow's patch question, asked only of a list the reading changed would read
        # otherwise (no marker in any other run's history); True outside a workflow
        self.patched: Callable[[str], bool] = lambda patch_id: True

    def instead_of_start(self, task: TaskState, now: datetime) -> bool:
        """A ready forEach or an unstarted watch grows the plan instead of starting (True)."""
        agent = self.board.agents[task.agent_id]
        if agent.for_each is not None:
            self._expand_loop(task, now)  # its items take its place on the board
            return True
        if watches.spec_of(agent) is not None and not watches.started(self.plans.plan, agent.id):
            self._grow(
                watches.start(self.plans.plan, agent.id),
                f"watch {agent.id}: watching",
                f"watch {agent.id}",
                now,
            )
            return True  # its first poll takes its place
        return False

    def _expand_loop(self, task: TaskState, now: datetime) -> None:
        """forEach agent ``task`` is ready: its list read, the plan's next version has an
        agent per item and it gathering their results."""
        agent_id = task.agent_id
        try:
            text = self.inputs.loop_list(agent_id)
            # both readings first, the patch asked only where they differ, then the limit
            before = loops.split_items_as_before_v0_11_9(text)
            try:
                items: list[str] | None = loops.split_items(text)
                refused = None
            except loops.LoopError as e:  # (refused by the reading since: a difference too)
                items, refused = None, e
            if items != before and not self.patched("loop-lists-read-as-written"):
                items = before
            elif refused is not None:
                raise refused
            items = loops.limited(items or [], agent_id)
        except (loops.LoopError, RenderError) as e:
            self.board.finish(task, "failed", now, error=f"cannot start: {e}")
            self.flow.changed = True
            return
        shown = f"{agent_id}[1]…{agent_id}[{len(items)}]" if items else "no items"
        self._grow(
            loops.expand(self.plans.plan, agent_id, items),
            f"forEach of {agent_id}: {len(items)} item(s), {shown}, gathered in order",
            f"forEach {agent_id}",
            now,
        )

    def poll_ended(self, agent_id: str, now: datetime) -> None:
        """A watch's poll completed (it saw a change, or none) or was skipped by a person or a
        system with what happened: the watch fires, watches on, or ends."""
        task = self.board.tasks.get(agent_id)
        poll = watches.poll_of(agent_id)
        if poll is None or task is None or task.stored not in SATISFIED:
            return
        grown, line = watches.polled(self.plans.plan, agent_id, task.result)
        if line:
            self._grow(grown, line, f"watch {poll[0]}", now)

    def _grow(self, wf: Workflow, reason: str, by: str, now: datetime) -> None:
        # Not a replan: an agent that failed (or a person cancelled) stays so. Before the patch
        # every growth step ran each failed agent again — a failed deploy once per firing of a
        # watch elsewhere in the plan. Asked only where a task would be run again.
        tasks = self.board.tasks
        ended = any(
            tasks[a.id].stored in ("failed", "cancelled") for a in wf.agents if a.id in tasks
        )
        keep = ended and self.patched("growth-keeps-failures")
        change = merge_plan(
            self.plans.plan,
            self.board.tasks,
            wf,
            self.run_id,
            variables=self.variables(),
            retry_failed=not keep,
        )
        self.plans.grow(wf, reason, by, now, self.fold)
        self.board.replace(change.tasks, change.removed, wf)
        self.flow.changed = True
