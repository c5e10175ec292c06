"""watch made durable: an agent that runs again each time something changes.

A plan says::

    <agent name="llm" id="w"><task>Answer the new message: {{item}}</task>
      <config>{"watch": {"event": "dom", "url": "https://chat.example/room", "selector": "#log",
                         "every": 2, "maxFirings": 10, "minInterval": 5, "idleTimeout": 3600}}</config>
    </agent>

When ``w`` is ready the leader writes the plan's next version with a *poll* ``w.poll[1]``: the
``watch`` tool, run as an activity on a worker (heartbeating, on the queue of the kind that can
look: a browser for ``dom``), that reads the page (``dom``: its text through Chromium; ``http``:
the response; ``file``: a workspace file; ``timer``: nothing, it waits ``every`` seconds) every
``every`` seconds until it differs from what the last poll saw, or ``idleTimeout`` passes.
Each change *fires* the watch: a *firing* ``w[k]`` — a copy of ``w`` whose ``{{item}}`` is what
the page says now — runs the agent's work, and (with ``loop``, below ``maxFirings``) the next
poll ``w.poll[k+1]`` goes on watching from the last poll's fingerprint, waiting ``minInterval``
seconds first. When the watch ends (its limit, its idle timeout, or ``loop`` false) ``w`` itself
gathers its firings' results in order into a JSON list, as a forEach does.

Every poll and every firing is an activity of its own, and the watch's progress is the plan's
versions: a worker lost while polling polls again from the same fingerprint (nothing missed,
nothing fired twice), a server restart changes nothing, and the board shows the polls and
the firings. The limits are required: a watch that never ends is a run that never ends.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal, get_args

from pydantic import Field, ValidationError, field_validator

from xsky.errors import Problem
from xsky.kinds import TOOL_AGENT_KINDS
from xsky.plan.models import Step, Workflow, WorkflowAgent, plain_error, unused_id
from xsky.wire import WireModel

WATCH = "watch"  # the config key, and the direct tool of a poll
Event = Literal["dom", "http", "file", "timer"]
# The kind whose workers can look: a page's DOM needs Chromium (the browser queue), a file
# the run's workspace (the file queue); the rest runs on any model worker's queue.
POLL_KIND: dict[str, str] = {"dom": "browser", "file": "file", "http": "llm", "timer": "llm"}
MAX_IDLE = 7 * 24 * 3600
_POLL = re.compile(r"^(.+)\.poll\[([1-9][0-9]{0,4})\]$")
TEXT_CHARS = 2000  # of what a page says now, given to a firing (the tail: new lines come last)


class WatchSpec(WireModel):
    """What a watch looks at, how often, and its limits (required: maxFirings, idleTimeout)."""

    event: Event
    url: str | None = None
    selector: str | None = None
    path: str | None = None
    every: float = Field(2.0, ge=0.2, le=3600, description="seconds between looks")
    max_firings: int = Field(ge=1, le=1000)
    min_interval: float = Field(
        0.0, ge=0, le=86400, description="seconds between firings, at least"
    )
    idle_timeout: float = Field(gt=0, le=MAX_IDLE, description="seconds without a change: it ends")
    loop: bool = True
    # A condition that ends the watch: a change whose text matches this regular expression
    # (Python's, searched, case-insensitive) fires once more and the watch ends after it.
    until: str | None = None

    @field_validator("until")
    @classmethod
    def _compiles(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                re.compile(v)
            except re.error as e:
                raise ValueError(f"until is not a regular expression ({e})") from None
        return v


EXAMPLE = (
    '{"watch": {"event": "dom", "url": "https://…", "selector": "#log", "maxFirings": 10, '
    '"idleTimeout": 3600}}'
)


def spec_of(agent: WorkflowAgent) -> WatchSpec | None:
    """The agent's watch, or None (not a watch, or one whose config does not read)."""
    raw = (agent.config or {}).get(WATCH)
    if not isinstance(raw, dict):
        return None
    try:
        return WatchSpec.model_validate(raw)
    except ValidationError:
        return None


def watch_problems(raw: Any) -> list[str]:
    """What is wrong with a config's ``watch`` (empty when fine)."""
    if not isinstance(raw, dict):
        return [f"config watch must be an object, e.g. {EXAMPLE}"]
    try:
        spec = WatchSpec.model_validate(raw)
    except ValidationError as e:
        said = []
        for err in e.errors():
            where = ".".join(str(p) for p in err["loc"])
            if err["type"] == "missing" and where == "event":
                said.append(f"config watch needs event: one of {', '.join(get_args(Event))}")
            elif err["type"] == "missing":
                said.append(
                    f"config watch needs {where} (its limit is required: a watch that never ends "
                    "is a run that never ends)"
                )
            else:
                said.append(f"config watch {where} {plain_error(err)}")
        return [f"{s}; e.g. {EXAMPLE}" for s in said]
    if spec.event in ("dom", "http") and not (spec.url or "").strip():
        return [f'config watch of event "{spec.event}" needs a "url" (http or https)']
    if spec.event == "file" and not (spec.path or "").strip():
        return ['config watch of event "file" needs a "path" in the run\'s workspace']
    return []


