"""The plan as a graph: validation, ready sets, orders, levels, critical path, agent tree.

All functions are pure and deterministic: they iterate agents in plan order or sorted
order, never over a set, so the workflow can call them during replay.
"""

from __future__ import annotations

import heapq
import re
import uuid
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from xsky.errors import Problem, WorkflowValidationError
from xsky.gcpause import gc_paused
from xsky.plan.agent_config import config_problems
from xsky.plan.models import Workflow, WorkflowAgent, WorkflowNode
from xsky.plan.variables import check_references, nearest
from xsky.security.roles import role_problems


def validate(
    workflow: Workflow,
    known_agents: Collection[str],
    *,
    variables: Collection[str] | None = None,
    context_keys: Collection[str] | None = None,
    for_a_person: bool = False,
) -> list[Problem]:
    """Every problem that stops this plan from running (see ``_validate``). ``for_a_person``:
    the problems are shown to a person (the command line, the client), so an unknown agent
    name also says how to define a role of that name — not to a planner's model, which is
    to use the names it was given, not invent roles."""
    with gc_paused():
        return _validate(workflow, known_agents, variables, context_keys, for_a_person)


def _validate(
    workflow: Workflow,
    known_agents: Collection[str],
    variables: Collection[str] | None,
    context_keys: Collection[str] | None,
    for_a_person: bool = False,
) -> list[Problem]:
    """Every problem that stops this plan from running, in plan order; ``[]`` when valid.

    ``known_agents`` are the agent kinds and roles a worker can run. ``variables`` are
    the names supplied for ``{{name}}`` besides the plan's own ``<variables>``;
    ``context_keys``, when given, are checked against ``{{context.key}}``.
    """
    problems: list[Problem] = []
    index_of: dict[str, int] = {}
    for i, agent in enumerate(workflow.agents):
        if agent.id in index_of:
            first = index_of[agent.id]
            problems.append(
                Problem(
                    f"duplicate agent id {agent.id!r} (also used by agent #{first + 1}); give each agent its own id",
                    agent_index=i,
                    agent_id=agent.id,
                )
            )
        else:
            index_of[agent.id] = i

    seen_roles: set[str] = set()
    for role in workflow.roles:
        if role.name in seen_roles:
            problems.append(
                Problem(
                    f"role {role.name} is defined twice in this plan; keep one <role name={role.name!r}>"
                )
            )
        seen_roles.add(role.name)
        problems.extend(Problem(msg) for msg in role_problems(role))
    known = sorted(set(known_agents) | seen_roles)
    known_set = set(known)
    # One pass reads each agent for its own problems and for whether the plan can hold a
    # cycle at all: when every dependency names an agent written before it (as planners and
    # people write plans, and as a plan grows), plan order is a topological order and there
    # is none. Only a plan with a dependency on a later agent has its graph built and walked
    # (Kahn's algorithm over plan indices, ``_cycle_among``; an id used twice is its first
    # agent, as in find_cycles): a 10,000-agent plan is read once, not four times.
    agents = workflow.agents
    forward = False  # a dependency on an agent later in the plan
    named: dict[str, list[str]] = {}  # each agent name's ids, for a dependency on a name
    for i, agent in enumerate(agents):
        if agent.name not in known_set:
            message = _unknown_name(agent, known, for_a_person)
            problems.append(Problem(message, agent_index=i, agent_id=agent.id))
        in_graph = index_of[agent.id] == i
        for dep in agent.depends:
            j = index_of.get(dep)
            if dep == agent.id and index_of.get(dep) == i:  # (a duplicate id is said above)
                problems.append(
                    Problem(
                        f"agent {agent.id} depends on itself; remove {dep!r} from its depends",
                        agent_index=i,
                        agent_id=agent.id,
                    )
                )
            elif j is None:
                meant = (
                    _task_id_of(dep, index_of)
                    or _by_name(dep, agents, named)
                    or nearest(dep, index_of)
                )
                problems.append(
                    Problem(
                        f"agent {agent.id} depends on unknown agent {dep!r}{meant}; "
                        f"ids in this plan: {_short_list(index_of)}",
                        agent_index=i,
                        agent_id=agent.id,
                    )
                )
            elif in_graph and j > i:
                forward = True
        if agent.config:
            for msg in config_problems(agent.config):
                problems.append(
                    Problem(f"agent {agent.id}: {msg}", agent_index=i, agent_id=agent.id)
                )

    if forward and _cycle_among(agents, index_of):
        for cycle in find_cycles(agents):
            start = cycle[0]
            problems.append(
                Problem(
                    "dependency cycle: "
                    + " → ".join(cycle)
                    + "; break it by removing one of these depends",
                    agent_index=index_of.get(start),
                    agent_id=start,
                )
            )

    declared = set(workflow.variables)
    if variables is not None:
        declared |= set(variables)
    problems.extend(check_references(workflow, declared, context_keys))
    problems.sort(key=lambda p: p.agent_index if p.agent_index is not None else -1)
    return problems


