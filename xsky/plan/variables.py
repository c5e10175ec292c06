"""``{{…}}`` references in a plan: finding, checking and rendering them.

Three kinds, all written ``{{ … }}`` (spaces inside the braces are allowed):

* ``{{agent_3_result}}`` — the result of agent 3, which the agent must depend on
  (directly or transitively); ``{{agent_3_result.title}}`` reaches into a JSON result
  (an agent with an ``<output>`` schema: :mod:`xsky.plan.fields`);
* ``{{topic}}`` — a workflow variable, declared in ``<variables>`` or given with ``--var``;
* ``{{context.user_input}}`` — a value from the run's context (dots reach nested keys).

Only the ``task``, ``input`` and the string values of ``config`` are rendered. Text like
``{{ not a name }}`` that is not a single name is left alone.

**Data is never pasted into code.** In the ``command`` of a ``shell`` tool every value
becomes a shell variable set before the command runs (``"${XSKY_V1}"`` stands where the
reference stood), so a result that says ``$(rm -rf ~)`` is printed, not run
(:func:`render_command`). ``{{raw:name}}`` pastes a variable or context value as written, for
people who pass shell syntax on purpose; it is refused for agent results, which may come
from a web page or a model.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from xsky.artifacts import is_marker
from xsky.errors import Problem, UsageError
from xsky.plan import steps
from xsky.plan.fields import field_value
from xsky.plan.models import Workflow, WorkflowAgent

# ([…] in a name: `agent_3[2]_result`, a forEach item's result, xsky.plan.loops)
REF_RE = re.compile(r"\{\{\s*((?:raw:)?[A-Za-z_][A-Za-z0-9_.\[\]-]*)\s*\}\}")
RAW = "raw:"
# ``agent_<id>_result`` and ``agent_<id>_result.<field>.<field>`` (a JSON result's field):
# the shortest id that leaves a valid rest, so an id holding "_result" still reads whole.
_AGENT_REF = re.compile(r"^agent_(.+?)_result(?:\.([A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*))?$")

RefKind = Literal["agent", "variable", "context"]

# {{item}} and {{item_index}}: a forEach item's text and number, a watch firing's change
# (xsky/plan/loops.py, xsky/plan/watches.py): values only those agents have.
ITEM = "item"
ITEM_INDEX = "item_index"
ITEM_NAMES = (ITEM, ITEM_INDEX)


@dataclass(frozen=True)
class Reference:
    kind: RefKind
    key: str  # agent id, variable name or context key
    text: str  # as written, e.g. "{{agent_3_result}}"
    raw: bool = False  # {{raw:…}}: pasted into a shell command as written
    field: str | None = None  # {{agent_3_result.title}}: a field of a JSON result


class RenderError(ValueError):
    """A reference has no value at render time."""


def classify(name: str, text: str) -> Reference:
    raw = name.startswith(RAW)
    name = name.removeprefix(RAW)
    m = _AGENT_REF.match(name)
    if m:
        return Reference("agent", m.group(1), text, raw, m.group(2))
    if name.startswith("context."):
        return Reference("context", name[len("context.") :], text, raw)
    return Reference("variable", name, text, raw)


def find_references(text: str) -> list[Reference]:
    return [classify(m.group(1), m.group(0)) for m in REF_RE.finditer(text)]


def _config_strings(value: Any, into: list[str] | None = None) -> list[str]:
    """Every string in a config value, depth first in order (a list, not a generator: a
    config is read for every agent of a plan)."""
    found: list[str] = [] if into is None else into
    if isinstance(value, str):
        found.append(value)
    elif isinstance(value, dict | list):
        for v in value.values() if isinstance(value, dict) else value:
            if isinstance(v, str):
                found.append(v)
            elif isinstance(v, dict | list):
                _config_strings(v, found)
    return found


def agent_references(agent: WorkflowAgent) -> list[Reference]:
    """Every reference in the rendered fields of one agent, in order of appearance."""
    return [ref for text in _rendered_texts(agent) for ref in find_references(text)]


_RAW_AGENT = RAW + "agent_"


def check_references(
    workflow: Workflow,
    variables: Collection[str],
    context_keys: Collection[str] | None = None,
) -> list[Problem]:
    """Static check: agent results only from dependencies; known variables and context keys."""
    problems: list[Problem] = []
    by_id: dict[str, WorkflowAgent] | None = None  # made when an agent needs it (rarely)
    memo: dict[str, dict[str, bool]] = {}  # who depends on whom, by target, as found
    var_names = sorted(set(variables))
    findall = REF_RE.findall
    for i, agent in enumerate(workflow.agents):
        # Most agents' references are all results of direct dependencies (the valid, common
        # case; unknown ids are caught by dag): only the others are looked at further.
        others: list[str] = []
        for text in _rendered_texts(agent):
            if "{{" not in text:  # most texts hold no reference: skip the regex
                continue
            depends = agent.depends
            for name in findall(text):
                if not (name[:6] == "agent_" and name[-7:] == "_result" and name[6:-7] in depends):
                    others.append(name)
        if others:
            if by_id is None:
                by_id = {a.id: a for a in workflow.agents}
            problems += _check_others(i, agent, others, by_id, var_names, context_keys, memo)
    return problems


def _check_others(
    i: int,
    agent: WorkflowAgent,
    others: list[str],
    by_id: Mapping[str, WorkflowAgent],
    var_names: list[str],
    context_keys: Collection[str] | None,
    memo: dict[str, dict[str, bool]],
) -> list[Problem]:
    """The problems of an agent's references that are not its direct dependencies' results."""
    problems: list[Problem] = []
    # {{item}} and {{item_index}}: the item of a forEach agent, and only there
    names = [*var_names, *ITEM_NAMES] if looped(agent) else var_names
    for name in dict.fromkeys(others):
        if name.startswith(_RAW_AGENT) and _AGENT_REF.match(name.removeprefix(RAW)):
            problems.append(
                Problem(
                    f"agent {agent.id}: {{{{{name}}}}}: an agent's result is never pasted raw into "
                    f"a command (it may say anything); write {{{{{name.removeprefix(RAW)}}}}} and it "
                    "is quoted for you",
                    agent_index=i,
                    agent_id=agent.id,
                )
            )
            continue
        msg = _check_one(
            classify(name, "{{" + name + "}}"), agent, by_id, names, context_keys, memo
        )
        if msg and name in ITEM_NAMES:
            msg = (
                f"{{{{{name}}}}} is the item of a forEach agent, and agent {agent.id} has no "
                'forEach; add forEach="{{agent_N_result}}" (the list it runs over) to it'
            )
        if msg:
            problems.append(Problem(f"agent {agent.id}: {msg}", agent_index=i, agent_id=agent.id))
    return problems


def _rendered_texts(agent: WorkflowAgent) -> list[str]:
    """The texts of ``agent`` that are rendered, in order (a list, not a generator: a
    10,000-agent plan's references are checked as it is validated, and a generator per agent
    was a tenth of that)."""
    texts = [agent.task]
    if agent.input:
        texts.append(agent.input)
    if agent.config:
        _config_strings(agent.config, texts)
    if agent.for_each is not None:
        texts.append(agent.for_each)
    return texts


def nearest(name: str, names: Collection[str], cutoff: float = 0.6, shape: str = "{!r}") -> str:
    """`` (did you mean 'x'?)`` for the closest of ``names`` to a mistyped ``name``, or "";
    ``shape`` writes the name found (``"<{}>"``: an element's)."""
    close = difflib.get_close_matches(name, list(names), n=1, cutoff=cutoff)
    return f" (did you mean {shape.format(close[0])}?)" if close else ""


def _check_one(
    ref: Reference,
    agent: WorkflowAgent,
    by_id: Mapping[str, WorkflowAgent],
    var_names: list[str],
    context_keys: Collection[str] | None,
    memo: dict[str, dict[str, bool]] | None = None,
) -> str | None:
    if ref.kind == "agent":
        if ref.key not in by_id:
            return (
                f"{ref.text} names no agent of this plan{nearest(ref.key, by_id)}; "
                f"ids: {', '.join(list(by_id)[:12])}"
            )
        if ref.key == agent.id:
            return f"{ref.text} is this agent's own result; an agent can only use results of agents it depends on"
        if any(d not in by_id and nearest(d, [ref.key]) for d in agent.depends):
            return None  # its depends misspells this id: that problem is the one said (dag.py)
        if not _depends_on(agent, ref.key, by_id, memo):
            return f"{ref.text} is used but agent {agent.id} does not depend on agent {ref.key}; add {ref.key} to its depends"
        return None
    if ref.kind == "context":
        if context_keys is not None and ref.key.split(".")[0] not in set(context_keys):
            have = ", ".join(f"context.{k}" for k in sorted(context_keys)) or "none given"
            top, _, rest = ref.key.partition(".")
            how = (
                f"--context {top}=…"
                if not rest
                else f"--context '{top}={{\"{rest.split('.')[0]}\": …}}' (JSON reaches into nested keys)"
            )
            return f"unknown context key {ref.text}; available: {have} (pass {how})"
        return None
    if ref.key not in var_names:
        # Only results that exist: a misspelled dependency has none (dag.py names it).
        available = [f"agent_{d}_result" for d in agent.depends if d in by_id] + var_names
        return (
            f"unknown variable {ref.text}{nearest(ref.key, available)}; available: "
            f"{', '.join(available) or 'none'}"
            f" (declare it in <variables> or pass --var {ref.key}=…)"
        )
    return None


def looped(agent: WorkflowAgent) -> bool:
    """Is the agent a forEach or a watch, or one of their items or firings (its ``{{item}}``
    has a value)?"""
    return agent.for_each is not None or agent.item is not None or "watch" in (agent.config or {})


def item_values(agent: WorkflowAgent) -> dict[str, str]:
    """``{{item}}`` and ``{{item_index}}`` of an item agent (``3[2]``), else nothing."""
    if agent.item is None:
        return {}
    number = agent.id.rsplit("[", 1)[-1].rstrip("]")
    return {ITEM_NAMES[0]: agent.item, ITEM_NAMES[1]: number}


def _depends_on(
    agent: WorkflowAgent,
    target: str,
    by_id: Mapping[str, WorkflowAgent],
    memo: dict[str, dict[str, bool]] | None = None,
) -> bool:
    if memo is None:
        return reaches(agent.depends, target, by_id)
    # Remembered per target: a plan whose every agent names one early agent's result is
    # checked in linear time (walking the chain from each agent was quadratic: 5.5 s for
    # 8,000 agents, in the leader's workflow task when it reads a replan).
    known = memo.setdefault(target, {})
    return target in agent.depends or any(_reached(d, target, by_id, known) for d in agent.depends)


def _reached(
    start: str, target: str, by_id: Mapping[str, WorkflowAgent], known: dict[str, bool]
) -> bool:
    """Is ``start`` ``target``, or does it depend on it? (``known`` remembers each agent's answer.)"""
    if start in known:
        return known[start]
    stack = [start]
    while stack:
        node = stack[-1]
        if node == target or node not in by_id:
            known[node] = node == target
            stack.pop()
            continue
        todo = [d for d in by_id[node].depends if d not in known]
        if todo:
            known.setdefault(node, False)  # in progress: a cycle (refused elsewhere) ends here
            stack.extend(todo)
            continue
        known[node] = any(known[d] for d in by_id[node].depends)
        stack.pop()
    return known[start]


def reaches(depends: list[str], target: str, by_id: Mapping[str, WorkflowAgent]) -> bool:
    """Does an agent with these ``depends`` depend on ``target``, directly or through others?"""
    if target in depends:  # the common case, O(1)-ish
        return True
    seen: set[str] = set()
    todo = list(depends)
    while todo:
        d = todo.pop()
        if d == target:
            return True
        if d in seen or d not in by_id:
            continue
        seen.add(d)
        todo.extend(by_id[d].depends)
    return False


# -- rendering -------------------------------------------------------------------------------


def _lookup_context(context: Mapping[str, Any], key: str) -> Any:
    if key in context:
        return context[key]
    value: Any = context
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            raise RenderError(f"{{{{context.{key}}}}} has no value in the run's context")
        value = value[part]
    return value


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def render(
    text: str,
    results: Mapping[str, str],
    variables: Mapping[str, str],
    context: Mapping[str, Any],
) -> str:
    """Replace every reference in ``text``. Pure: same inputs, same output."""

    return REF_RE.sub(
        lambda m: _value(classify(m.group(1), m.group(0)), results, variables, context), text
    )


def _value(
    ref: Reference,
    results: Mapping[str, str],
    variables: Mapping[str, str],
    context: Mapping[str, Any],
) -> str:
    if ref.kind == "agent":
        if ref.key not in results:
            raise RenderError(f"{ref.text} has no result yet (agent {ref.key} has not completed)")
        if ref.field is None:
            return results[ref.key]
        result = results[ref.key]
        if is_marker(result):
            raise RenderError(
                f"{ref.text}: agent {ref.key}'s result is over the artifact threshold and kept in "
                f"the artifact store, where its fields cannot be read; use {{{{agent_{ref.key}_result}}}} "
                "or ask for a smaller result"
            )
        try:
            return field_value(result, ref.key, ref.field)
        except ValueError as e:
            raise RenderError(str(e)) from None
    if ref.kind == "context":
        return _as_text(_lookup_context(context, ref.key))
    if ref.key not in variables:
        if ref.key in ITEM_NAMES:  # no --var gives it: only a loop's items have one
            raise RenderError(
                f"{ref.text} has no value: only a forEach's items (and a watch's firings) have "
                'one — give this agent forEach="{{…}}", or take the reference out of its task'
            )
        raise RenderError(f"{ref.text} has no value; pass --var {ref.key}=…")
    return variables[ref.key]


SHELL_VALUE = "XSKY_V"  # a value's shell variable: XSKY_V1, XSKY_V2, …
SHELL_VALUE_RE = re.compile(r"^XSKY_V[1-9][0-9]{0,4}$")


def pastes_raw_item(code: str) -> bool:
    """Does a command name ``{{raw:item}}`` (pasted as written before v0.11.11)?"""
    return any(
        classify(m.group(1), m.group(0)).key == ITEM
        for m in REF_RE.finditer(code)
        if m.group(1).startswith(RAW)
    )


def raw_item_problems(workflow: Workflow) -> list[Problem]:
    """``{{raw:item}}`` in a shell command: an item is an agent's result or a page's text, never
    pasted as code — said where the plan is read, as for ``{{raw:agent_N_result}}``."""
    return [
        Problem(
            f"agent {agent.id}: {{{{raw:item}}}}: a forEach or watch item is an agent's result or "
            "a page's text, never pasted raw into a command (it may say anything); write "
            "{{item}} and it is quoted for you",
            agent_index=i,
            agent_id=agent.id,
        )
        for i, agent in enumerate(workflow.agents)
        if isinstance(command := (agent.config or {}).get("command"), str)
        and pastes_raw_item(command)
    ]


def fields_share_a_value(code: str) -> bool:
    """Does a command name one agent's result twice, with different fields
    (``{{agent_1_result.title}}`` and ``{{agent_1_result.url}}``, or the whole result and a
    field)? Before v0.12.3 such references shared one shell variable, and all of them got the
    first one's value."""
    seen: dict[str, str | None] = {}
    for m in REF_RE.finditer(code):
        ref = classify(m.group(1), m.group(0))
        if ref.kind != "agent" or ref.raw:
            continue
        if ref.key in seen and seen[ref.key] != ref.field:
            return True
        seen.setdefault(ref.key, ref.field)
    return False


def render_command(
    code: str,
    results: Mapping[str, str],
    variables: Mapping[str, str],
    context: Mapping[str, Any],
    raw_items: bool = False,
    by_field: bool = True,
) -> tuple[str, dict[str, str]]:
    """``render`` for a shell command: (the command, the values it names).

    No value is written into the command. Each reference becomes a shell variable,
    quoted for where it stands — ``"${XSKY_V1}"`` bare, ``${XSKY_V1}`` inside "…",
    ``'"${XSKY_V1}"'`` inside '…' (closed and reopened) — and its value travels beside the
    command; the shell tool sets the variables before the command runs. Whatever a value
    holds — quotes, ``$(…)``, newlines — bash expands it as data and never reads it as
    code, wherever the reference stands: where this quote tracking is wrong (``$(…)``
    inside "…", a heredoc) the value may be split into words or the name shown, never run.
    ``{{raw:name}}`` pastes a trusted variable as written — not a forEach or watch item
    (``{{raw:item}}``), which is an agent's result or a page's text: it is given as data like
    ``{{item}}`` (``raw_items``: pasted, as before v0.11.11, for a run that rendered so). A
    value that is an artifact marker is expanded by the activity, in the values only.
    ``by_field``: each field of a result is a variable of its own (False: one variable per
    agent, as before v0.12.3 — every field of it got the first one's value).
    """
    out: list[str] = []
    values: dict[str, str] = {}
    names: dict[str, str] = {}  # the same reference twice: one variable
    at = 0
    state = QuoteState()
    for m in REF_RE.finditer(code):
        state.advance(code, at, m.start())
        out.append(code[at : m.start()])
        ref = classify(m.group(1), m.group(0))
        if ref.raw and ref.kind == "agent":
            raise RenderError(
                f"{ref.text}: an agent's result is never pasted raw into code; write "
                f"{{{{agent_{ref.key}_result{'.' + ref.field if ref.field else ''}}}}}"
            )
        value = _value(ref, results, variables, context)
        if ref.raw and not (ref.key == ITEM and not raw_items):
            out.append(value)
        else:
            key = f"{ref.kind}:{ref.key}"
            if by_field and ref.field is not None:
                key += f".{ref.field}"
            if key not in names:
                names[key] = f"{SHELL_VALUE}{len(names) + 1}"
                values[names[key]] = value
            name = "${" + names[key] + "}"
            out.append({"'": f"'\"{name}\"'", '"': name}.get(state.quote, f'"{name}"'))
        at = m.end()
    out.append(code[at:])
    return "".join(out), values


class QuoteState:
    """Whether a single-quoted string is open at a point of a bash command (``quote``:
    ``'``, ``"`` or none). Only the single-quote answer matters to :func:`render_command`,
    and a wrong answer there shows a variable's name, never runs a value."""

    def __init__(self) -> None:
        self.quote = ""

    def advance(self, text: str, start: int, end: int) -> None:
        i = start
        while i < end:
            c = text[i]
            if self.quote == "'":
                if c == "'":
                    self.quote = ""
            elif c == "\\":
                i += 1  # the next character is escaped (outside single quotes)
            elif self.quote == '"':
                if c == '"':
                    self.quote = ""
            elif c in "'\"":
                self.quote = c
            i += 1


def with_values(text: str, variables: Mapping[str, str]) -> str:
    """``text`` with the workflow variables it names replaced by their values; every other
    reference (results, context, unknown names) left as written. For what people read."""
    if "{{" not in text or not variables:
        return text

    def value(m: re.Match[str]) -> str:
        ref = classify(m.group(1), m.group(0))
        return variables[ref.key] if ref.kind == "variable" and ref.key in variables else m.group(0)

    return REF_RE.sub(value, text)


def render_config(
    value: Any, results: Mapping[str, str], variables: Mapping[str, str], context: Mapping[str, Any]
) -> Any:
    """``render`` applied to every string inside a JSON-like config value."""
    if isinstance(value, str):
        return render(value, results, variables, context)
    if isinstance(value, dict):
        return {k: render_config(v, results, variables, context) for k, v in value.items()}
    if isinstance(value, list):
        return [render_config(v, results, variables, context) for v in value]
    return value


def step_names(wf: Workflow) -> set[str]:
    """The names the plan's steps read and no step of it writes — a step's ``input``, a
    ``<forEach items>`` — which a caller may give (Eko's context parameters: ``--var``)."""
    read = {name for agent in wf.agents for name in steps.inputs(agent.steps)}
    read |= {
        step.items
        for agent in wf.agents
        for _, step in steps.walk_steps(agent.steps)
        if step.kind == "forEach" and step.items
    }
    return read - {name for agent in wf.agents for name in steps.outputs(agent.steps)}


def with_step_values(wf: Workflow, variables: Mapping[str, str]) -> Workflow:
    """An Eko plan given values for names its steps read (it cannot declare variables):
    those names become the plan's variables, so a loop runs over the list given, durably."""
    given = {k: v for k, v in variables.items() if k in step_names(wf) and k not in wf.variables}
    return wf.model_copy(update={"variables": {**wf.variables, **given}}) if given else wf


def check_names(
    wf: Workflow,
    variables: Mapping[str, str],
    context: Mapping[str, Any],
    done: str = "nothing was started",
) -> None:
    """A variable or context value the plan never uses is a typo: say which names it has."""
    refs = [r for agent in wf.agents for r in agent_references(agent)]
    read_by_steps = step_names(wf)
    declared = sorted(
        set(wf.variables) | {r.key for r in refs if r.kind == "variable"} | read_by_steps
    )
    keys = sorted({r.key.split(".")[0] for r in refs if r.kind == "context"})
    for what, given, known in (("variable", variables, declared), ("context", context, keys)):
        unknown = sorted(set(given) - set(known))
        if unknown:
            names = ", ".join(known) if known else "none"
            raise UsageError(
                f"{what} {', '.join(unknown)}: the plan has no such name (its names: {names}); {done}",
                topic=f"unknown-{what}",
                subject=", ".join(unknown),
            )
