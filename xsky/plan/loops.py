"""forEach made durable: an agent that runs once per item of a list, each item an agent.

A plan says ``<agent id="3" name="browser" depends="2" forEach="{{agent_2_result}}">``: agent
3 runs once for each item of agent 2's result (a JSON array, or else its non-empty lines),
with the item as ``{{item}}`` and its number as ``{{item_index}}`` in its task, input and
config. When agent 3 is ready, the leader reads the list and :func:`expand` writes the next
plan version: agents ``3[1]`` … ``3[N]``, each a copy of 3 holding its item (``<item>``), and
agent 3 itself becomes the gathering of their results, in order, into a JSON list (the
``gather`` tool), which is what its dependents see as ``{{agent_3_result}}``.

So every item is a durable unit of its own: an activity, retried alone, at most
``max_parallel`` at a time with the rest of the run; a worker lost in the 7th item runs the
7th again and nothing that finished. The expansion is a plan version like a replan's, so
the board, the plan history and a follow-up run all see the items.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from xsky.errors import Problem
from xsky.kinds import TOOL_AGENT_KINDS
from xsky.plan.models import Workflow, WorkflowAgent, unused_id
from xsky.plan.steps import inputs as steps_inputs
from xsky.plan.steps import outputs, walk_steps
from xsky.plan.variables import ITEM, reaches
from xsky.plan.watches import lower_watches

MAX_ITEMS = 1000  # items one forEach may have (each is an agent of the run)
GATHER = "gather"  # the direct tool that gathers the items' results
_ITEM_ID = re.compile(r"^(.+)\[([1-9][0-9]{0,4})\]$")
_ONE_REF = re.compile(r"^\s*\{\{\s*[^{}]+?\s*\}\}\s*$")


class LoopError(ValueError):
    """The list cannot be expanded; the message says why and how to fix it."""


def item_of(agent_id: str) -> tuple[str, int] | None:
    """(the forEach agent's id, the item's number) for an item agent's id, else None."""
    m = _ITEM_ID.match(agent_id)
    return (m[1], int(m[2])) if m else None


def source_problem(for_each: str) -> str | None:
    """What is wrong with a ``forEach`` value (it must be one ``{{…}}`` reference), or None."""
    if not _ONE_REF.match(for_each):
        return (
            f'forEach="{for_each}" must be one reference to a list: a result '
            '(forEach="{{agent_2_result}}"), a variable (forEach="{{topics}}") or a context value'
        )
    return None


# A list as a model writes it in text: a code fence around it; a line of a numbered or bulleted
# list ("1. apple", "2) pear", "- fig", "* kiwi", "• lime").
_FENCED = re.compile(r"^```[A-Za-z0-9_-]*[ \t]*\n(.*?)\n?```$", re.S)
_LIST_LINE = re.compile(r"^\s*(?:\d{1,4}[.)]|[-*+•])\s+(\S.*)$")


def _json_list(text: str) -> list[object] | None:
    """``text`` as a JSON array (one that is a JSON string holding an array too), else None."""
    try:
        value = json.loads(text)
        if isinstance(value, str) and value.lstrip().startswith("["):
            value = json.loads(value)  # an array written as a string: read once more
    except (ValueError, RecursionError):  # (nested deeper than the parser goes: not a list)
        return None
    return value if isinstance(value, list) else None


def _as_items(value: list[object]) -> list[str]:
    try:
        return [
            v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, sort_keys=True)
            for v in value
        ]
    except (ValueError, RecursionError) as e:
        raise LoopError(f"an item of the list cannot be written as JSON ({e})") from None