def ensure_valid(
    workflow: Workflow,
    known_agents: Collection[str],
    *,
    variables: Collection[str] | None = None,
    context_keys: Collection[str] | None = None,
) -> Workflow:
    """Return the workflow, or raise :class:`WorkflowValidationError` with every problem."""
    problems = validate(workflow, known_agents, variables=variables, context_keys=context_keys)
    if problems:
        raise WorkflowValidationError(problems)
    return workflow


def _unknown_name(agent: WorkflowAgent, known: list[str], for_a_person: bool) -> str:
    """What to do about an agent whose name is no kind or role: a near name is likely a typo;
    and a person may mean an agent of their own (an Eko plan's custom agent), which runs here
    as a role once one of that name is defined."""
    # (a stricter match than for a variable: a custom agent "Mailer" is no typo of "file")
    near = nearest(agent.name.lower(), known, cutoff=0.75)
    text = f"agent {agent.id}: unknown agent name {agent.name!r}{near}; known: {', '.join(known)}"
    if not for_a_person:
        return text
    return (
        f"{text}; to run an agent of your own, define a role named {agent.name!r}: under "
        '"roles" in .xsky/settings.json (`starter.py roles` lists them), or as a '
        f'<role name="{agent.name}" tools="…"><systemPrompt>…</systemPrompt></role> in a '
        "native <workflow>"
    )


def _short_list(ids: Iterable[str], limit: int = 12) -> str:
    items = list(ids)
    shown = ", ".join(items[:limit])
    return shown + (f", … ({len(items)} in all)" if len(items) > limit else "")


def _edges(agents: list[WorkflowAgent]) -> dict[str, list[str]]:
    """Adjacency ``id → its depends`` restricted to known ids, self-loops dropped."""
    ids = {a.id for a in agents}
    graph: dict[str, list[str]] = {}
    for a in agents:
        graph.setdefault(a.id, [d for d in a.depends if d in ids and d != a.id])
    return graph


# A task id's ``T-`` (``T-1``, ``t-1``, ``T1``: no dash before a digit), which the board puts
# before an agent's id.
TASK_ID = re.compile(r"t(?:-|(?=[0-9]))(.+)", re.IGNORECASE)


def _task_id_of(dep: str, index_of: Mapping[str, int]) -> str:
    """What a dependency written as a task id (``depends="T-1"``, as the board and the
    steering commands name agents) names: the agent id to write instead, or "" — the id after
    ``T-`` as it is, else in another case when only one agent has it."""
    written = TASK_ID.fullmatch(dep)
    if written is None:
        return ""
    rest = written[1]
    ids = [rest] if rest in index_of else [a for a in index_of if a.casefold() == rest.casefold()]
    if len(ids) != 1:
        return ""
    return f" (did you mean {ids[0]!r}? {dep!r} is its task id: depends names agent ids)"


def _by_name(dep: str, agents: list[WorkflowAgent], named: dict[str, list[str]]) -> str:
    """What a dependency written as an agent's name (Eko's ``dependsOn="Browser"``, seen in a
    port's tests) names: the ids to write instead, or "". Eko itself never runs such an agent.
    ``named`` (each name's ids) is filled on the first call, so a plan is read once."""
    from xsky.plan.eko import KINDS  # (here: eko reads the models, which read this module)

    if not named:
        for a in agents:
            named.setdefault(a.name, []).append(a.id)
    ids = named.get(KINDS.get(dep.casefold(), dep.casefold()), [])
    if not ids:
        return ""
    if len(ids) == 1:
        return f" ({dep!r} is agent {ids[0]}'s name: dependencies are ids — write {ids[0]!r})"
    return f" ({dep!r} is the name of agents {', '.join(ids)}: dependencies are ids)"


def _cycle_among(agents: list[WorkflowAgent], index_of: Mapping[str, int]) -> bool:
    """Whether the agents' dependencies hold a cycle: the graph of :func:`_has_cycle`, over
    plan indices, self-dependencies and unknown ids left out (they are said on their own)."""
    waiting = [0] * len(agents)
    unblocks: list[list[int]] = [[] for _ in agents]
    for i, agent in enumerate(agents):
        if index_of[agent.id] != i:  # an id used twice: its first agent is the graph's
            continue
        for dep in agent.depends:
            j = index_of.get(dep)
            if j is not None and j != i:
                waiting[i] += 1
                unblocks[j].append(i)
    return _has_cycle(waiting, unblocks, len(index_of))


