"""An agent's steps (``<nodes>``): read from the XML, written back, checked, shown to its model.

The element names are Eko's, in a native plan as in an Eko one::

    <nodes>
      <node output="jobs">List the open positions</node>
      <forEach items="jobs"><node>Read the job's page</node></forEach>
      <watch event="dom" loop="true">
        <description>New messages in the group</description>
        <trigger><node input="jobs">Answer the message</node></trigger>
      </watch>
    </nodes>

What runs is the agent, with its steps as its plan (:func:`render_steps`, the way Eko gives
them to its model). A ``<forEach>`` whose list can be found is split off into agents of its
own when the run starts (:func:`xsky.plan.loops.lower`: one durable agent per item); a watch
is an instruction, not yet a durable trigger.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Collection
from contextlib import AbstractContextManager
from contextvars import ContextVar

from lxml import etree

from xsky.errors import Problem
from xsky.plan.as_before import switched_on
from xsky.plan.models import Step, Workflow
from xsky.plan.plain_plans import XML_SPACE, element_text, text_element

Report = Callable[[etree._Element, str], None]

STEP_TAGS = ("node", "forEach", "watch")
STEP_ATTRS: dict[str, tuple[str, ...]] = {
    "node": ("input", "output"),
    "forEach": ("items",),
    "watch": ("event", "loop"),
}


def tag_name(el: etree._Element) -> str:
    """An element's tag as a message names it: as the plan writes it (``x:note``, not lxml's
    ``{urn:…}note``); an entity reference has none of its own."""
    if not isinstance(el.tag, str):
        return "entity reference"
    if el.tag.startswith("{"):
        local = etree.QName(el).localname
        return f"{el.prefix}:{local}" if el.prefix else local
    return el.tag


# How far back a start tag written over several lines is looked for (lxml gives its last line).
_TAG_LINES = 50


def nth_on_line(root: etree._Element) -> dict[etree._Element, int]:
    """Each element's place among those of its name whose start tags end on its line (several
    share one in minified XML): what :func:`start_tag_at` is given as ``nth``."""
    nth: dict[etree._Element, int] = {}
    counts: dict[tuple[object, int | None], int] = {}
    for el in root.iter():
        key = (el.tag, el.sourceline)
        nth[el] = counts.get(key, 0)
        counts[key] = nth[el] + 1
    return nth


def start_tag_at(lines: list[str], el: etree._Element, nth: int) -> tuple[int, int]:
    """Line and column of an element's start tag, the ``nth`` of its name on its line (lxml
    gives only the line, and for a start tag written over several lines its last): (line, 1)
    when the text does not show it."""
    line = el.sourceline or 1
    if not (0 < line <= len(lines) and isinstance(el.tag, str)):
        return line, 1
    written = re.compile(f"<{re.escape(tag_name(el))}(?=[\\s/>]|$)")
    at = next(itertools.islice(written.finditer(lines[line - 1]), nth, None), None)
    if at is not None:
        return line, at.start() + 1
    for back in range(line - 1, max(0, line - 1 - _TAG_LINES), -1):
        found = [m.start() for m in written.finditer(lines[back - 1])]
        if found:  # its start, on an earlier line: the last of its name there
            return back, found[-1] + 1
    return line, 1


_EXAMPLE = '<nodes><node output="x">…</node><forEach items="x"><node>…</node></forEach></nodes>'


# -- reading ------------------------------------------------------------------------------


def read_steps(nodes: etree._Element, report: Report) -> list[dict[str, object]]:
    """The steps under ``<nodes>`` (or a ``<forEach>``, a ``<trigger>``), as the model's
    fields; each problem goes to ``report`` with the element it is about."""
    _no_loose_text(nodes, report)
    steps: list[dict[str, object]] = []
    for child in nodes:
        tag = tag_name(child)
        if tag not in STEP_TAGS:
            report(
                child,
                f"unknown element <{tag}> inside <{nodes.tag}>; allowed: {', '.join(STEP_TAGS)} "
                f"(e.g. {_EXAMPLE})",
            )
            continue
        for key in child.keys():
            if key != XML_SPACE and key not in STEP_ATTRS[tag]:
                allowed = ", ".join(STEP_ATTRS[tag])
                report(child, f"unknown attribute {key!r} on <{tag}>; allowed: {allowed}")
        steps.append(_READERS[tag](child, report))
    return steps


# A name written as a reference (items="{{developers}}", as planners write it): the name. Since
# v0.11.8; a leader replaying a run that read such XML before reads it as then (patch
# eko-braced-names: the braces were kept, and the loop looked for a list of that name).
_BRACED = re.compile(r"\{\{\s*([^{}]+?)\s*\}\}")
_BRACES_KEPT: ContextVar[bool] = ContextVar("xsky_braces_kept", default=False)
# Before v0.11.9: loop="True" and an Eko agent's status="init" refused the plan.
_STRICT_ATTRIBUTES: ContextVar[bool] = ContextVar("xsky_strict_attributes", default=False)


def may_hold_lenient_attributes(text: str | bytes) -> bool:
    """Whether ``text`` holds what v0.11.9 reads instead of refusing: a watch's ``loop`` not
    written in lower case, an Eko agent's ``status`` (the leader asks its patch only then)."""
    raw = text.decode("utf-8", errors="replace") if isinstance(text, bytes) else text
    return re.search(r"""loop\s*=\s*["'](?!true["']|false["'])""", raw) is not None or (
        "<root" in raw and re.search(r"<agent\b[^<>]*\sstatus\s*=", raw) is not None
    )


