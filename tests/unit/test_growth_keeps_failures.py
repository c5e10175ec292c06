"""A forEach expanding or a watch polling writes a plan version of its own (xsky/leader/growth.py).
That is not a replan: an agent that failed for good — a command that exited non-zero, "not
retried: retrying would not help" — must stay failed, not run again at every step of a loop or
a watch elsewhere in the plan (walk6: a `deploy` that failed ran 5 times beside a 4-firing
timer watch, and twice beside a forEach that expanded after it)."""

from __future__ import annotations

import json

from tests.unit.test_leader_core_rules import Shell
from tests.unit.test_loops import complete
from xsky.leader.commands import AttemptFailure
from xsky.plan.models import Workflow, WorkflowAgent

EXIT_1 = AttemptFailure("the command exited with status 1", deterministic=True)


def fail(shell: Shell, agent_id: str) -> None:
    dispatch = shell.running.pop(agent_id)
    shell.apply(
        shell.core.attempt_failed(agent_id, shell.core.tasks[agent_id], dispatch, EXIT_1, shell.now)
    )
    shell.core.attempt_ended(agent_id, dispatch)
    shell.loop()


def dispatches(shell: Shell, agent_id: str) -> int:
    return sum(1 for a, _, _ in shell.started if a == agent_id)


def deploy() -> WorkflowAgent:
    return WorkflowAgent(
        id="deploy", name="shell", task="deploy", config={"tool": "shell", "command": "./deploy"}
    )


def test_a_forEach_expanding_does_not_run_a_failed_agent_again():
    shell = Shell(
        Workflow(
            name="p",
            task_id="p",
            agents=[
                deploy(),
                WorkflowAgent(id="list", name="llm", task="list"),
                WorkflowAgent(
                    id="each",
                    name="llm",
                    task="do {{item}}",
                    depends=["list"],
                    for_each="{{agent_list_result}}",
                ),
            ],
        )
    )
    shell.loop()
    fail(shell, "deploy")
    complete(shell, "list", '["a", "b"]')  # the loop expands: a plan version of its own
    assert sorted(shell.running) == ["each[1]", "each[2]"]
    assert dispatches(shell, "deploy") == 1
    assert shell.core.tasks["deploy"].stored == "failed"


def test_a_watch_polling_does_not_run_a_failed_agent_again():
    shell = Shell(
        Workflow(
            name="p",
            task_id="p",
            agents=[
                deploy(),
                WorkflowAgent(
                    id="w",
                    name="llm",
                    task="tick {{item}}",
                    config={
                        "watch": {"event": "timer", "every": 1, "maxFirings": 3, "idleTimeout": 60}
                    },
                ),
            ],
        )
    )
    shell.loop()
    fail(shell, "deploy")
    for n in (1, 2, 3):
        said = json.dumps({"fired": True, "hash": f"h{n}", "text": f"tick {n}"})
        complete(shell, f"w.poll[{n}]", said)
        complete(shell, f"w[{n}]", f"ticked {n}")
    assert dispatches(shell, "deploy") == 1
    assert shell.core.tasks["deploy"].stored == "failed"
