"""Results flowing along ``depends``: what a model-driven agent with no ``<input>`` is given.

The seed's ``buildSimpleAgentWorkflow`` example ends with an ``llm`` agent whose task is
"Summarize the results" and nothing else: it depends on the browser step and expects to see
what that step found. Such an agent gets its direct dependencies' results as its input —
each one bounded (a long result is cut, with a note of how much more there is and where),
stored results by reference (the activity reads the first part from the artifact store), so
neither the activity's input nor the model's context grows with a dependency's output.
"""

from __future__ import annotations

from collections.abc import Mapping

from xsky.artifacts import marker
from xsky.leader.tasks import TaskState, subject_of
from xsky.plan.agent_config import tool_name
from xsky.plan.dependency_text import HEADING, NO_RESULT, label
from xsky.plan.models import WorkflowAgent

# Characters of each dependency's result an agent is given (the rest is named, not pasted).
PER_DEPENDENCY = 4000
# Characters of results in all: many dependencies share it (never less than MIN_EACH each).
TOTAL = 24_000
MIN_EACH = 500


def wants_context(agent: WorkflowAgent) -> bool:
    """A model-driven agent (llm or a role, no direct tool) with dependencies, no
    ``<input>`` and no ``{{agent_…_result}}`` of its own: the plan left its context implied."""
    if not agent.depends or (agent.input or "").strip() or not _model_driven(agent):
        return False
    return "{{agent_" not in agent.task.replace(" ", "")


def _model_driven(agent: WorkflowAgent) -> bool:
    """An llm agent or a role's, with no direct tool: a model reads what it is given."""
    return not agent.config or tool_name(agent.config) in (None, "llm")


def unread_dependencies(agent: WorkflowAgent) -> list[str]:
    """An Eko agent's dependencies its input does not name: a step's ``input="x"`` passed
    another agent's value as input (xsky/plan/loops.pass_named_values), which left the
    agent's own dependencies' results out — Eko shows an agent the results before it."""
    if not agent.steps or not agent.depends or not (agent.input or "").strip():
        return []
    if agent.item is not None or not _model_driven(agent):  # (an item: its item is its input)
        return []
    named = f"{agent.input}\n{agent.task}".replace(" ", "")
    return [d for d in agent.depends if f"{{{{agent_{d}_result" not in named]


def dependency_context(
    agent: WorkflowAgent,
    agents: Mapping[str, WorkflowAgent],
    tasks: Mapping[str, TaskState],
    issued: list[str],
    only: list[str] | None = None,
) -> str | None:
    """The input for ``agent`` from its direct dependencies' results (``only`` those), or None
    when the plan gives it one already. Stored results become head markers; their URIs go to
    ``issued`` (the activity expands only markers the leader issued)."""
    if only is None and not wants_context(agent):
        return None
    depends = agent.depends if only is None else only
    each = max(MIN_EACH, min(PER_DEPENDENCY, TOTAL // max(1, len(depends))))
    parts = [HEADING]
    for dep in depends:
        task, source = tasks.get(dep), agents.get(dep)
        if task is None or source is None:
            continue
        if task.result_ref is not None:
            issued.append(task.result_ref.uri)
            text = marker(task.result_ref, head=each)
        elif task.result is not None:
            text = (
                task.result
                if len(task.result) <= each
                else (
                    f"{task.result[:each]}\n… ({len(task.result) - each} more characters not shown)"
                )
            )
        else:
            text = NO_RESULT
        # (the subject: the board's words for it, its variables' values in them)
        parts.append(f"{label(task.id, source.name, subject_of(task.description, 80))}\n{text}")
    return "\n\n".join(parts)