def split_items(text: str) -> list[str]:
    """The items of a list as a model writes one: a JSON array's elements (strings as they
    are, anything else as JSON) — in a code fence, written as a JSON string, or after a line
    of prose ("Here they are: [...]") —, else the items of a numbered or bulleted list (a
    heading before it left out), else the text's non-empty lines, stripped."""
    stripped = text.strip()
    fenced = _FENCED.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    value = _json_list(stripped) if stripped.startswith(("[", '"')) else None
    if value is None and "[" in stripped and stripped.endswith("]"):
        value = _json_list(stripped[stripped.index("[") :])  # prose, then the array
    if value is not None:
        return _as_items(value)
    lines = [line.strip() for line in stripped.splitlines() if line.strip()]
    marked = [m.group(1).strip() for line in lines if (m := _LIST_LINE.match(line))]
    if marked and len(marked) >= len(lines) - 2:  # a list, with a heading or a closing line
        return marked
    return lines


def split_items_as_before_v0_11_9(text: str) -> list[str]:
    """How the leader read a forEach's list before v0.11.9 (patch loop-lists-read-as-written):
    a JSON array only when the text is one, else its non-empty lines."""
    stripped = text.strip()
    if stripped.startswith("["):
        value = _json_list(stripped) if not stripped.startswith('"') else None
        if value is not None:
            return _as_items(value)
    return [line.strip() for line in stripped.splitlines() if line.strip()]


def items_from(text: str, agent_id: str) -> list[str]:
    """The items agent ``agent_id`` runs over, or :class:`LoopError` with the fix."""
    return limited(split_items(text), agent_id)


def limited(items: list[str], agent_id: str) -> list[str]:
    """``items``, or :class:`LoopError` when they are more than one forEach may run."""
    if len(items) > MAX_ITEMS:
        raise LoopError(
            f"forEach of agent {agent_id}: the list has {len(items):,} items, over the "
            f"{MAX_ITEMS:,} one forEach may run; split the list, or the work, into parts"
        )
    return items


def _mentions_item(agent: WorkflowAgent) -> bool:
    texts = [agent.task, agent.input or "", json.dumps(agent.config or {})]
    return any(re.search(r"\{\{\s*item(?:_index)?\s*\}\}", t) for t in texts)


def expand(wf: Workflow, agent_id: str, items: list[str]) -> Workflow:
    """The plan with forEach agent ``agent_id`` expanded over ``items``: its item agents
    inserted before it, and it, now depending on them, gathering their results."""
    loop = wf.agent(agent_id)
    copies = []
    for n, item in enumerate(items, 1):
        extra = {}
        if not _mentions_item(loop):  # the item must reach the agent: as its input, then
            said = f"Item {n} of {len(items)}:\n{{{{{ITEM}}}}}"
            extra["input"] = f"{loop.input}\n\n{said}" if loop.input else said
        copies.append(
            loop.model_copy(
                update={"id": f"{agent_id}[{n}]", "for_each": None, "item": item, **extra}
            )
        )
    gather = loop.model_copy(
        update={
            "name": loop.name if loop.name in TOOL_AGENT_KINDS else "llm",
            "task": f"Gather the results of the {len(copies)} items of forEach {agent_id}, in order",
            "for_each": None,
            "steps": [],
            "input": None,
            "config": {"tool": GATHER, "items": [f"{{{{agent_{c.id}_result}}}}" for c in copies]},
            "depends": [c.id for c in copies],
        }
    )
    agents: list[WorkflowAgent] = []
    for a in wf.agents:
        agents += [*copies, gather] if a.id == agent_id else [a]
    return wf.model_copy(update={"agents": agents})


# -- a forEach among an agent's steps (Eko's <forEach items="x">) ---------------------------------


def lower(wf: Workflow, patched: Callable[[str], bool] | None = None) -> tuple[Workflow, list[str]]:
    """The plan as it runs: a value another agent reads split off where its agent writes it
    (:func:`split_outputs`), each forEach among an agent's steps made of durable agents
    (:func:`lower_loops`), each watch of a page a durable watch
    (:func:`xsky.plan.watches.lower_watches`), then each step's ``input`` that another agent's
    step outputs passed along (:func:`pass_named_values`); one line per change. ``patched``:
    the leader's patch question, asked only of a plan the split changes."""
    split, outputs_said = split_outputs(wf)
    if outputs_said and (patched is None or patched("eko-outputs-read-where-written")):
        wf = split
    else:
        outputs_said = []
    wf, loops_said = lower_loops(wf)
    wf, watches_said = (wf, []) if not _has(wf, "watch") else lower_watches(wf)
    wf, values_said = pass_named_values(wf)
    return wf, outputs_said + loops_said + watches_said + values_said