def _has_cycle(waiting: list[int], unblocks: list[list[int]], nodes: int) -> bool:
    """Kahn's algorithm: cheaper than finding the cycles, which only errors need.
    ``waiting[i]``: how many dependencies agent i has in the graph; ``unblocks[j]``: the
    agents that depend on agent j; ``nodes``: how many agents the graph holds."""
    todo = [i for i, n in enumerate(waiting) if n == 0]
    done = 0
    while todo:
        i = todo.pop()
        done += 1
        for c in unblocks[i]:
            waiting[c] -= 1
            if waiting[c] == 0:
                todo.append(c)
    # An agent left out of the graph (an id used twice) waits on nothing: count it out.
    return done - (len(waiting) - nodes) != nodes


def find_cycles(agents: list[WorkflowAgent]) -> list[list[str]]:
    """One cycle path per strongly connected component, e.g. ``['2', '4', '2']``.

    Iterative Tarjan (plans can have 10,000 agents: no recursion limits), then a path
    inside each component found by walking dependency edges that stay in it.
    """
    graph = _edges(agents)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work: list[tuple[str, int]] = [(root, 0)]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, i = work[-1]
            succ = graph[node]
            if i < len(succ):
                work[-1] = (node, i + 1)
                nxt = succ[i]
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    comp: list[str] = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == node:
                            break
                    if len(comp) > 1:
                        components.append(comp)

    order = {a.id: i for i, a in enumerate(agents)}
    cycles = []
    for comp in components:
        members = set(comp)
        start = min(comp, key=order.__getitem__)
        cycles.append(_cycle_from(start, graph, members))
    cycles.sort(key=lambda c: order[c[0]])
    return cycles


def _cycle_from(start: str, graph: dict[str, list[str]], members: set[str]) -> list[str]:
    """A simple cycle through ``start`` within one strongly connected component (BFS: shortest)."""
    parent: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt_frontier = []
        for node in frontier:
            for dep in graph[node]:
                if dep not in members:
                    continue
                if dep == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parent[path[-1]])
                    path.reverse()
                    return path + [start]
                if dep not in parent:
                    parent[dep] = node
                    nxt_frontier.append(dep)
        frontier = nxt_frontier
    return [start, start]  # unreachable for a real component; keeps the type total


# -- scheduling helpers ------------------------------------------------------------------


def ready(
    workflow: Workflow, completed: Collection[str], started: Collection[str] = ()
) -> list[str]:
    """Ids whose dependencies are all completed and that are not completed or started yet.

    Returned in plan order, which is the stable dispatch order.
    """
    done = set(completed)
    busy = set(started)
    return [
        a.id
        for a in workflow.agents
        if a.id not in done and a.id not in busy and all(d in done for d in a.depends)
    ]


def topological_order(workflow: Workflow) -> list[str]:
    """Ids so that every agent comes after its dependencies; ties keep plan order."""
    graph = _edges(workflow.agents)
    dependents: dict[str, list[str]] = {a.id: [] for a in workflow.agents}
    remaining = {a_id: len(deps) for a_id, deps in graph.items()}
    for a_id, deps in graph.items():
        for d in deps:
            dependents[d].append(a_id)
    position = {a.id: i for i, a in enumerate(workflow.agents)}
    heap = [(position[a_id], a_id) for a_id, n in remaining.items() if n == 0]
    heapq.heapify(heap)
    out: list[str] = []
    while heap:
        _, a_id = heapq.heappop(heap)
        out.append(a_id)
        for child in dependents[a_id]:
            remaining[child] -= 1
            if remaining[child] == 0:
                heapq.heappush(heap, (position[child], child))
    if len(out) != len(graph):
        cycles = find_cycles(workflow.agents)
        raise WorkflowValidationError(
            [Problem("dependency cycle: " + " → ".join(c), agent_id=c[0]) for c in cycles]
        )
    return out


