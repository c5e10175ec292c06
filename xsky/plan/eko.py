"""Eko's workflow XML (FellouAI/eko), read as it is and written back.

An Eko plan::

    <root>
      <name>Latest AI news</name>
      <thought>Search, then send the summary</thought>
      <agents>
        <agent name="Browser" id="0" dependsOn="">
          <task>Search for the latest AI news</task>
          <nodes><node output="summary">Summarize what was found</node></nodes>
        </agent>
        <agent name="Computer" id="1" dependsOn="0">…</agent>
      </agents>
    </root>

is the native plan in other clothes: :func:`read` turns its tree into the native one
(``<root>`` → ``<workflow name>``, the ``<agents>`` wrapper unwrapped, ``dependsOn`` →
``depends``, Eko's agent kinds → ours) and hands it to the native reader, so an Eko plan
gets every native check with the same messages. ``<nodes>`` are native too
(:mod:`xsky.plan.steps`). A plan whose XML is damaged the way a streamed one is gets
:func:`xsky.plan.repair.repair`'s mending, reported; parts Eko's parser passes over (tools built
on it add their own) are left out, reported too. :func:`workflow_to_eko` writes back.

Kinds: ``Browser`` and ``File`` are ours, in any case; ``Chat`` is the ``llm`` kind (a model
with no tools but asking the user); ``Computer`` is the ``shell`` kind — a model agent whose
tool is the shell, in the sandbox, with no desktop. Any other name is kept as written and
checked like a native one (a role, or refused as unknown).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from lxml import etree

from xsky.errors import Problem, UsageError, WorkflowXMLError
from xsky.plan.as_before import switched_on
from xsky.plan.models import Workflow
from xsky.plan.plain_plans import XML_SPACE, element_text, text_element
from xsky.plan.repair import cut_off_refused, is_cut_off, repair
from xsky.plan.steps import (
    STEP_ATTRS,
    inner_xml,
    nth_on_line,
    start_tag_at,
    strict_attributes,
    tag_name,
    write_steps,
)


class _Parsed(Protocol):
    """What the native reader gives (xsky.plan.xml.ParsedWorkflow, which imports this module)."""

    dialect: str | None
    repairs: list[Problem]
    original: str | None


Parsed = TypeVar("Parsed", bound=_Parsed)

# Eko's agent kinds (any case) → ours; and ours → the name Eko's planner uses, for writing.
KINDS = {
    "browser": "browser",
    "file": "file",
    "chat": "llm",
    "llm": "llm",
    "computer": "shell",
    "shell": "shell",
}
EKO_NAMES = {"browser": "Browser", "file": "File", "llm": "Chat", "shell": "Computer"}

_AGENT_ATTRS = ("name", "id", "dependsOn")
# What a native plan holds that an Eko one cannot: refused, not left out (it means something).
_NATIVE_ONLY = frozenset(("taskPrompt", "variables", "role", "agent", "workflow"))
_NATIVE_AGENT_ATTRS = frozenset(("depends", "forEach", "status"))
_NATIVE_ROOT_ATTRS = frozenset(("budget", "modified"))
_NATIVE = (
    "take it out of the Eko plan, write the native one (`starter.py convert`), then add it there"
)
_TAKE_OUT = "take it out, or write what it holds where the plan's own parts are"
# An agent's children the native reader takes (Eko's task and nodes, and the native ones).
_AGENT_CHILDREN = frozenset(("task", "nodes", "input", "config", "output", "item", "result"))
# (each part unambiguous: a run of spaces, or a comment, read one way only — nested, \s+ and
# .*? made a plan of 26 leading spaces take seconds, each two more ×4)
_STARTS_AS_EKO = re.compile(
    r"\A(?:\ufeff|\s|<\?(?:[^?]|\?(?!>))*\?>|<!--(?:[^-]|-(?!->))*-->)*<root(?=[\s>/]|\Z)", re.S
)


# Set while a leader replays a run that read its plan before v0.11.11: an agent's <task> holding
# elements was refused then, and a <name> or <thought> holding one was cut at it.
_MARKUP_CUT: ContextVar[bool] = ContextVar("eko_markup_cut", default=False)
_HOLDS_MARKUP = re.compile(
    r"<(task|name|thought)(?:\s[^<>]*)?>(?:(?!</\1\s*>).)*?<(?!/\1\s*>|!\[CDATA\[)", re.S
)


def markup_as_before_v0_11_11() -> AbstractContextManager[None]:
    """Read an Eko plan's <task>, <name> and <thought> as v0.11.9 and before did."""
    return switched_on(_MARKUP_CUT)