def attributes_as_before_v0_11_9() -> AbstractContextManager[None]:
    return switched_on(_STRICT_ATTRIBUTES)


def strict_attributes() -> bool:
    """Whether attributes are read as before v0.11.9 (a replay of a run that read them so)."""
    return _STRICT_ATTRIBUTES.get()


def may_hold_braced_names(text: str | bytes) -> bool:
    """Whether a step's input, output or items in ``text`` is written as ``{{name}}``."""
    raw = text.decode("utf-8", errors="replace") if isinstance(text, bytes) else text
    # (anywhere in the value: "devs_{{team}}" is read differently too)
    # (the value's own quote closes it: "Bob's {{team}}"; a brace as a character reference too)
    return (
        re.search(r"""\b(?:input|output|items)\s*=\s*(["'])(?:(?!\1).)*?(?:\{\{|&#)""", raw, re.S)
        is not None
    )


def braced_names_as_before_v0_11_8() -> AbstractContextManager[None]:
    return switched_on(_BRACES_KEPT)


def _name_attr(el: etree._Element, attr: str) -> str | None:
    value = el.get(attr)
    if value is None or _BRACES_KEPT.get():
        return value
    return _BRACED.sub(lambda m: m.group(1), value)


def _read_node(el: etree._Element, report: Report) -> dict[str, object]:
    if len(el):
        report(el, "<node> holds elements; a step is text (escape '<' as &lt; or use CDATA)")
    step: dict[str, object] = {"kind": "node", "text": _text(el)}
    for attr in ("input", "output"):
        if (value := _name_attr(el, attr)) is not None:
            step[attr] = value
    return step


def _read_for_each(el: etree._Element, report: Report) -> dict[str, object]:
    step: dict[str, object] = {"kind": "forEach", "steps": read_steps(el, report)}
    if (items := _name_attr(el, "items")) is not None:
        step["items"] = items
    return step


# Set while the leader reads XML a run took before v0.11.5 (workflows/leader/io.read_plan_xml,
# patch watch-description-whole): a native watch's <description> is read as it was then, cut at
# its first element, so the plan it makes is the one that run compared and acted on.
_DESCRIPTIONS_CUT: ContextVar[bool] = ContextVar("xsky_descriptions_cut", default=False)


def descriptions_as_before_v0_11_5() -> AbstractContextManager[None]:
    """Read a native watch's <description> as v0.11.4 and before did (see ``_DESCRIPTIONS_CUT``)."""
    return switched_on(_DESCRIPTIONS_CUT)


def _read_watch(el: etree._Element, report: Report) -> dict[str, object]:
    step: dict[str, object] = {"kind": "watch"}
    if (event := el.get("event")) is not None:
        step["event"] = event
    loop = el.get("loop")
    if loop is not None and not _STRICT_ATTRIBUTES.get():
        loop = loop.strip().lower()  # loop="True" (a model's capital) means what it says
    if loop is not None and loop not in ("true", "false"):
        report(el, f'<watch loop="{loop}"> must be "true" or "false"')
    step["loop"] = loop == "true"
    _no_loose_text(el, report)
    for child in el:
        if child.tag == "description" and "description" not in step:
            # One that holds elements is kept whole, as text (not refused: the leader reads a
            # replan's XML again on replay); runs from before v0.11.5 read it cut, as they did.
            whole = len(child) and not _DESCRIPTIONS_CUT.get()
            step["description"] = inner_xml(child) if whole else _text(child)
        elif child.tag == "trigger" and "steps" not in step:
            step["steps"] = read_steps(child, report)
        elif child.tag in ("description", "trigger"):
            report(child, f"<watch> has more than one <{child.tag}>; keep one")
        else:
            tag = tag_name(child)
            report(child, f"unknown element <{tag}> inside <watch>; allowed: description, trigger")
    return step