def levels(workflow: Workflow) -> list[list[str]]:
    """Agents grouped by depth (longest dependency chain before them), plan order inside."""
    graph = _edges(workflow.agents)
    depth: dict[str, int] = {}
    for a_id in topological_order(workflow):
        depth[a_id] = 1 + max((depth[d] for d in graph[a_id]), default=-1)
    grouped: list[list[str]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    for a in workflow.agents:
        grouped[depth[a.id]].append(a.id)
    return grouped


def critical_path(
    workflow: Workflow, weights: Mapping[str, float] | None = None
) -> tuple[float, list[str]]:
    """The heaviest dependency chain: its total weight and its ids, first to last.

    Without ``weights`` every agent weighs 1, so the length is counted in agents.
    """
    graph = _edges(workflow.agents)
    finish: dict[str, float] = {}
    via: dict[str, str | None] = {}
    for a_id in topological_order(workflow):
        w = 1.0 if weights is None else float(weights.get(a_id, 0.0))
        best: str | None = None
        best_finish = 0.0
        for d in graph[a_id]:
            if best is None or finish[d] > best_finish:
                best, best_finish = d, finish[d]
        finish[a_id] = best_finish + w
        via[a_id] = best
    if not finish:
        return 0.0, []
    end = max(finish, key=lambda k: finish[k])
    path = [end]
    while (previous := via[path[-1]]) is not None:
        path.append(previous)
    path.reverse()
    return finish[end], path


def descendants(workflow: Workflow, agent_id: str) -> list[str]:
    """Every agent that depends on ``agent_id``, directly or transitively, in plan order."""
    dependents: dict[str, list[str]] = {a.id: [] for a in workflow.agents}
    for a in workflow.agents:
        for d in a.depends:
            if d in dependents:
                dependents[d].append(a.id)
    seen: set[str] = set()
    todo = [agent_id]
    while todo:
        for child in dependents.get(todo.pop(), []):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return [a.id for a in workflow.agents if a.id in seen]


def with_descendants(workflow: Workflow, agent_ids: list[str]) -> set[str]:
    """``agent_ids`` and every agent that depends on one of them: what runs again when they
    are retried (a follow-up run's ``rerun``)."""
    again = set(agent_ids)
    for agent_id in agent_ids:
        again.update(descendants(workflow, agent_id))
    return again


def ancestors(workflow: Workflow, agent_id: str) -> set[str]:
    """Every agent ``agent_id`` depends on, directly or transitively."""
    by_id = {a.id: a for a in workflow.agents}
    seen: set[str] = set()
    todo = list(by_id[agent_id].depends) if agent_id in by_id else []
    while todo:
        d = todo.pop()
        if d not in seen and d in by_id:
            seen.add(d)
            todo.extend(by_id[d].depends)
    return seen


# -- the seed's agent tree -----------------------------------------------------------------


def build_agent_tree(agents: list[WorkflowAgent]) -> WorkflowNode:
    """The seed's tree: levels as nodes linked by ``nextAgent``.

    A level with one agent is a ``normal`` node; several agents are a ``parallel`` node
    whose ``agents`` are normal nodes. Entry agents (no dependencies) form the first
    level, so independent starters run in parallel. Cycles raise, naming the cycle.
    """
    if not agents:
        raise WorkflowValidationError([Problem("a plan needs at least one agent")])
    wf = Workflow(name="", task_id="tree", agents=agents)
    if not any(not a.depends for a in agents):
        cycles = find_cycles(agents)
        msg = "; ".join(" → ".join(c) for c in cycles) or "every agent has dependencies"
        raise WorkflowValidationError([Problem(f"no entry agent: dependency cycle {msg}")])
    by_id = {a.id: a for a in agents}
    head: WorkflowNode | None = None
    for level in reversed(levels(wf)):
        if len(level) == 1:
            node = WorkflowNode(type="normal", agent=by_id[level[0]], next_agent=head)
        else:
            node = WorkflowNode(
                type="parallel",
                agents=[WorkflowNode(type="normal", agent=by_id[i]) for i in level],
                next_agent=head,
            )
        head = node
    assert head is not None
    return head


class SimpleAgent(BaseModel):
    """One step for :func:`build_simple_agent_workflow`."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid")
    name: str
    task: str
    input: str | None = None
    config: dict[str, Any] | None = None
    depends_on_previous: bool = Field(default=False, alias="dependsOnPrevious")


def build_simple_agent_workflow(
    name: str,
    agents: list[SimpleAgent | Mapping[str, Any]],
    task_id: str | None = None,
) -> Workflow:
    """The seed's ``buildSimpleAgentWorkflow``: ids 1..n, ``dependsOnPrevious`` chains a step."""
    out: list[WorkflowAgent] = []
    for i, raw in enumerate(agents):
        step = raw if isinstance(raw, SimpleAgent) else SimpleAgent.model_validate(raw)
        out.append(
            WorkflowAgent(
                id=str(i + 1),
                name=step.name,
                task=step.task,
                input=step.input,
                config=step.config,
                depends=[str(i)] if step.depends_on_previous and i > 0 else [],
            )
        )
    return Workflow(name=name, task_id=task_id or str(uuid.uuid4()), agents=out)