def may_hold_markup(text: str | bytes) -> bool:
    """Whether ``text`` is an Eko plan whose <task>, <name> or <thought> may hold an element."""
    raw = text.decode("utf-8", errors="replace") if isinstance(text, bytes) else text
    return is_eko(raw) and _HOLDS_MARKUP.search(raw) is not None


def _text_content(el: etree._Element) -> str | None:
    """An element's text as Eko reads it (its textContent: the text of any element inside
    too), or as v0.11.9 and before did (up to its first element) in a replay that read so."""
    return el.text if _MARKUP_CUT.get() else "".join(el.itertext())


def is_eko(source: str) -> bool:
    """Is this the text of an Eko plan (its root element ``<root>``)?"""
    return _STARTS_AS_EKO.match(source) is not None


# -- reading ------------------------------------------------------------------------------


@dataclass
class _Mapped:
    """What was changed to make the Eko tree a native one, for the one line that says so."""

    depends_on: int = 0
    lower_cased: set[str] = field(default_factory=set)  # Eko kinds written capitalised
    renamed: dict[str, str] = field(default_factory=dict)  # Eko kind → ours (Chat → llm)
    numbered: int = 0  # agents without an id, given their index
    in_order: bool = False  # an Eko v2 plan (no ids, no dependsOn): agents run one after another
    task_less: dict[str, int] = field(default_factory=dict)  # what their task came from → count
    steps: int = 0
    # parts Eko's parser does not read: left out, or kept as text (a warning each)
    not_read: int = 0

    def line(self, repairs: int) -> str:
        said = ["<root>→<workflow>"]
        if self.depends_on:
            said.append("dependsOn→depends")
        if self.lower_cased:
            said.append(f"{len(self.lower_cased)} agent kind(s) lower-cased")
        said += [f"{eko}→{ours}" for eko, ours in sorted(self.renamed.items())]
        if self.in_order:
            said.append(f"{self.numbered} agents without ids numbered 0… and run in order (Eko v2)")
        elif self.numbered:
            said.append(f"{self.numbered} agent(s) without an id given their index")
        for source, count in sorted(self.task_less.items()):
            said.append(f"{count} task-less agent(s) given the {source} as task")
        if self.steps:
            said.append(f"{self.steps} agent(s) with steps")
        if repairs:
            said.append(f"{repairs} repair(s)")
        if self.not_read:
            said.append(f"{self.not_read} part(s) Eko does not read")
        if repairs or self.not_read:
            said[-1] += " (warnings below)"
        return "read as an Eko plan: " + ", ".join(said)


def read(
    source: str,
    parse: Callable[[str], etree._Element],
    read_native: Callable[[etree._Element, str], Parsed],
) -> Parsed:
    """Read an Eko plan's text: ``parse`` is the hardened parser (raising WorkflowXMLError),
    ``read_native`` the native reader of a tree. Damaged XML is mended and the mending
    reported; XML that cannot be mended fails at the line:col of the first error."""
    text, repairs = source, list[Problem]()
    try:
        root = parse(source)
    except WorkflowXMLError as e:
        text, repairs = repair(source)
        if not repairs:
            raise
        try:
            root = parse(text)
        except WorkflowXMLError:
            first = e.problems[0]
            raise WorkflowXMLError(
                [
                    Problem(
                        first.message + " — not repairable the way Eko repairs a streamed plan "
                        "(closing what was left open, dropping a half-written tag or a stray end tag)",
                        first.line,
                        first.column,
                    )
                ]
            ) from None
        # Mended, it reads: refused all the same when its end was missing, not damaged.
        cut = [r for r in repairs if is_cut_off(r)]
        if cut and cut_off_refused():
            raise WorkflowXMLError([_cut_off(cut[0])]) from None
    problems: list[Problem] = []
    notices: list[Problem] = []
    mapped = _to_native(root, text, problems, notices)
    try:
        parsed = read_native(root, text)
    except WorkflowXMLError as e:
        if not problems:
            raise
        both = sorted([*problems, *e.problems], key=lambda p: (p.line or 0, p.column or 0))
        raise WorkflowXMLError(both) from None
    if problems:
        raise WorkflowXMLError(problems, partial=parsed)
    parsed.dialect = mapped.line(len(repairs))
    parsed.repairs = repairs + notices
    parsed.original = source
    return parsed


