"""Which dispatch of which agent in which run: what an attempt's files are named by."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from xsky.artifacts import safe_component
from xsky.runs import AgentInput


@dataclass(frozen=True, kw_only=True)
class AgentKey:
    """The names an attempt's ledger, log, transcript, checkpoint and stored results go by,
    made once from its input (:meth:`of`)."""

    run_id: str
    agent_id: str
    task_id: str
    execution_id: str | None = None  # the run's first execution: survives continue-as-new
    plan_version: int = 1
    dispatch: int = 1
    # The name of the agent's conversation (:func:`checkpoint_name`), or None: named from
    # ``named_from`` when first asked. Most attempts never ask (a no-op, a gather, a direct
    # tool: only a model's loop and a failure's spend read a checkpoint), and naming it — the
    # agent's definition and role as JSON, hashed — was a sixth of a no-op attempt's CPU.
    checkpoint: str | None = field(default=None, compare=False)
    named_from: AgentInput | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, inp: AgentInput) -> AgentKey:
        return cls(
            run_id=inp.run_id,
            agent_id=inp.agent.id,
            task_id=inp.task_id,
            execution_id=inp.execution_id,
            plan_version=inp.plan_version,
            dispatch=inp.dispatch,
            named_from=inp,
        )

    @property
    def conversation(self) -> str:
        """The checkpoint's name (:func:`checkpoint_name` of the input, made once)."""
        if self.checkpoint is None:
            if self.named_from is None:
                raise ValueError("an AgentKey needs a checkpoint name or the input to make it from")
            object.__setattr__(self, "checkpoint", checkpoint_name(self.named_from))
        assert self.checkpoint is not None
        return self.checkpoint

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
    def dispatch_key(self) -> str:
        """Names one dispatch of an agent, "v<plan version>-d<dispatch>": every retry of it (a
        lost worker) has the same (what its spending is counted under)."""
        return f"v{self.plan_version}-d{self.dispatch}"

    @property
    def file_prefix(self) -> str:
        """Of the artifacts this dispatch stores, e.g. "v1-d2-" (attempts of others never clash)."""
        return f"{self.dispatch_key}-"


def checkpoint_name(inp: AgentInput) -> str:
    """One conversation per run and agent definition.

    Keyed by the run's first execution (a new run that reuses the workflow id starts
    afresh) and by what the agent is asked to do (a replan that leaves this agent alone
    keeps its progress; new task text or a new role starts it over).
    """
    definition = json.dumps(
        [
            inp.agent.name,
            inp.agent.task,
            inp.agent.input,
            inp.agent.config,
            inp.role.model_dump() if inp.role else None,
        ],
        sort_keys=True,
        default=str,
    )
    digest = hashlib.sha256(definition.encode()).hexdigest()[:16]
    return f"checkpoint-{safe_component(inp.execution_id or 'run', 40)}-{digest}.json"