def split_outputs(wf: Workflow) -> tuple[Workflow, list[str]]:
    """An agent's step that writes a value another agent reads (``<node output="links">``,
    read by another agent's ``<forEach items="links">`` or ``input="links"``), with steps after
    it: the agent is split there — ``A.links`` does the steps up to it and answers with the
    value, ``A`` the steps after, given it — so the reader gets the value as written, not the
    agent's last answer (Eko keeps each output in a variable the moment it is written)."""
    if not any(a.steps for a in wf.agents):
        return wf, []
    read: dict[str, set[str]] = {}  # name → the agents that read it
    looped: set[str] = set()  # names a forEach reads
    for a in wf.agents:
        for _, step in walk_steps(a.steps):
            for name in steps_inputs([step]):
                read.setdefault(name, set()).add(a.id)
            if step.kind == "forEach" and step.items:
                read.setdefault(step.items, set()).add(a.id)
                looped.add(step.items)
    taken = {a.id for a in wf.agents}
    agents: list[WorkflowAgent] = []
    said: list[str] = []
    for agent in wf.agents:
        at = [
            (k, name)
            for k, step in enumerate(agent.steps)
            for name in sorted(outputs([step]))
            if read.get(name, set()) - {agent.id} and k < len(agent.steps) - 1
        ]
        if len(at) != 1 or agent.for_each is not None:  # none, or more than one: as written
            agents.append(agent)
            continue
        k, name = at[0]
        # (an output's name may be any text — "article links", "文章链接": the id keeps what an
        # id may hold, within an id's length, the number unused_id adds included)
        word = re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_")[:20] or "out"
        part = unused_id(f"{agent.id[:40]}.{word}", taken)
        shape = " as a JSON array, one element per item" if name in looped else ""
        agents.append(
            agent.model_copy(
                update={
                    "id": part,
                    "task": f"{agent.task}\n\nDo only these steps, and answer with the value of "
                    f'"{name}" only{shape}.',
                    "steps": agent.steps[: k + 1],
                }
            )
        )
        value = f"{name}:\n{{{{agent_{part}_result}}}}"
        agents.append(
            agent.model_copy(
                update={
                    "steps": agent.steps[k + 1 :],
                    "depends": [*agent.depends, part],
                    "input": f"{agent.input}\n\n{value}" if agent.input else value,
                }
            )
        )
        said.append(f'"{name}" of agent {agent.id} read where it is written: {part} → {agent.id}')
    return wf.model_copy(update={"agents": agents}), said


def _has(wf: Workflow, kind: str) -> bool:
    return any(s.kind == kind for a in wf.agents for s in a.steps)