def _cut_off(repair: Problem) -> Problem:
    """A plan whose end is missing, said as such (the repair would have run what is left)."""
    return Problem(
        "the plan stops here, before its end: it is cut off, as a model's reply that ran out of "
        "tokens is — ask for the plan again with more room for the answer, or finish it by hand "
        "(Eko does not run a cut-off plan either)",
        repair.line,
        repair.column,
    )


def _to_native(
    root: etree._Element, text: str, problems: list[Problem], notices: list[Problem]
) -> _Mapped:
    """Rewrite the Eko tree in place as a native one; Eko-only mistakes go to ``problems``.

    Eko's parser reads the elements and attributes it knows and passes over the rest, so
    plans of tools built on it carry their own (a ``<template>`` of variables, an ``<action>``
    inside a step): what neither Eko nor the native form reads is left out, each with a
    warning in ``notices`` saying where; a step holding elements keeps them as its text (Eko
    reads their text alone). What the native form knows under another name in Eko (a
    ``depends``, a ``<role>``) is refused instead: leaving it out would change the plan."""
    lines = text.splitlines()
    nth = nth_on_line(root)  # (before any part is left out: their places count)

    def where(el: etree._Element) -> tuple[int, int]:
        """Line and column of an element's start tag (lxml gives only the line)."""
        return start_tag_at(lines, el, nth.get(el, 0))

    def problem(el: etree._Element, message: str) -> None:
        problems.append(Problem(message, *where(el)))

    def notice(el: etree._Element, message: str) -> None:
        mapped.not_read += 1
        notices.append(Problem(message, *where(el)))

    mapped = _Mapped()
    for key in root.keys():
        if key in _NATIVE_ROOT_ATTRS:
            problem(
                root, f"attribute {key!r} is a native <workflow>'s, not an Eko <root>'s; {_NATIVE}"
            )
        elif key not in ("taskId", XML_SPACE):
            notice(root, f"attribute {key!r} on <root> is not Eko's: left out")
    name, thought, agents = "", "", None
    loose: list[
        etree._Element
    ] = []  # <agent>s one level too high: said once, then read as if wrapped
    for child in root:
        tag = tag_name(child)
        if tag == "name":  # (Eko reads their textContent: the text of any element inside too)
            name = element_text(_text_content(child), False)
        elif tag == "thought":
            thought = element_text(_text_content(child), False)
        elif tag == "agents" and agents is None:
            agents = child
        elif tag == "agent":  # Eko's own element, one level too high
            if not loose:
                problem(
                    child,
                    "an <agent> directly under <root>: Eko lists its agents inside "
                    "<agents>…</agents>; wrap the agents in one",
                )
            loose.append(child)
        elif tag in _NATIVE_ONLY:
            problem(child, f"<{tag}> belongs to a native <workflow>, not an Eko <root>; {_NATIVE}")
        elif tag == "agents":
            problem(child, "a second <agents>; list every agent in one")
        elif _holds(child, "agents"):
            problem(child, f"<{tag}> holds an <agents>, which Eko would read; {_TAKE_OUT}")
            _remove(child)
        else:
            notice(child, f"<{tag}> is not part of an Eko plan (name, thought, agents): left out")
    if (root.text or "").strip() or any((c.tail or "").strip() for c in root):
        problem(root, "<root> holds loose text; put it in <name> or <thought>")
    if agents is None:
        if not loose:
            problem(root, "an Eko plan lists its agents in <agents>…</agents>; add one")
        agents = etree.Element("agents")
        # (real10: the three errors of an unwrapped plan contradicted each other — "no <agent>
        # elements" beside "an <agent> directly under <root>": the agents count as listed)
        agents.extend(loose)
    agent_els = [c for c in agents if c.tag == "agent"]
    for child in agents:
        if child.tag != "agent":
            tag = tag_name(child)
            if _holds(child, "agent"):
                problem(child, f"<{tag}> inside <agents> holds agents, which Eko runs; {_TAKE_OUT}")
                _remove(child)
            else:
                notice(child, f"<{tag}> inside <agents> is not an agent: left out")

    task_id = root.get("taskId")
    root.tag = "workflow"
    root.attrib.clear()
    root.set("name", name)
    if task_id is not None:
        root.set("taskId", task_id)
    root.text = None
    for child in list(root):
        root.remove(child)
    v2 = not any(el.get("id") is not None or el.get("dependsOn") is not None for el in agent_els)
    mapped.in_order = v2 and len(agent_els) > 1
    for index, el in enumerate(agent_els):
        _agent(el, index, v2, name, thought, mapped, problem, notice)
        el.tail = None
        root.append(el)
    return mapped


