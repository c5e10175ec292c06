"""An agent's ``<config>``: the reserved keys xsky reads, the rest are tool arguments.

Reserved keys (camelCase, as on the wire):

* ``tool`` — run this tool directly with the other keys as its arguments (no LLM): one of
  ``xsky.security.tools.DIRECT_TOOLS``, or a tool of an MCP server (``mcp__<server>__<tool>``,
  which only the worker that runs it knows);
* ``startToCloseTimeout``, ``heartbeatTimeout`` — seconds, per attempt;
* ``retry`` — ``{"maximumAttempts": 3, "initialInterval": 1, "backoffCoefficient": 2,
  "maximumInterval": 30}``;
* ``retries`` — how often a deterministic failure (a non-zero exit, an HTTP 4xx, a refused
  argument) is tried again, 0–10 (default 0: such a failure is final on its first attempt,
  and no automatic replan follows it); transient failures are retried by ``retry`` anyway;
* ``stall`` — ``false`` to switch the stall ladder off for this agent, or
  ``{"nudgeAfter": 180, "restartAfter": 420}`` (seconds without progress);
* ``model``, ``maxIterations``, ``temperature`` — for LLM agents;
* ``output`` — the JSON Schema of the agent's result (``<output>`` in XML writes it here;
  :mod:`xsky.plan.output_schema`);
* ``budget`` — the agent's own cap, ``{"tokens": 20000, "usd": 0.5, "minutes": 10}``: it
  narrows the run's per-agent and per-role caps (:mod:`xsky.plan.budget`).
"""

from __future__ import annotations

import difflib
from collections.abc import Collection
from typing import Any

from pydantic import Field, ValidationError, model_validator

from xsky.errors import Problem
from xsky.plan.budget import budget_problems
from xsky.plan.models import Step, Workflow, WorkflowAgent
from xsky.plan.variables import nearest
from xsky.plan.watches import WATCH, WatchSpec, watch_problems
from xsky.security.mcp import is_mcp, is_tool_name

# DIRECT_TOOLS: the registry's direct tools, llm and noop
from xsky.security.tools import DIRECT_TOOLS, TOOLS
from xsky.wire import WireModel

# Seconds Temporal waits before any retry of an agent's attempt under the flat policy (see
# RetryOptions.wait_after): a lost worker's attempt is retried this soon.
FLAT_RETRY = 1.0


class RetryOptions(WireModel):
    """Bounded retries for one agent's activity (Temporal's default retries forever).

    The backoff (``initial_interval`` × ``backoff_coefficient`` ^ (errors − 1), at most
    ``maximum_interval``) is between attempts that ended in an *error*. An attempt lost with
    its worker is retried at once: Temporal's policy for the attempt is flat (``FLAT_RETRY``)
    and the attempt after an error waits the rest of its backoff itself, before it runs."""

    maximum_attempts: int = Field(3, ge=1, le=50)
    initial_interval: float = Field(1.0, gt=0, le=3600, description="seconds")
    backoff_coefficient: float = Field(2.0, ge=1, le=10)
    maximum_interval: float = Field(30.0, gt=0, le=86400, description="seconds")

    def flat_interval(self) -> float:
        """Seconds Temporal waits before every retry under the flat policy."""
        return min(FLAT_RETRY, self.initial_interval)

    def backoff(self, errors: int) -> float:
        """Seconds between the ``errors``-th error and the attempt after it (0 before any)."""
        if errors < 1:
            return 0.0
        exponent = min(errors - 1, 64)  # past this the cap has long been reached
        return min(
            self.maximum_interval, self.initial_interval * self.backoff_coefficient**exponent
        )

    def wait_after(self, errors: int) -> float:
        """Seconds an attempt that follows the ``errors``-th error waits before it runs: its
        backoff less the flat interval Temporal already waited."""
        return max(0.0, self.backoff(errors) - self.flat_interval()) if errors else 0.0


class StallWindows(WireModel):
    """Seconds without progress before each step of the stall ladder."""

    enabled: bool = True
    nudge_after: float = Field(180.0, gt=0)
    restart_after: float = Field(420.0, gt=0)

    @model_validator(mode="after")
    def _ordered(self) -> StallWindows:
        if self.restart_after <= self.nudge_after:
            raise ValueError("restartAfter must be longer than nudgeAfter")
        return self