def poll_of(agent_id: str) -> tuple[str, int] | None:
    """(the watch's id, the poll's number) for a poll's id (``w.poll[3]``), else None."""
    m = _POLL.match(agent_id)
    return (m[1], int(m[2])) if m else None


def poll_said(result: str | None) -> str | None:
    """A poll's answer (the watch tool's JSON) as a person reads it — what changed, or why
    nothing fired — without the fingerprint it carries for the next poll; None if ``result``
    is not one (a poll skipped by hand holds what the person said)."""
    try:
        seen = json.loads(result or "")
    except (ValueError, RecursionError):
        return None
    if not isinstance(seen, dict) or not isinstance(seen.get("fired"), bool):
        return None
    if seen["fired"]:
        return f"changed — now: {seen.get('text') or '(no text)'}"
    return f"did not fire: {seen.get('why') or 'no change'}"


def started(wf: Workflow, watch_id: str) -> bool:
    return any(a.id == f"{watch_id}.poll[1]" for a in wf.agents)


def _poll(
    watch: WorkflowAgent, spec: WatchSpec, k: int, since: str | None, depends: list[str]
) -> WorkflowAgent:
    what = spec.url or spec.path or f"every {spec.every:g}s"
    args: dict[str, Any] = {
        "tool": WATCH,
        "event": spec.event,
        "every": spec.every,
        "wait": spec.idle_timeout,
        "firing": k,
        "maxFirings": spec.max_firings,
        # a poll waits up to idleTimeout for a change, heartbeating: its attempt may take that long
        "startToCloseTimeout": spec.idle_timeout + spec.min_interval + 300,
    }
    for key, value in (("url", spec.url), ("selector", spec.selector), ("path", spec.path)):
        if value is not None:
            args[key] = value
    if since is not None:
        if since:  # (none after a firing by hand: the next poll takes its first look as baseline)
            args["since"] = since
        args["waitFirst"] = spec.min_interval
    return WorkflowAgent(
        id=f"{watch.id}.poll[{k}]",
        name=POLL_KIND[spec.event],
        task=f"Watch {what} for a change ({spec.event}; firing {k} of at most {spec.max_firings})",
        config=args,
        depends=depends,
    )


def _replace(
    wf: Workflow, watch_id: str, before: list[WorkflowAgent], watch: WorkflowAgent
) -> Workflow:
    agents: list[WorkflowAgent] = []
    for a in wf.agents:
        agents += [*before, watch] if a.id == watch_id else [a]
    return wf.model_copy(update={"agents": agents})


def start(wf: Workflow, watch_id: str) -> Workflow:
    """The plan with watch ``watch_id``'s first poll, the watch waiting on it."""
    watch = wf.agent(watch_id)
    spec = spec_of(watch)
    assert spec is not None
    first = _poll(watch, spec, 1, None, list(watch.depends))
    return _replace(wf, watch_id, [first], watch.model_copy(update={"depends": [first.id]}))


def _firings(wf: Workflow, watch_id: str) -> list[WorkflowAgent]:
    prefix = f"{watch_id}["
    return [
        a
        for a in wf.agents
        if a.id.startswith(prefix) and a.id[len(prefix) :].rstrip("]").isdigit()
    ]