def _agent(
    el: etree._Element,
    index: int,
    v2: bool,
    workflow_name: str,
    thought: str,
    mapped: _Mapped,
    problem: Callable[[etree._Element, str], None],
    notice: Callable[[etree._Element, str], None],
) -> None:
    for key in el.keys():
        if key == "depends":
            problem(el, "an Eko <agent> says its dependencies in dependsOn, not depends")
        elif key == "status" and not strict_attributes():
            # Eko's own run state (init, running, done), written back into a plan it saved;
            # its reader passes over it, and so does this one: every agent of a run starts
            notice(
                el,
                f"attribute status={el.get(key)!r} on an Eko <agent> is Eko's run state: left out",
            )
        elif key in _NATIVE_AGENT_ATTRS:
            problem(el, f"attribute {key!r} is a native <agent>'s, not an Eko one's; {_NATIVE}")
        elif key not in _AGENT_ATTRS and key != XML_SPACE:
            # ("dependson", "dependOn": its agents would run together, with no word but this
            # one; near only, so that "idx" is not told it meant "id")
            close = [a for a in _AGENT_ATTRS if a.lower() == key.lower()] or (
                difflib.get_close_matches(key, _AGENT_ATTRS, n=1, cutoff=0.85)
            )
            meant = f" — did you mean {close[0]!r}?" if close else ""
            notice(el, f"attribute {key!r} on an Eko <agent> is not Eko's: left out{meant}")
        else:
            continue
        del el.attrib[key]
    for child in list(el):
        tag = tag_name(child)
        if tag in _AGENT_CHILDREN:
            if tag == "nodes":
                _steps_as_eko_reads_them(child, notice, problem)
            elif tag == "task" and not _MARKUP_CUT.get():  # one naming an element (a <button>)
                _as_text(child, notice)
        elif read := _read_by_eko(child, el):
            problem(
                child,
                f"<{tag}> inside an Eko <agent> holds {read}, which Eko would read; {_TAKE_OUT}",
            )
            _remove(child)
        else:
            notice(child, f"<{tag}> inside an Eko <agent> is not Eko's (task, nodes): left out")
            _remove(child)
    kind = el.get("name")
    if kind is not None and kind.lower() in KINDS and KINDS[kind.lower()] != kind:
        ours = KINDS[kind.lower()]
        if ours == kind.lower():
            mapped.lower_cased.add(kind)
        else:
            mapped.renamed[kind] = ours
        el.set("name", ours)
    if el.get("id") is None:
        mapped.numbered += 1
        el.set("id", str(index))
    depends_on = el.attrib.pop("dependsOn", None)
    if depends_on is not None:
        mapped.depends_on += 1
        if depends_on.strip():
            el.set("depends", depends_on)
    elif v2 and index:
        el.set("depends", str(index - 1))
    nodes = next((c for c in el if c.tag == "nodes"), None)
    if nodes is not None and len(nodes):
        mapped.steps += 1
    task = next((c for c in el if c.tag == "task"), None)
    if task is not None and (task.text or "").strip():
        return
    steps_text = "; ".join(
        t
        for n in (nodes.iter("node") if nodes is not None else ())
        if (t := (n.text or "").strip())
    )
    for source, value in (
        ("steps' text", steps_text),
        ("plan's thought", thought),
        ("plan's name", workflow_name),
        ("agent's name", el.get("name") or ""),
    ):
        if value.strip():
            mapped.task_less[source] = mapped.task_less.get(source, 0) + 1
            if task is None:
                task = etree.Element("task")
                el.insert(0, task)
            task.text = value
            return


