"""Applying a new plan version to a run's task board (pure).

Rules, by agent id:

* completed or skipped in the old plan → kept with its result (to run it again, a plan
  uses a new id);
* running → keeps running if its definition is unchanged, else it is stopped and starts
  again from the new definition;
* failed → back to pending (a replan is the chance to try again);
* cancelled (by a person) → stays cancelled while the new plan defines it as before; a new
  definition of it is a new decision: back to pending;
* pending → pending (a pending question stays if the definition is unchanged);
* absent from the new plan → removed (stopped if running; its requests withdrawn);
* new → pending.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from xsky.leader.tasks import TaskState, subject_of, task_id_for
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.plan.variables import with_values

_RUNNING = ("dispatched", "in_progress")


@dataclass
class PlanChange:
    tasks: list[TaskState]  # the new board, in the new plan's order
    removed: list[TaskState] = field(default_factory=list)
    stop: list[str] = field(default_factory=list)  # agent ids whose running attempt must stop
    restarted: list[str] = field(default_factory=list)  # of those, ids that run again (changed)
    reset: list[str] = field(default_factory=list)  # failed/cancelled ids back to pending
    added: list[str] = field(default_factory=list)
    withdrawn_requests: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # not started yet: they run as redefined
    kept: list[str] = field(default_factory=list)  # done: kept with their result, not run again

    def summary(self) -> str:
        """What the plan's history says of the change (the run's state keeps it)."""
        return "; ".join(self._parts()) or "no task changed"

    def reply(self) -> str:
        """What the person who replanned is told: the summary, and the tasks it does not name
        whose definition changed — those that will run as redefined, and those done already,
        which keep their result (a new id runs one again)."""
        parts = self._parts()
        if self.changed:
            parts.append(f"changed {', '.join(self.changed)}")
        if self.kept:
            parts.append(
                f"kept {', '.join(self.kept)} as done (a new definition of a done agent does "
                "not run: give it a new id to run it)"
            )
        return "; ".join(parts) or "no task changed"

    def _parts(self) -> list[str]:
        parts = []
        if self.added:
            parts.append(f"added {', '.join(self.added)}")
        if self.removed:
            parts.append(f"removed {', '.join(t.agent_id for t in self.removed)}")
        if self.restarted:
            parts.append(f"restarting {', '.join(self.restarted)}")
        if self.reset:
            parts.append(f"retrying {', '.join(self.reset)}")
        return parts


# What an agent is asked to do: a change to any of these is a new definition (its steps, its
# loop and a loop item's item included, since plans may carry them).
DEFINITION = ("name", "task", "input", "config", "depends", "steps", "for_each", "item")


def same_definition(a: WorkflowAgent, b: WorkflowAgent) -> bool:
    return all(getattr(a, k) == getattr(b, k) for k in DEFINITION)


def new_task(
    agent: WorkflowAgent, run_id: str, variables: Mapping[str, str] | None = None
) -> TaskState:
    """The board's task for ``agent``; its subject and description with the run's variables
    in them (``{{version}}`` as its value: what people read, and the label later agents get)."""
    text = with_values(agent.task, variables or {})
    return TaskState(
        id=task_id_for(agent.id),
        agent_id=agent.id,
        session_id=run_id,
        subject=subject_of(text),
        description=text,
        assigned_agent=agent.name,
        blocked_by=[task_id_for(d) for d in agent.depends],
    )


def merge_plan(
    old: Workflow,
    tasks: dict[str, TaskState],
    new: Workflow,
    run_id: str,
    keep_cancelled: bool = True,
    variables: Mapping[str, str] | None = None,
    retry_failed: bool = True,
) -> PlanChange:
    old_agents = {a.id: a for a in old.agents}
    new_ids = {a.id for a in new.agents}
    change = PlanChange(tasks=[])
    for agent in new.agents:
        task = tasks.get(agent.id)
        if task is None:
            change.tasks.append(new_task(agent, run_id, variables))
            change.added.append(agent.id)
            continue
        unchanged = agent.id in old_agents and same_definition(old_agents[agent.id], agent)
        redefined = agent.id in old_agents and not unchanged
        task.description = with_values(agent.task, variables or {})
        task.subject = subject_of(task.description)
        task.assigned_agent = agent.name
        task.blocked_by = [task_id_for(d) for d in agent.depends]
        if task.stored in ("completed", "skipped"):
            if redefined:
                change.kept.append(agent.id)
        elif task.stored in _RUNNING:
            if not unchanged:
                change.stop.append(agent.id)
                change.restarted.append(agent.id)
        elif task.stored == "cancelled" and unchanged and keep_cancelled:
            pass  # a person cancelled it, and the plan asks nothing new of it
        elif task.stored in ("failed", "cancelled") and not retry_failed:
            pass  # the plan grew by itself (a loop, a watch): what ended stays as it ended
        elif task.stored in ("failed", "cancelled"):
            task.stored = "pending"
            task.error = None
            task.ended_at = None
            change.reset.append(agent.id)
        else:  # not started: it runs as the new plan defines it
            if redefined:
                change.changed.append(agent.id)
            if task.waiting_on is not None and not unchanged:
                change.withdrawn_requests.append(task.waiting_on)
                task.waiting_on = None
        change.tasks.append(task)
    for agent_id, task in tasks.items():
        if agent_id in new_ids:
            continue
        if task.stored in _RUNNING:
            change.stop.append(agent_id)
        if task.waiting_on is not None:
            change.withdrawn_requests.append(task.waiting_on)
        change.removed.append(task)
    return change