_READERS = {"node": _read_node, "forEach": _read_for_each, "watch": _read_watch}


def _text(el: etree._Element) -> str:
    raw = el.text
    return element_text(raw, bool(raw) and el.get(XML_SPACE) == "preserve")


def inner_xml(el: etree._Element) -> str:
    """The content of an element that holds elements, as one text written as XML writes it
    (``<`` and ``&`` escaped throughout, the elements' tags kept), its white space run together
    unless it asks ``xml:space="preserve"``."""
    whole = etree.tostring(el, encoding="unicode", with_tail=False)
    inner = whole[whole.index(">") + 1 : whole.rindex("</")]  # (a '>' in a value is &gt;)
    return inner if el.get(XML_SPACE) == "preserve" else " ".join(inner.split())


def _no_loose_text(el: etree._Element, report: Report) -> None:
    if any((s or "").strip() for s in [el.text, *(c.tail for c in el)]):
        report(el, f"<{el.tag}> holds loose text; put each step in a <node>")


def step_element(agent: etree._Element, path: tuple[int, ...]) -> etree._Element | None:
    """The element of the step at ``path`` (indices into steps, then into their steps)."""
    here = next((c for c in agent if c.tag == "nodes"), None)
    for depth, index in enumerate(path):
        if here is None:
            return None
        if depth and here.tag == "watch":
            here = next((c for c in here if c.tag == "trigger"), None)
            if here is None:
                return None
        children = [c for c in here if c.tag in STEP_TAGS]
        if index >= len(children):
            return None
        here = children[index]
    return here


# -- writing ------------------------------------------------------------------------------


def write_steps(parent: etree._Element, steps: list[Step]) -> None:
    """``<nodes>`` with ``steps`` under ``parent`` (nothing when there are none)."""
    if steps:
        _write(etree.SubElement(parent, "nodes"), steps)


def _write(parent: etree._Element, steps: list[Step]) -> None:
    for step in steps:
        if step.kind == "node":
            el = text_element(parent, "node", step.text)
            for attr in ("input", "output"):
                if (value := getattr(step, attr)) is not None:
                    el.set(attr, value)
        elif step.kind == "forEach":
            el = etree.SubElement(parent, "forEach")
            if step.items is not None:
                el.set("items", step.items)
            _write(el, step.steps)
        else:
            el = etree.SubElement(parent, "watch")
            if step.event is not None:
                el.set("event", step.event)
            el.set("loop", "true" if step.loop else "false")
            if step.description is not None:
                text_element(el, "description", step.description)
            _write(etree.SubElement(el, "trigger"), step.steps)


# -- checking -----------------------------------------------------------------------------


def names(value: str | None) -> list[str]:
    """The variable names an ``input`` or ``output`` holds (Eko allows ``a,b,c``)."""
    return [n.strip() for n in (value or "").split(",") if n.strip()]


def walk_steps(steps: list[Step], path: tuple[int, ...] = ()) -> list[tuple[tuple[int, ...], Step]]:
    """Every step at any depth, with its path (indexes from the top), in document order."""
    found = []
    for i, step in enumerate(steps):
        found.append(((*path, i), step))
        found += walk_steps(step.steps, (*path, i))
    return found


# What a step inside a forEach or a watch may read without any step storing it.
LOOP_NAMES = frozenset(("item", "item_index"))


def _walk_looped(
    steps: list[Step], path: tuple[int, ...] = (), looped: bool = False
) -> list[tuple[tuple[int, ...], Step, bool]]:
    """Every step with its path, and whether a forEach or a watch holds it."""
    found = []
    for i, step in enumerate(steps):
        found.append(((*path, i), step, looped))
        inner = looped or step.kind in ("forEach", "watch")
        found += _walk_looped(step.steps, (*path, i), inner)
    return found


def inputs(steps: list[Step]) -> set[str]:
    """Every variable name the steps read (``input``), at any depth."""
    return {name for _, step in walk_steps(steps) for name in names(step.input)}


def outputs(steps: list[Step]) -> set[str]:
    """Every variable name the steps store (``output``), at any depth."""
    return {name for _, step in walk_steps(steps) for name in names(step.output)}


