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
:func:`xsky.plan.repair.repair`'s mending, reported. :func:`workflow_to_eko` writes back.

Kinds: ``Browser`` and ``File`` are ours, in any case; ``Chat`` is the ``llm`` kind (a model
with no tools but asking the user); ``Computer`` is the ``shell`` kind — a model agent whose
tool is the shell, in the sandbox, with no desktop. Any other name is kept as written and
checked like a native one (a role, or refused as unknown).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from lxml import etree

from xsky.errors import Problem, UsageError, WorkflowXMLError
from xsky.plan.models import Workflow
from xsky.plan.plain_plans import element_text, text_element
from xsky.plan.repair import repair
from xsky.plan.steps import write_steps


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

_ROOT_CHILDREN = ("name", "thought", "agents")
_AGENT_ATTRS = ("name", "id", "dependsOn")
_STARTS_AS_EKO = re.compile(r"\A(?:\ufeff|\s+|<\?.*?\?>|<!--.*?-->)*<root(?=[\s>/]|\Z)", re.S)


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
            said.append(f"{repairs} repair(s) (warnings below)")
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
    problems: list[Problem] = []
    mapped = _to_native(root, text, problems)
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
    parsed.repairs = repairs
    parsed.original = source
    return parsed


def _to_native(root: etree._Element, text: str, problems: list[Problem]) -> _Mapped:
    """Rewrite the Eko tree in place as a native one; Eko-only mistakes go to ``problems``."""
    lines = text.splitlines()

    def problem(el: etree._Element, message: str) -> None:
        line = el.sourceline or 1
        col = lines[line - 1].find(f"<{el.tag}") + 1 if 0 < line <= len(lines) else 1
        problems.append(Problem(message, line, max(col, 1)))

    mapped = _Mapped()
    for key in root.keys():
        if key != "taskId":
            problem(root, f"unknown attribute {key!r} on <root>; an Eko plan's <root> has none")
    name, thought, agents = "", "", None
    for child in root:
        if child.tag == "name":
            name = element_text(child.text, False)
        elif child.tag == "thought":
            thought = element_text(child.text, False)
        elif child.tag == "agents" and agents is None:
            agents = child
        else:
            tag = child.tag if isinstance(child.tag, str) else "entity reference"
            problem(child, f"unknown element <{tag}> inside <root>; allowed: name, thought, agents")
    if (root.text or "").strip() or any((c.tail or "").strip() for c in root):
        problem(root, "<root> holds loose text; put it in <name> or <thought>")
    if agents is None:
        problem(root, "an Eko plan lists its agents in <agents>…</agents>; add one")
        agents = etree.Element("agents")
    agent_els = [c for c in agents if c.tag == "agent"]
    for child in agents:
        if child.tag != "agent":
            tag = child.tag if isinstance(child.tag, str) else "entity reference"
            problem(child, f"unknown element <{tag}> inside <agents>; allowed: agent")

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
        _agent(el, index, v2, name, thought, mapped, problem)
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
) -> None:
    for key in el.keys():
        if key not in _AGENT_ATTRS:
            problem(
                el, f"unknown attribute {key!r} on an Eko <agent>; allowed: name, id, dependsOn"
            )
            del el.attrib[key]
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


# -- writing ------------------------------------------------------------------------------


def workflow_to_eko(workflow: Workflow) -> str:
    """The plan in Eko's form (Eko's kind names, ``dependsOn``, ``<nodes>``); ``taskId`` rides
    on ``<root>``, where Eko's parser does not look. What Eko has no place for is refused."""
    lost = _not_in_eko(workflow)
    if lost:
        raise UsageError(
            f"the plan has what Eko's form cannot hold: {'; '.join(lost)}",
            "keep it in the native form, or remove these first",
        )
    root = etree.Element("root")
    root.set("taskId", workflow.task_id)
    text_element(root, "name", workflow.name)
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