def _steps_as_eko_reads_them(
    container: etree._Element,
    notice: Callable[[etree._Element, str], None],
    problem: Callable[[etree._Element, str], None],
) -> None:
    """Leave out of ``<nodes>`` (a ``<forEach>``, a ``<trigger>``) what Eko's parser passes
    over, and give a ``<node>`` (a ``<description>``) that holds elements its content as
    text, markup included (Eko reads only their text; the agent's model is shown all of it)."""
    for child in list(container):
        tag = tag_name(child)
        if tag not in STEP_ATTRS:
            # (Eko reads a <forEach>'s nodes wherever they stand; <nodes>' and <trigger>'s
            # children only)
            if container.tag == "forEach" and _holds(child, "node"):
                problem(
                    child,
                    f"<{tag}> inside <forEach> holds steps, which Eko would read; {_TAKE_OUT}",
                )
                _remove(child)
                continue
            notice(child, f"<{tag}> inside <{container.tag}> is not a step Eko reads: left out")
            _remove(child)
            continue
        for key in child.keys():
            if key not in STEP_ATTRS[tag] and key != XML_SPACE:
                notice(child, f"attribute {key!r} on <{tag}> is not Eko's: left out")
                del child.attrib[key]
        if tag == "node":
            _as_text(child, notice)
        elif tag == "forEach":
            _steps_as_eko_reads_them(child, notice, problem)
        elif tag == "watch":
            for part in list(child):
                if part.tag == "trigger":
                    _steps_as_eko_reads_them(part, notice, problem)
                elif part.tag == "description":
                    _as_text(part, notice)
                elif _holds(part, "trigger", "description"):
                    problem(
                        part, f"<{part.tag}> inside <watch> holds what Eko would read; {_TAKE_OUT}"
                    )
                    _remove(part)
                else:
                    name = tag_name(part)
                    notice(
                        part,
                        f"<{name}> inside <watch> is not Eko's (description, trigger): left out",
                    )
                    _remove(part)


def _as_text(el: etree._Element, notice: Callable[[etree._Element, str], None]) -> None:
    """A text element that holds elements: its content as one text, written as XML writes it
    (``<`` and ``&`` escaped throughout, the elements' tags kept), its white space run together
    unless it asks ``xml:space="preserve"``."""
    if not len(el):
        return
    names = ", ".join(dict.fromkeys(f"<{c.tag}>" for c in el if isinstance(c.tag, str)))
    notice(
        el,
        f"<{el.tag}> holds elements ({names}): kept in its text as written, for the agent's "
        "model (Eko reads their text alone)",
    )
    inner = inner_xml(el)
    for c in list(el):
        el.remove(c)
    el.text = inner


def _holds(el: etree._Element, *tags: str) -> bool:
    """Does ``el`` hold one of ``tags`` somewhere inside (Eko's ``getElementsByTagName`` finds
    those wherever they stand)?"""
    return any(True for _ in el.iterdescendants(*tags))