def pass_named_values(wf: Workflow) -> tuple[Workflow, list[str]]:
    """A step's ``input="x"`` that a step of *another* agent outputs (``output="x"``) reads
    that agent's result — what the agent answered at the end of its steps — given to the
    reader as input under the name, the reader depending on that agent (added when it did
    not already, directly or through others). Within one agent, steps share the agent's
    conversation, so nothing is passed; a workflow variable named ``x`` is given as
    ``{{x}}``. Passed like ``{{agent_N_result}}``: the same size rules and references."""
    if not any(a.steps for a in wf.agents):
        return wf, []  # most plans: nothing to pass (a 30,000-agent plan's walk took 100 ms)
    producer: dict[str, str] = {}
    for a in wf.agents:
        for name in sorted(outputs(a.steps)):
            producer.setdefault(name, a.id)
    by_id = {a.id: a for a in wf.agents}
    agents: list[WorkflowAgent] = []
    said: list[str] = []
    for agent in wf.agents:
        wanted = sorted(steps_inputs(agent.steps) - outputs(agent.steps))
        given: list[str] = []
        depends = list(agent.depends)
        for name in wanted:
            source = producer.get(name)
            if source is not None and source != agent.id:
                if not reaches(depends, source, by_id):
                    depends.append(source)
                given.append(f"{name}:\n{{{{agent_{source}_result}}}}")
            elif name in wf.variables:
                given.append(f"{name}:\n{{{{{name}}}}}")
        text = "\n\n".join(given)
        if not given or text in (agent.input or ""):  # nothing to pass, or passed already
            agents.append(agent)
            continue
        agents.append(
            agent.model_copy(
                update={
                    "depends": depends,
                    "input": f"{agent.input}\n\n{text}" if agent.input else text,
                }
            )
        )
        said.append(f"agent {agent.id} reads {', '.join(wanted)} from the agents that output it")
    return wf.model_copy(update={"agents": agents}), said


def named_value_problems(wf: Workflow) -> list[Problem]:
    """A step's ``input`` another agent outputs, where that agent runs after the reader (it
    depends on it): the value is passed by making the reader wait for its producer
    (:func:`pass_named_values`), so the two would wait for each other for ever — a run that
    never starts its agents. Eko runs the reader first with the value unset."""
    if not any(a.steps for a in wf.agents):
        return []
    producer: dict[str, str] = {}
    for a in wf.agents:
        for name in sorted(outputs(a.steps)):
            producer.setdefault(name, a.id)
    by_id = {a.id: a for a in wf.agents}
    problems = []
    for i, agent in enumerate(wf.agents):
        for name in sorted(steps_inputs(agent.steps) - outputs(agent.steps)):
            source = producer.get(name)
            if source is None or source == agent.id or source not in by_id:
                continue
            if reaches(by_id[source].depends, agent.id, by_id):
                problems.append(
                    Problem(
                        f'agent {agent.id} reads "{name}" (input="{name}"), which agent {source} '
                        f"outputs — but agent {source} runs after agent {agent.id} (it depends on "
                        f"it), so the value is never there: make agent {agent.id} depend on "
                        f"agent {source} instead, or read something an earlier agent outputs",
                        agent_index=i,
                        agent_id=agent.id,
                    )
                )
    return problems


def shared_output_warnings(wf: Workflow) -> list[Problem]:
    """An ``output`` name two agents' steps write: a step reading it gets one of them only."""
    by_name: dict[str, list[tuple[int, str]]] = {}
    for i, a in enumerate(wf.agents):
        for name in sorted(outputs(a.steps)):
            by_name.setdefault(name, []).append((i, a.id))
    said = []
    for name, writers in by_name.items():
        if len(writers) < 2:
            continue
        ids = [agent_id for _, agent_id in writers]
        said.append(
            Problem(
                f'output "{name}" is written by agents {", ".join(ids)}: a step reading it gets '
                f"one of them only (an input: agent {ids[0]}'s; a forEach's items: agent "
                f"{ids[-1]}'s) — give each its own name",
                agent_index=writers[1][0],
                agent_id=writers[1][1],
            )
        )
    return said


