"""Forks: go back to any agent of a run — completed, failed, cancelled or still running — and
try again from there with an edit (``Run.fork``, ``starter.py fork``).

A fork is a new run of the run's plan (or of a new plan) that carries every result the chosen
agent does not lead to — its upstream and the parallel branches — and runs the agent, with
its new task, input or plan, and everything downstream of it again. It is a follow-up run in
the leader's terms (:class:`xsky.runs.ResumeFrom`): the fork's board says what it resumes,
its memo and ``XskyResumes`` name the run it came from, and ``follow_ups()`` of that run list
it. A fork works in a workspace of its own: a fork of an ended run starts with a copy of that
run's files (made by the worker when the fork's first workspace agent starts), a fork of a run
that is still going with an empty one (results carry, files do not). So two forks, a fork and a
follow-up, or a fork and the run forked never write each other's files.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

from client.resume import LINEAGE, MAX_CARRIED, agent_ids, continued_input, inherited_workspace
from xsky.artifacts import uri_path
from xsky.errors import UsageError
from xsky.leader.replan import same_definition
from xsky.leader.state import HumanRequest
from xsky.plan import dag
from xsky.plan.agent_config import tool_name
from xsky.plan.loops import item_of
from xsky.plan.models import Workflow
from xsky.plan.watches import poll_of
from xsky.runs import AgentReport, ResumeFrom, RunInput
from xsky.security.idempotence import not_repeatable
from xsky.security.permissions import PermissionSettings
from xsky.security.rules import effect_rules


def edited(wf: Workflow, agent_id: str, task: str | None, input_text: str | None) -> Workflow:
    """The plan with agent ``agent_id``'s task or input replaced."""
    if task is not None and not task.strip():
        raise UsageError("the new task text is empty")

    update: dict[str, object] = {}
    if task is not None:
        update["task"] = task
    if input_text is not None:
        update["input"] = input_text or None
    if not update:
        return wf
    agents = [a.model_copy(update=update) if a.id == agent_id else a for a in wf.agents]
    return wf.model_copy(update={"agents": agents})


def carried(old: Workflow, new: Workflow, at: str, reports: list[AgentReport]) -> list[AgentReport]:
    """The results the fork keeps: of agents that completed (or were skipped), are not ``at``
    nor downstream of it in the new plan, and whose definition the new plan did not change."""
    again = {at, *dag.descendants(new, at)}
    before = {a.id: a for a in old.agents}
    after = {a.id: a for a in new.agents}
    kept = []
    for r in reports:
        if r.status not in ("completed", "skipped") or r.id in again or r.id not in after:
            continue
        if r.id in before and not same_definition(before[r.id], after[r.id]):
            continue  # the new plan asks something else of it: it runs again
        kept.append(r)
    return kept


def gone_inputs(
    new: Workflow,
    kept: list[AgentReport],
    gone_of: Callable[[str], str | None],
) -> list[str]:
    """Carried results an agent the fork runs again needs (an ancestor's), whose stored text
    `starter.py gc` removed (``gone_of(the run's folder)``: "removed by … (N objects)", else None): such
    a fork would start and its agent fail at once on the missing artifact. One line each."""
    runs_gone: dict[str, str | None] = {}
    gone: dict[str, str] = {}
    for r in kept:
        if r.result_ref is None:
            continue
        try:
            run = uri_path(r.result_ref.uri).split("/", 1)[0]
        except ValueError:
            continue
        if run not in runs_gone:
            runs_gone[run] = gone_of(run)
        if runs_gone[run]:
            gone[r.id] = (
                f"T-{r.id}'s result (stored with {run}, whose stored objects were {runs_gone[run]})"
            )
    kept_ids = {r.id for r in kept}
    needed: dict[str, None] = {}
    for agent in new.agents:
        if agent.id in kept_ids:
            continue
        for before in sorted(dag.ancestors(new, agent.id)):
            if before in gone:
                needed[gone[before]] = None
    return list(needed)


def still_carried(wf: Workflow, carried: list[AgentReport], rerun: list[str]) -> list[AgentReport]:
    """Of a follow-up's carried reports, those that stay carried: not an agent ``rerun`` names,
    nor one that depends on it (each runs again)."""
    again = dag.with_descendants(wf, rerun)  # (as the follow-up's leader reads it: beginning.carry)
    return [r for r in carried if r.id not in again]


# How a fork refused for what it would repeat begins (the live page asks, then forks again).
REPEATS = "the fork would run again what must not be repeated unasked"
# The same of a follow-up run (`retry` of an ended run) for an agent it was not asked to retry.
REPEATS_FOLLOW_UP = "the follow-up would run again what must not be repeated unasked"
# What an agent of the run forked did, when it ran: a fork running it again repeats it.
_RAN = ("completed", "failed", "dispatched", "in_progress", "blocked")