def _read_by_eko(part: etree._Element, agent: etree._Element) -> str | None:
    """What of a foreign part of an agent Eko would read: an <agent> inside it (Eko runs every
    agent in <agents>), or the agent's first <task> or <nodes> when it comes before the agent's
    own (Eko takes the first in the document). None: nothing."""
    if _holds(part, "agent"):
        return "an <agent>"
    for tag in ("task", "nodes"):
        if _holds(part, tag):
            own = next((c for c in agent if c.tag == tag), None)
            if own is None or part in own.itersiblings(preceding=True):
                return f"a <{tag}>"
    return None


def _remove(el: etree._Element) -> None:
    """Take ``el`` out of its parent, keeping the text after it (lxml's ``remove`` drops it)."""
    parent = el.getparent()
    if parent is None:
        return
    tail = el.tail
    previous = el.getprevious()
    if tail:
        if previous is not None:
            previous.tail = (previous.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(el)


# -- writing ------------------------------------------------------------------------------


def workflow_to_eko(workflow: Workflow, thought: str | None = None) -> str:
    """The plan in Eko's form (Eko's kind names, ``dependsOn``, ``<nodes>``); ``taskId`` rides
    on ``<root>``, where Eko's parser does not look. What Eko has no place for is refused.
    ``thought``: the plan's ``<thought>`` (a native plan has none; ``convert`` keeps it)."""
    lost = _not_in_eko(workflow)
    if lost:
        raise UsageError(
            f"the plan has what Eko's form cannot hold: {'; '.join(lost)}",
            "keep it in the native form, or remove these first",
        )
    root = etree.Element("root")
    root.set("taskId", workflow.task_id)
    text_element(root, "name", workflow.name)
    if thought:
        text_element(root, "thought", thought)
    agents = etree.SubElement(root, "agents")
    for agent in workflow.agents:
        el = etree.SubElement(agents, "agent")
        el.set("name", EKO_NAMES.get(agent.name, agent.name))
        el.set("id", agent.id)
        el.set("dependsOn", ",".join(agent.depends))
        text_element(el, "task", agent.task)
        write_steps(el, agent.steps)
    etree.indent(root, space="  ")
    return etree.tostring(root, encoding="unicode")


def _not_in_eko(workflow: Workflow) -> list[str]:
    lost = []
    for what, present in (
        ("<taskPrompt>", workflow.task_prompt is not None),
        ("<variables>", bool(workflow.variables)),
        ("<role>", bool(workflow.roles)),
        ("a budget", workflow.budget is not None),
        ('modified="true"', workflow.modified),
    ):
        if present:
            lost.append(what)
    for agent in workflow.agents:
        parts = [
            part
            for part, present in (
                ("<input>", agent.input is not None),
                ("<config>", agent.config is not None),
                ("a status", agent.status != "init"),
                ("a <result>", agent.result is not None),
                ("forEach=", agent.for_each is not None),
                ("an <item>", agent.item is not None),
            )
            if present
        ]
        if parts:
            lost.append(f"agent {agent.id}'s {', '.join(parts)}")
    return lost


_THOUGHT = re.compile(r"<thought(?:\s[^>]*)?>(.*?)</thought\s*>", re.S)
# How ``convert`` keeps an Eko plan's thought in the native plan it writes: a comment.
THOUGHT_COMMENT = "Eko thought: "
_THOUGHT_COMMENT = re.compile(r"<!--\s*" + re.escape(THOUGHT_COMMENT) + r"(.*?)-->", re.S)


def plan_thought(source: str) -> str | None:
    """An Eko plan's ``<thought>`` text, or the one a native plan keeps from it in a comment."""
    m = _THOUGHT.search(source) or _THOUGHT_COMMENT.search(source)
    if m is None:
        return None
    text = m.group(1)
    if m.re is _THOUGHT:
        from xml.sax.saxutils import unescape

        text = unescape(text.removeprefix("<![CDATA[").removesuffix("]]>"))
    return " ".join(text.split()) or None


def thought_comment(thought: str) -> str:
    """The native plan's comment that keeps ``thought`` ("--" cannot stand in a comment)."""
    safe = thought
    while "--" in safe:  # "---" would leave "- --"
        safe = safe.replace("--", "- -")
    safe = safe.rstrip("-")
    return f"<!-- {THOUGHT_COMMENT}{safe} -->"
