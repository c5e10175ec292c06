"""A reserve the run refuses is said as a reserve is given (`--reserve 4096`), not as the
tokens limit is (`tokens=100000`, which `--reserve` does not take)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from xsky.leader.commands import Rejected
from xsky.leader.core import LeaderCore
from xsky.leader.state import SetBudgetRequest
from xsky.plan.budget import Limits, RunBudget
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.runs import RunInput, RunOptions


@pytest.mark.parametrize("reserve", [0, -5, "abc"])
def test_a_bad_reserve_is_refused_with_an_example_the_flag_takes(reserve: object) -> None:
    wf = Workflow(name="b", task_id="b", agents=[WorkflowAgent(id="1", name="llm", task="t")])
    options = RunOptions(budget=RunBudget(run=Limits(tokens=10_000)))
    core = LeaderCore(
        RunInput(workflow=wf, options=options), "run-1", datetime(2026, 1, 1, tzinfo=UTC)
    )
    with pytest.raises(Rejected) as refused:
        core.checks.set_budget(SetBudgetRequest(reserve=reserve))  # type: ignore[arg-type]
    said = str(refused.value)
    assert (
        said
        == f"reserve must be a whole number of tokens more than 0, not {reserve}; give e.g. 4096"
    )