def polled(wf: Workflow, poll_id: str, result: str | None) -> tuple[Workflow, str]:
    """The plan after poll ``poll_id`` answered ``result`` (the watch tool's JSON): a firing
    and the next poll, or the watch gathering its firings; and the line that says which."""
    watch_id, k = poll_of(poll_id) or ("", 0)
    watch = next((a for a in wf.agents if a.id == watch_id), None)
    spec = spec_of(watch) if watch is not None else None
    if watch is None or spec is None:  # replanned away, or already gathering: nothing grows
        return wf, ""
    try:
        seen = json.loads(result or "")
        fired, fingerprint, text = bool(seen["fired"]), str(seen["hash"]), str(seen.get("text", ""))
    except (ValueError, KeyError, TypeError, RecursionError):
        # Not the watch tool's answer: a person or a system fired the watch by skipping its
        # poll with what happened as the result. The next poll starts from what it sees.
        fired, fingerprint, text = bool((result or "").strip()), "", result or ""
    firings = _firings(wf, watch_id)
    added: list[WorkflowAgent] = []
    if fired:
        config = {key: v for key, v in (watch.config or {}).items() if key != WATCH} or None
        firing = watch.model_copy(
            update={
                "id": f"{watch_id}[{k}]",
                "config": config,
                "item": text[-TEXT_CHARS:] or "(changed)",
                "depends": [poll_id],
            }
        )
        if "{{" not in watch.task.replace(" ", "") and not watch.input:
            firing = firing.model_copy(
                update={"input": f"What changed (firing {k}):\n{{{{item}}}}"}
            )
        added.append(firing)
        firings.append(firing)
    met = fired and spec.until is not None and re.search(spec.until, text, re.I) is not None
    if fired and spec.loop and k < spec.max_firings and not met:
        nxt = _poll(watch, spec, k + 1, fingerprint, [poll_id])
        added.append(nxt)
        line = f"watch {watch_id}: firing {k} ({watch_id}[{k}]), watching on ({nxt.id})"
        return _replace(
            wf,
            watch_id,
            added,
            watch.model_copy(update={"depends": [nxt.id, *(f.id for f in firings)]}),
        ), line
    why = (
        f"what changed matches its condition (until {spec.until!r})"
        if met
        else f"{spec.max_firings} firing(s), its limit"
        if fired and k >= spec.max_firings
        else "it does not loop"
        if fired
        else f"no change within {spec.idle_timeout:g}s"
    )
    gather = watch.model_copy(
        update={
            "name": watch.name if watch.name in TOOL_AGENT_KINDS else "llm",
            "task": f"Gather the results of the {len(firings)} firing(s) of watch {watch_id}, in order",
            "config": {
                "tool": "gather",
                "items": [f"{{{{agent_{f.id}_result}}}}" for f in firings],
            },
            "steps": [],
            "input": None,
            "depends": [f.id for f in firings] or [poll_id],
        }
    )
    line = f"watch {watch_id} ended after {len(firings)} firing(s): {why}"
    return _replace(wf, watch_id, added, gather), line


# -- Eko's <watch> among an agent's steps -----------------------------------------------------------

# Eko's watches name no limits: these apply, said in the plan's first version.
EKO_DEFAULTS = {"every": 2.0, "maxFirings": 10, "minInterval": 5.0, "idleTimeout": 3600.0}


def nested_watch_problems(wf: Workflow) -> list[Problem]:
    """A page's ``<watch>`` inside a ``<forEach>``: the loop's items become agents and each
    would watch the list's gathered result as if it were a page's URL — a watch that cannot
    work. Eko flattens the watch into the loop's steps; here it is said, with the fix."""
    problems = []

    def inside_loop(steps: list[Step], looped: bool) -> bool:
        return any(
            (looped and s.kind == "watch" and s.event == "dom")
            or inside_loop(s.steps, looped or s.kind == "forEach")
            for s in steps
        )

    for i, agent in enumerate(wf.agents):
        if inside_loop(agent.steps, False):
            problems.append(
                Problem(
                    f'agent {agent.id}: a <watch event="dom"> inside a <forEach> cannot be made '
                    "durable (each item would watch the list's result, not a page): put the watch "
                    "in an agent of its own after the loop, or write what to check as a plain "
                    "<node> of the loop",
                    agent_index=i,
                    agent_id=agent.id,
                )
            )
    return problems


def lower_watches(wf: Workflow) -> tuple[Workflow, list[str]]:
    """Each agent whose steps hold a ``<watch event="dom">`` after steps that reach the page:
    ``A.page`` (those steps, answering with the page's URL) and ``A``, a durable watch of that
    page whose firings do the trigger's steps, with :data:`EKO_DEFAULTS` as its limits. Other
    events (Eko's ``gui``, a ``file`` with no path) stay instructions to the agent."""
    taken = {a.id for a in wf.agents}
    agents: list[WorkflowAgent] = []
    said: list[str] = []
    for agent in wf.agents:
        at = next((i for i, s in enumerate(agent.steps) if s.kind == "watch"), None)
        step = agent.steps[at] if at is not None else None
        if (
            step is None
            or at is None
            or step.event != "dom"
            or at == 0
            or WATCH in (agent.config or {})
        ):
            agents.append(agent)
            continue
        page_id = unused_id(f"{agent.id}.page", taken)
        page = agent.model_copy(
            update={
                "id": page_id,
                "task": f"{agent.task}\n\nDo only these steps, then answer with only the URL of the page "
                "you end on (http or https).",
                "steps": agent.steps[:at],
            }
        )
        spec = {
            "event": "dom",
            "url": f"{{{{agent_{page_id}_result}}}}",
            "loop": step.loop,
            **EKO_DEFAULTS,
        }
        about = f" ({step.description})" if step.description else ""
        watcher = agent.model_copy(
            update={
                "task": f"{agent.task}\n\nThe page changed{about}: do the steps for what changed.",
                "steps": step.steps,
                "config": {**(agent.config or {}), WATCH: spec},
                "depends": [*agent.depends, page_id],
            }
        )
        agents += [page, watcher]
        limits = ", ".join(f"{k} {v:g}" for k, v in EKO_DEFAULTS.items())
        said.append(
            f"watch of agent {agent.id} made durable: {page_id} → {agent.id} (limits: {limits})"
        )
    return wf.model_copy(update={"agents": agents}), said