def instruction_loop_warnings(wf: Workflow) -> list[Problem]:
    """Each ``<forEach>`` among an agent's steps that is not made of durable agents as the run
    begins (:func:`lower_loops` makes the first of an agent's, at its top, whose list comes from
    somewhere): it stays an instruction the agent's model follows in one attempt."""
    producer = {name: a.id for a in wf.agents for name in outputs(a.steps)}  # (as lower_loops)
    said: list[Problem] = []
    for i, agent in enumerate(wf.agents):
        top = [n for n, s in enumerate(agent.steps) if s.kind == "forEach"]
        first = top[0] if top else None
        durable = None
        if first is not None and agent.for_each is None:
            name = agent.steps[first].items or ""
            if name in wf.variables or producer.get(name, agent.id) != agent.id or first > 0:
                durable = first
        for at, step in walk_steps(agent.steps):
            if step.kind != "forEach" or at == (durable,):
                continue
            why = (
                "inside another step"
                if len(at) > 1
                else "its list comes from no step, agent or variable"
                if at == (first,)
                else "not the agent's first loop"
            )
            said.append(
                Problem(
                    f"agent {agent.id}, step {'.'.join(str(p + 1) for p in at)} (<forEach>): "
                    f"{why}, so it is not made durable — the agent's model goes through the "
                    "items in one attempt; for an agent per item, give the loop an agent of its own",
                    agent_index=i,
                    agent_id=agent.id,
                    step=at,
                )
            )
    return said


def lower_loops(wf: Workflow) -> tuple[Workflow, list[str]]:
    """The plan with each agent whose steps hold a ``<forEach>`` made of durable agents, and
    one line per agent so changed.

    Agent ``A`` with steps *before*, ``forEach items="x"`` over *body*, *after* becomes:
    ``A.list`` (the steps before, answering with the list), ``A.each`` (a forEach agent over
    ``A.list``'s result whose steps are the body) and ``A`` (the steps after, given the
    gathered results) — or, with no steps after, ``A`` is the forEach agent itself, so its
    dependents get the list of results. ``x`` produced by another agent's step (or a workflow
    variable) is read from there instead, and no ``A.list`` is made. A forEach whose list
    comes from nowhere stays an instruction (:func:`xsky.plan.steps.render_steps`)."""
    if not any(s.kind == "forEach" for a in wf.agents for s in a.steps):
        return wf, []
    taken = {a.id for a in wf.agents}
    producer = {name: a.id for a in wf.agents for name in outputs(a.steps)}
    agents: list[WorkflowAgent] = []
    said: list[str] = []
    for agent in wf.agents:
        at = next((i for i, s in enumerate(agent.steps) if s.kind == "forEach"), None)
        if at is None or agent.for_each is not None:
            agents.append(agent)
            continue
        before, loop, after = agent.steps[:at], agent.steps[at], agent.steps[at + 1 :]
        name = loop.items or ""
        source_agent = producer.get(name)
        made: list[WorkflowAgent] = []
        depends = list(agent.depends)
        if name in wf.variables:
            source = f"{{{{{name}}}}}"
        elif source_agent is not None and source_agent != agent.id:
            source = f"{{{{agent_{source_agent}_result}}}}"
            depends = list(dict.fromkeys([*depends, source_agent]))
        elif before:
            list_id = unused_id(f"{agent.id}.list", taken)
            what = f'the list "{name}"' if name else "the list"
            made.append(
                agent.model_copy(
                    update={
                        "id": list_id,
                        "task": f"{agent.task}\n\nDo only these steps, and answer with {what}: a "
                        "JSON array, one element per item.",
                        "steps": before,
                    }
                )
            )
            source = f"{{{{agent_{list_id}_result}}}}"
            depends = [*agent.depends, list_id]
        else:
            agents.append(agent)  # a list from nowhere: the agent reads it as an instruction
            continue
        each_id = unused_id(f"{agent.id}.each", taken) if after else agent.id
        made.append(
            agent.model_copy(
                update={"id": each_id, "steps": loop.steps, "for_each": source, "depends": depends}
            )
        )
        if after:
            made.append(
                agent.model_copy(
                    update={
                        "steps": after,
                        "depends": [*agent.depends, each_id],
                        "input": f"{agent.input}\n\n{{{{agent_{each_id}_result}}}}"
                        if agent.input
                        else f"The results for each item, in order:\n{{{{agent_{each_id}_result}}}}",
                    }
                )
            )
        agents += made
        said.append(f"forEach of agent {agent.id} made durable: {' → '.join(a.id for a in made)}")
    return wf.model_copy(update={"agents": agents}), said