RESERVED_KEYS = frozenset(
    {
        "tool",
        "startToCloseTimeout",
        "heartbeatTimeout",
        "retry",
        "retries",
        "stall",
        "model",
        "maxIterations",
        "temperature",
        "output",
        "budget",
    }
)


def tool_name(config: dict[str, Any] | None) -> str | None:
    if not config:
        return None
    tool = config.get("tool")
    return tool if isinstance(tool, str) else None


def tool_arguments(config: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (config or {}).items() if k not in RESERVED_KEYS}


MAX_RETRIES = 10


def deterministic_retries(config: dict[str, Any] | None) -> int:
    """``<config>{"retries": N}``: how often this agent's deterministic failures are tried
    again (0 when absent or not valid: config_problems reports a bad value at parse)."""
    value = (config or {}).get("retries")
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_RETRIES:
        return 0
    return value


def stall_windows(config: dict[str, Any] | None, default: StallWindows) -> StallWindows:
    """The agent's stall windows: its config's ``stall`` over the run's."""
    value = (config or {}).get("stall")
    if value is None:
        return default
    if value is False:
        return default.model_copy(update={"enabled": False})
    return StallWindows.model_validate({**default.model_dump(by_alias=True), **value})


def config_problems(config: dict[str, Any] | None) -> list[str]:
    """What is wrong with the reserved keys of one agent's config (empty when fine)."""
    if not config:
        return []
    problems = []
    tool = config.get("tool")
    if isinstance(tool, str) and is_mcp(tool):
        if not is_tool_name(tool):
            problems.append(
                f"config tool {tool!r} does not name a tool of an MCP server; write mcp__<server>__<tool>, "
                "e.g. mcp__fs__read_text_file"
            )
    elif tool is not None and tool not in DIRECT_TOOLS:
        meant = nearest(tool, DIRECT_TOOLS, cutoff=0.75)
        problems.append(
            f"config tool {tool!r} is not a direct tool{meant}; use one of {', '.join(DIRECT_TOOLS)}, "
            "or a tool of an MCP server (mcp__<server>__<tool>)"
        )
    if "watch" in config:
        problems += watch_problems(config["watch"])
    for key in ("startToCloseTimeout", "heartbeatTimeout"):
        if key in config:
            value = config[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                problems.append(f"config {key} must be a positive number of seconds, not {value!r}")
    if "retry" in config:
        if not isinstance(config["retry"], dict):
            problems.append('config retry must be an object such as {"maximumAttempts": 3}')
        else:
            try:
                RetryOptions.model_validate(config["retry"])
            except ValidationError as e:
                detail = "; ".join(
                    f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors()
                )
                problems.append(f"config retry is not valid ({detail})")
    if "retries" in config:
        value = config["retries"]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_RETRIES:
            problems.append(
                f"config retries must be a whole number from 0 to {MAX_RETRIES}, not {value!r}"
            )
    if "stall" in config:
        value = config["stall"]
        if value is not False and not isinstance(value, dict):
            problems.append(
                'config stall must be false or an object such as {"nudgeAfter": 180, "restartAfter": 420}'
            )
        elif isinstance(value, dict):
            try:
                StallWindows.model_validate(value)
            except ValidationError as e:
                detail = "; ".join(
                    f"{'.'.join(map(str, err['loc'])) or 'stall'}: {err['msg']}"
                    for err in e.errors()
                )
                problems.append(f"config stall is not valid ({detail})")
    if "maxIterations" in config:
        value = config["maxIterations"]
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 200:
            problems.append(
                f"config maxIterations must be a whole number from 1 to 200, not {value!r}"
            )
    if "budget" in config:
        problems += budget_problems(config["budget"])
    return problems


# A direct tool's example for each kind that acts only through tools (shown in the fixes).
_KIND_EXAMPLES = {
    "shell": '{"tool": "shell", "command": "…"}',
    "browser": '{"tool": "browser_navigate", "url": "…"}',
    "file": '{"tool": "file_read", "path": "…"}',
}


def kind_example(kind: str) -> str:
    """A direct tool call for an agent of ``kind`` (the same fix ``validate`` shows)."""
    return _KIND_EXAMPLES.get(kind, _KIND_EXAMPLES["shell"])


def direct_argument_problems(workflow: Workflow) -> list[Problem]:
    """A direct tool without an argument it cannot run without (``shell`` and no
    ``command``): it would fail at once on every worker. Checked where plans are loaded
    (validate, run), not by the run itself: a run recorded before this check keeps its course."""
    problems = []
    for i, agent in enumerate(workflow.agents):
        tool = tool_name(agent.config)
        spec = TOOLS.get(tool) if tool else None
        if spec is None:
            continue
        args = tool_arguments(agent.config)
        for key, info in spec.args.model_fields.items():
            value = args.get(key)
            blank = not isinstance(value, str) or (key != "content" and not value.strip())
            if info.is_required() and info.annotation is str and blank:
                # a key no tool reads may be this argument under another name (walk12: "cmd"
                # for "command" said only "has no command", "cmd" itself unnamed)
                # (a near miss of another key is said as that key's typo: config_key_problems)
                unread = [
                    k
                    for k in agent.config or {}
                    if k not in _CONFIG_KEYS and not _mistyped([k], _CONFIG_KEYS)
                ]
                instead = (
                    f" ({', '.join(repr(k) for k in unread)} in its config "
                    f"{'is' if len(unread) == 1 else 'are'} read by nothing: write it as {key!r})"
                    if unread
                    else ""
                )
                problems.append(
                    Problem(
                        f"agent {agent.id} ({tool}) has no {key}{instead}: add it to its config, "
                        f'e.g. <config>{{"tool": "{tool}", "{key}": "…"}}</config>',
                        agent_index=i,
                        agent_id=agent.id,
                    )
                )
    return problems


# Every key a <config> is read for: the reserved ones, and the arguments of the direct tools.
_CONFIG_KEYS = RESERVED_KEYS | {
    "watch",
    "idempotent",
    "allowFailure",
    "seconds",
    "items",
    "method",
    "headers",
    "since",
    "format",
    "screenshot",
    "values",
    *(key for spec in TOOLS.values() for key in spec.args.model_fields),
}


_OWN_KEYS = RESERVED_KEYS | {"watch", "idempotent"}


def _mistyped(keys: Collection[str], known: Collection[str]) -> list[tuple[str, str]]:
    """(key, the known one it is close to) for each key that is not known but nearly one."""
    out = []
    for key in keys:
        if key not in known:
            close = difflib.get_close_matches(key, list(known), n=1, cutoff=0.8)
            if close:
                out.append((key, close[0]))
    return out


def config_key_problems(workflow: Workflow) -> list[Problem]:
    """A ``watch`` key no watch reads, and any ``<config>`` key that is nearly a known one: a
    typo is read as nothing at all ("untill" turned a watch's stop condition off). Checked where
    plans are loaded (validate, run, the API), not by the run itself (a running plan's config
    is read as it always was)."""
    problems = []
    # (a watch reads its fields by alias and by name: maxFirings and max_firings alike)
    watch_keys = {f.alias or name for name, f in WatchSpec.model_fields.items()} | set(
        WatchSpec.model_fields
    )
    for i, agent in enumerate(workflow.agents):
        config = agent.config or {}
        tool = config.get("tool")
        # an MCP tool's arguments are its server's own ("paths", "urls"): only a near miss of a
        # key xsky reads for every agent is a typo there ("retires" would go to the server)
        known = _OWN_KEYS if isinstance(tool, str) and is_mcp(tool) else _CONFIG_KEYS
        for key, meant in _mistyped(config, known):
            problems.append(
                Problem(
                    f"agent {agent.id}: config key {key!r} is read by nothing — did you mean "
                    f"{meant!r}? (as written it is ignored)",
                    agent_index=i,
                    agent_id=agent.id,
                )
            )
        watch = config.get("watch")
        shown = {f.alias or name for name, f in WatchSpec.model_fields.items()}
        if isinstance(watch, dict):
            for key in watch:
                if key in watch_keys:
                    continue
                close = difflib.get_close_matches(key, sorted(shown), n=1, cutoff=0.6)
                hint = f"did you mean {close[0]!r}? " if close else ""
                problems.append(
                    Problem(
                        f"agent {agent.id}: config watch has {key!r}, which no watch reads — "
                        f"{hint}(it would be ignored; a watch reads {', '.join(sorted(shown))})",
                        agent_index=i,
                        agent_id=agent.id,
                    )
                )
    return problems


def plan_warnings(workflow: Workflow) -> list[Problem]:
    """What runs on some workers only: a shell, browser or file agent without a tool in its
    ``<config>`` needs a model to choose its calls (activities/agents/direct.py), and fails at
    once on a worker without one — which only the worker knows."""
    warnings = []
    for i, agent in enumerate(workflow.agents):
        if tool_name(agent.config) is None and "timeout" in (agent.config or {}):
            warnings.append(
                Problem(
                    f"agent {agent.id}: config key 'timeout' is a direct tool's (the seconds a "
                    "command, a page or a request may take): this agent has no tool, and its "
                    "model's calls do not read it — its attempt's limit is "
                    '"startToCloseTimeout" (s)',
                    agent_index=i,
                    agent_id=agent.id,
                )
            )
        if agent.name in _KIND_EXAMPLES and tool_name(agent.config) is None:
            what = "command" if agent.name == "shell" else "tool"
            warnings.append(
                Problem(
                    f"agent {agent.id} ({agent.name}) has no {what}: it runs only on a worker with a model "
                    "(XSKY_MODEL and OPENAI_API_KEY / OPENAI_BASE_URL) to choose its calls, and fails at once "
                    f"without one; for a fixed call add <config>{_KIND_EXAMPLES[agent.name]}</config>",
                    agent_index=i,
                    agent_id=agent.id,
                )
            )
        elif (
            agent.name == "llm"
            and tool_name(agent.config) is None
            and not agent.depends
            and not (agent.input or "").strip()
            and agent.for_each is None
        ):
            warnings.append(
                Problem(
                    f"agent {agent.id} (llm) has no <input> and depends on no agent: it runs only on "
                    "a worker with a model (XSKY_MODEL and OPENAI_API_KEY / OPENAI_BASE_URL); the "
                    "offline llm answers only from what it is given, and fails at once — give it "
                    "<input>…</input>, or depend on the agent whose result it works from",
                    agent_index=i,
                    agent_id=agent.id,
                )
            )
        warnings += _empty_steps(i, agent)
    return warnings


def _empty_steps(index: int, agent: WorkflowAgent) -> list[Problem]:
    """Steps that give the agent's model nothing to do: an empty <node>, a <forEach> or a
    watch's <trigger> with no steps (an LLM planner writes them; they run, as Eko runs them)."""
    found: list[Problem] = []
    # the one dom watch made durable as the run begins (xsky.plan.watches.lower_watches)
    first = next((n for n, s in enumerate(agent.steps) if s.kind == "watch"), None)
    durable = (
        (first,)
        if first and agent.steps[first].event == "dom" and WATCH not in (agent.config or {})
        else None
    )

    def walk(steps: list[Step], path: tuple[int, ...], looped: bool = False) -> None:
        for n, step in enumerate(steps):
            at = (*path, n)
            where = ".".join(str(p + 1) for p in at)
            if step.kind == "node" and not step.text.strip():
                said = f"agent {agent.id}, step {where} is empty: it gives the agent nothing to do; write what the step does, or remove it"
            elif step.kind in ("forEach", "watch") and not step.steps:
                what = "for each item" if step.kind == "forEach" else "when it fires"
                said = f"agent {agent.id}, step {where} (<{step.kind}>) holds no steps: it does nothing {what}; give it steps, or remove it"
            elif step.kind == "watch" and step.event != "dom":
                # Only a dom watch becomes durable (the page comes from the steps before it);
                # an Eko <watch> names no file, URL or timer for any other event.
                shown = f'<watch event="{step.event}">' if step.event else "<watch> with no event"
                said = (
                    f"agent {agent.id}, step {where}: {shown} is given to the "
                    "model as an instruction — nothing watches durably (Eko's watch names no path "
                    'or URL); for a durable watch use <config>{"watch": {"event": "file", '
                    '"path": "…", "maxFirings": 10, "idleTimeout": 3600}}</config>'
                )
            elif step.kind == "watch" and at != durable and not looped:
                # (a dom watch in a loop is refused: xsky.plan.watches.nested_watch_problems)
                why = (
                    "no step before it opens the page it watches (Eko's Browser agents share the "
                    "page an earlier one left open; here each starts on a blank page)"
                    if at == (0,)
                    else "only an agent's first watch, among its top steps, is made durable"
                )
                said = (
                    f'agent {agent.id}, step {where}: <watch event="dom"> is given to the model '
                    f"as an instruction — {why}, so nothing watches durably; open the page in a "
                    "step before the watch, or write a native watch "
                    '(<config>{"watch": {"event": "dom", "url": "…", …}}</config>)'
                )
            else:
                walk(step.steps, at, looped or step.kind == "forEach")
                continue
            found.append(Problem(said, agent_index=index, agent_id=agent.id, step=at))

    walk(agent.steps, ())
    return found