def input_problems(workflow: Workflow, variables: Collection[str] = ()) -> list[Problem]:
    """Every step ``input`` that nothing outputs: no step of the plan, no workflow variable
    (declared or given as ``variables``). Each problem names its agent and step path."""
    walked = [
        (i, path, step, looped)
        for i, a in enumerate(workflow.agents)
        for path, step, looped in _walk_looped(a.steps)
    ]
    stored = {n for a in workflow.agents for n in outputs(a.steps)}
    known = stored | set(workflow.variables) | set(variables)
    problems = []
    for index, path, step, looped in walked:
        for name in names(step.input):
            # Inside a forEach (or a watch's trigger) `item` is the element at hand, as Eko's
            # planners write it (`<node input="item">`), and `item_index` its number.
            if name not in known and not (looped and name in LOOP_NAMES):
                agent = workflow.agents[index].id
                where = ".".join(str(p + 1) for p in path)
                problems.append(
                    Problem(
                        f'agent {agent}, step {where}: input="{name}" but no step outputs {name!r} '
                        f'and no workflow variable is named so; add output="{name}" to the step '
                        "that makes it, or declare the variable",
                        agent_index=index,
                        step=path,
                    )
                )
    return problems


# -- showing them to the agent -------------------------------------------------------------


def render_steps(steps: list[Step]) -> str:
    """The steps as a numbered plan for the agent's model ("" for none): forEach and watch
    are said as instructions, as Eko gives them to its agents."""
    if not steps:
        return ""
    return "Steps (follow them in order):\n" + "\n".join(_render(steps, ""))


def _render(steps: list[Step], prefix: str) -> list[str]:
    lines = []
    for i, step in enumerate(steps, 1):
        number = f"{prefix}{i}"
        indent = "   " * number.count(".")
        if step.kind == "node":
            line = f"{indent}{number}. {step.text}"
            notes = []
            if step.input:
                notes.append(f"uses {step.input}")
            if step.output:
                notes.append(f"its result is {step.output}")
            lines.append(line + (f" ({'; '.join(notes)})" if notes else ""))
        elif step.kind == "forEach":
            what = step.items or "the list from the steps before"
            lines.append(f"{indent}{number}. For each item of {what}, do:")
            lines += _render(step.steps, number + ".")
        else:
            again = "every time" if step.loop else "once"
            event = f"a {step.event} event" if step.event else "the event"
            about = f": {step.description}" if step.description else ""
            lines.append(f"{indent}{number}. Watch for {event}{about}; {again} it happens, do:")
            lines += _render(step.steps, number + ".")
    return lines


# -- progress through the steps -------------------------------------------------------------

STEP_DONE = "step_done"  # the model's call when it finished one of its steps


def step_done_tool(steps: list[Step]) -> dict[str, object]:
    """The function an agent with steps is given to say it finished one (an OpenAI tool)."""
    return {
        "type": "function",
        "function": {
            "name": STEP_DONE,
            "description": f"say that you finished step N of your {len(steps)} steps (call it "
            "after each one, in order; the last answer is still your final message)",
            "parameters": {
                "type": "object",
                "properties": {
                    "step": {"type": "integer", "minimum": 1, "maximum": len(steps)},
                    "note": {"type": "string", "description": "what the step found, in a line"},
                },
                "required": ["step"],
                "additionalProperties": False,
            },
        },
    }


def step_label(step: Step) -> str:
    """A step in a few words, for the board."""
    text = " ".join((step.text or step.description or "").split())
    if step.kind == "forEach":
        text = f"for each item of {step.items or 'the list'}"
    elif step.kind == "watch":
        text = f"watch {step.event or 'the event'}" + (f": {text}" if text else "")
    return text if len(text) <= 60 else text[:59] + "…"


def step_reached(steps: list[Step], done: int, args: dict[str, object]) -> tuple[int, str, str]:
    """(steps done now, the progress line for the board, the answer to the model) for a
    ``step_done`` call with ``args``; a wrong call leaves ``done`` as it was and says why."""
    total = len(steps)
    step = args.get("step")
    if not isinstance(step, int) or isinstance(step, bool) or not 1 <= step <= total:
        return done, "", f"ERROR: step must be a number from 1 to {total}"
    done = max(done, step)
    note = args.get("note")
    shown = f"step {step} of {total} done: {step_label(steps[step - 1])}"
    if isinstance(note, str) and note.strip():
        shown += f" — {' '.join(note.split())[:120]}"
    if done >= total:
        return (
            done,
            shown,
            f"Step {step} of {total} recorded. All steps are done: give your final answer.",
        )
    nxt = steps[done]
    return done, shown, f"Step {step} of {total} recorded. Next: step {done + 1}: {step_label(nxt)}"