def repeated_effects(
    new: Workflow,
    kept: list[AgentReport],
    reports: list[AgentReport],
    pending: list[HumanRequest],
    permissions: PermissionSettings,
) -> list[str]:
    """What the fork would do again that must not be repeated unasked (exactly once, or ask:
    docs/steering.md): each agent it runs again that ran in the run forked and whose calls are
    not repeated without a person's say — its config says ``"idempotent": false``, its direct
    call is an effect (a POST, a push, a rule of ``permissions.effects``), or it has a call in
    doubt there, still unanswered. A model agent's calls are judged as it makes them."""
    kept_ids = {r.id for r in kept}
    ran = {
        r.id
        for r in reports
        # a call cancelled in flight may have done its work: it ran, for this purpose
        if r.status in _RAN or (r.status == "cancelled" and (r.attempts or r.started_at))
    }
    doubts = {
        r.task_id.removeprefix("T-"): r.id
        for r in pending
        if r.choices and r.status == "pending" and r.task_id
    }
    effects = effect_rules(permissions)
    said = []
    for agent in new.agents:
        if agent.id in kept_ids or (agent.id not in ran and agent.id not in doubts):
            continue
        config = agent.config or {}
        why: str | None = None
        if agent.id in doubts:
            why = f"a call of it is in doubt there ({doubts[agent.id]}, unanswered)"
        elif config.get("idempotent") is False:
            why = 'its <config> says "idempotent": false'
        elif isinstance(config.get("tool"), str):
            why = not_repeatable(config["tool"], config, effects=effects, config=config)
        if why is not None:
            said.append(f"T-{agent.id} ({agent.name}): {why}")
    return said


def fork_advice(
    run_id: str, said: list[str], reports: list[AgentReport], pending: list[HumanRequest]
) -> str:
    """What to do about the agents ``repeated_effects`` named. A fork at an agent after them
    carries them only once they completed there: an agent whose call is in doubt has no result
    to carry until its question is answered (the advice was "or fork at an agent after them",
    and a fork at T-2 after T-1 in doubt was refused the same way — walk9)."""
    named = {line.split(" ", 1)[0].removeprefix("T-") for line in said}
    done = {r.id for r in reports if r.status == "completed"}
    questions = [
        r.id
        for r in pending
        if r.choices and r.status == "pending" and (r.task_id or "").removeprefix("T-") in named
    ]
    advice = ["fork with --again to run them again (Run.fork(…, again=True))"]
    if questions:
        advice.append(
            f"or answer {', '.join(questions)} first (`starter.py answer {run_id} {questions[0]} "
            "done` if the call did its work, `skip`, or `again`), then fork at an agent after it"
        )
    elif named <= done:
        advice.append("or fork at an agent after them (it carries their results)")
    return "; ".join(advice)


def fork_input(
    run_id: str,
    first: RunInput,
    old: Workflow,
    new: Workflow,
    at: str,
    reports: list[AgentReport],
    permissions: PermissionSettings,
    ended: bool,
    own_id: str,
) -> RunInput:
    """The fork's input: ``first``'s variables, context and options, the results it keeps."""
    if at not in {a.id for a in new.agents}:
        raise UsageError(f"the new plan has no agent {at!r} to fork at; fork at one it has")
    kept = carried(old, new, at, reports)
    if len(kept) > MAX_CARRIED:
        raise UsageError(
            f"{run_id} has {len(kept)} results to carry; a fork carries at most {MAX_CARRIED}",
            "fork at an earlier agent, or replan the rest as a new run",
        )
    return continued_input(
        first,
        new,
        permissions,
        ResumeFrom(
            run_id=run_id,
            # A fork works in a workspace of its own: of an ended run, a copy of that run's
            # (the worker makes it when the fork's first agent needs it); of a running run,
            # a new one (results carry, files do not).
            workspace_of=own_id,
            workspace_from=inherited_workspace(run_id, first) if ended else None,
            carried=kept,
            rerun=[at],
        ),
    )


def direct_tool(wf: Workflow, agent_id: str) -> str | None:
    """The direct tool agent ``agent_id`` runs (its task text is read by nothing), if any."""
    agent = next((a for a in wf.agents if a.id == agent_id), None)
    tool = tool_name(agent.config) if agent is not None else None
    return tool if tool != "llm" else None  # (the direct llm answers the task: it is read)


def grown_from(wf: Workflow, at: str) -> list[str]:
    """The agents the leader grew from agent ``at`` as the run went: a forEach's items
    (``at[n]``), a watch's polls and firings (``at.poll[n]``, ``at[n]``)."""
    return [a.id for a in wf.agents if (item_of(a.id) or poll_of(a.id) or ("",))[0] == at]


def ungrown(wf: Workflow, at: str, earlier: list[Workflow]) -> Workflow:
    """The plan with agent ``at`` as it was written, before it grew (``earlier``: the run's
    plans, newest first): a fork at a loop runs the loop again — its items made anew, with
    the edit — not only its gathering of the old items' results."""
    grown = set(grown_from(wf, at))
    if not grown:
        return wf
    for plan in earlier:
        ids = [a.id for a in plan.agents]
        if at in ids and not grown_from(plan, at):
            original = plan.agent(at)
            agents = [original if a.id == at else a for a in wf.agents if a.id not in grown]
            return wf.model_copy(update={"agents": agents})
    raise UsageError(
        f"T-{at} is a loop or a watch the run grew into {len(grown)} agents, and how it was "
        "written before it grew is not in the run's plan history",
        "fork with --plan FILE holding it as it should run",
    )


def fork_id(run_id: str) -> str:
    """The fork's run id: the first run's own (without earlier -retry-/-fork- marks) and a mark."""
    base = LINEAGE.sub("", run_id)[:160]
    return f"{base}-fork-{uuid.uuid4().hex[:6]}"


def fork_at(wf: Workflow, task: str) -> str:
    (agent_id,) = agent_ids([a.id for a in wf.agents], [task])
    return agent_id
