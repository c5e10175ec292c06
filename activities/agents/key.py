"""Which dispatch of which agent in which run: what an attempt's files are named by."""

from __future__ import annotations

from dataclasses import dataclass

from xsky.runs import AgentInput


@dataclass(frozen=True, kw_only=True)
class AgentKey:
    """The names an attempt's ledger, log, transcript and stored results go by."""

    run_id: str
    agent_id: str
    task_id: str
    execution_id: str | None = None  # the run's first execution: survives continue-as-new
    plan_version: int = 1
    dispatch: int = 1

    @classmethod
    def of(cls, inp: AgentInput) -> AgentKey:
        return cls(
            run_id=inp.run_id,
            agent_id=inp.agent.id,
            task_id=inp.task_id,
            execution_id=inp.execution_id,
            plan_version=inp.plan_version,
            dispatch=inp.dispatch,
        )

    @property
    def idempotency_key(self) -> str:
        """``XSKY_ATTEMPT_KEY``: one per dispatch (every attempt of it has the same), unique to
        the run's first execution (a later run that reuses the workflow id gets other keys)."""
        return ":".join(
            (
                "xsky",
                self.run_id,
                (self.execution_id or "run")[:12],
                self.task_id,
                f"v{self.plan_version}",
                f"d{self.dispatch}",
            )
        )

    @property
    def file_prefix(self) -> str:
        """Of the artifacts this dispatch stores, e.g. "v1-d2-" (attempts of others never clash)."""
        return f"v{self.plan_version}-d{self.dispatch}-"
