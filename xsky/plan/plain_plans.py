"""A plain plan, read while it is parsed: the fast path for the plans people run.

A plan of 10,000 agents is 50,000 elements; building lxml's tree and then walking it from
Python costs two thirds of its parse. Most plans hold nothing to report, so this reads
them in the parse itself, as lxml's parser target: one Python call per start tag, end tag
and run of text, and no tree. It gives the dict :class:`xsky.plan.xml.Reader` would build,
or None as soon as anything is not plain — an unknown or repeated part, loose text, a
nested element, a ``<role>``, a schema file, an attribute to check — for the Reader, which
knows every problem's line and column, to read the plan again and say what is wrong.
Bailing out is always allowed; answering differently from the Reader never is (its
property test in ``tests/unit/test_plain_plans.py`` holds the two side by side).
"""

from __future__ import annotations

import json
import re
import textwrap
import uuid
from typing import Any

from lxml import etree

from xsky.plan.budget import BudgetError, parse_limits
from xsky.wire import scrub_xml_illegal

XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"

_WORKFLOW_ATTRS = frozenset(("name", "taskId", "modified", "budget", XML_SPACE))
_VARIABLE_ATTRS = frozenset(("name", XML_SPACE))
_TEXT_FIELDS = frozenset(("task", "input", "result"))
_JSON_FIELDS = frozenset(("config", "output"))
_STATUSES = frozenset(("init", "running", "done", "error"))
# A depends list with nothing to tidy: ids and commas only.
_PLAIN_DEPENDS = re.compile(r"[A-Za-z0-9_.-]+(?:,[A-Za-z0-9_.-]+)*\Z")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed in JSON")


# One decoder for every <config> and <output>: json.loads with an option builds one per call.
JSON = json.JSONDecoder(parse_constant=_reject_constant)


def clean_text(text: str) -> str:
    """What a person meant by an element's text: indentation and edge blank space dropped."""
    if "\n" in text:
        text = textwrap.dedent(text)
    return text.strip()


def element_text(raw: str | None, preserve: bool) -> str:
    """An element's text as a plan means it: tidied, unless it asks ``xml:space="preserve"``."""
    if not raw:
        return ""
    if "\n" not in raw and not raw[0].isspace() and not raw[-1].isspace():
        return raw  # nothing to tidy, so xml:space cannot matter: the common case
    return raw if preserve else clean_text(raw)


def text_element(parent: etree._Element, tag: str, text: str) -> etree._Element:
    """A child element holding ``text`` written so that :func:`element_text` reads it back."""
    el = etree.SubElement(parent, tag)
    # A result set on a model without validation (the leader's copies) may hold what XML 1.0
    # cannot carry at all (an ESC, a NUL): U+FFFD, as validation itself does.
    text = scrub_xml_illegal(text)
    el.text = text
    if clean_text(text) != text:
        # Keep edge whitespace and indentation that the reader would otherwise tidy away.
        el.set(XML_SPACE, "preserve")
    return el


class NotPlain(Exception):
    """Raised inside the parse to stop it: the Reader takes this plan."""


class _PlainPlan:
    """lxml's parser target for one plan (depth 1: <workflow>, 2: its children, 3: theirs).

    lxml looks its methods up once, so ``data`` is the chunk list's own ``append``: the text
    of a 10,000-agent plan arrives in 100,000 pieces (each entity splits a text). Text seen
    when an element starts or ends outside a text field is loose text, which a plan has not.
    An element without attributes gets lxml's immutable empty mapping, not a dict."""

    __slots__ = (
        "agent",
        "agents",
        "chunks",
        "data",
        "depth",
        "plan",
        "preserve",
        "section",
        "variable",
    )

    def __init__(self) -> None:
        self.depth = 0
        self.plan: dict[str, Any] = {}
        self.agents: list[dict[str, Any]] = []
        self.agent: dict[str, Any] = {}  # the agent being read
        self.section = ""  # the depth-2 element being read: agent, taskPrompt, variables
        self.variable = ""  # the <variable> being read
        self.preserve = False  # the text being read says xml:space="preserve"
        self.chunks: list[str] = []
        self.data = self.chunks.append

    def start(self, tag: str, attrib: Any) -> None:
        self.depth = depth = self.depth + 1
        chunks = self.chunks
        if chunks:
            for chunk in chunks:
                if not chunk.isspace():
                    raise NotPlain  # loose text
            chunks.clear()
        if depth == 3 and self.section == "agent":  # the hot path: an agent's part
            if tag in self.agent:
                raise NotPlain  # a repeated part
            if tag in _TEXT_FIELDS:
                self.preserve = type(attrib) is dict and attrib.get(XML_SPACE) == "preserve"
            elif tag not in _JSON_FIELDS or (tag == "output" and type(attrib) is dict):
                raise NotPlain  # unknown, or <output schema="FILE"/> (read from disk)
        elif depth == 2:
            self._start_section(tag, attrib)
        elif depth == 3 and self.section == "variables":
            if (
                tag != "variable"
                or type(attrib) is not dict
                or not attrib.keys() <= _VARIABLE_ATTRS
            ):
                raise NotPlain
            name = attrib.get("name")
            if not name or name in self.plan["variables"]:
                raise NotPlain
            self.preserve = attrib.get(XML_SPACE) == "preserve"
            self.variable = name
        elif depth == 1:
            self._start_workflow(tag, attrib)
        else:
            raise NotPlain  # a text that holds an element

    def _start_section(self, tag: str, attrib: Any) -> None:
        if tag == "agent":
            if type(attrib) is not dict:
                raise NotPlain
            get = attrib.get
            agent_id = get("id")
            name = get("name")
            if agent_id is None or name is None:
                raise NotPlain
            agent: dict[str, Any] = {"id": agent_id, "name": name}
            count = 2
            depends = get("depends")
            if depends is not None:
                count += 1
                if depends:
                    if not _PLAIN_DEPENDS.match(depends):
                        raise NotPlain
                    agent["depends"] = depends.split(",")
            status = get("status")
            if status is not None:
                if status not in _STATUSES:
                    raise NotPlain
                count += 1
                agent["status"] = status
            if len(attrib) != count:
                raise NotPlain
            self.agent = agent
            self.agents.append(agent)
        elif tag == "taskPrompt":
            if "taskPrompt" in self.plan:
                raise NotPlain
            self.preserve = type(attrib) is dict and attrib.get(XML_SPACE) == "preserve"
        elif tag == "variables":
            if "variables" in self.plan or type(attrib) is dict:
                raise NotPlain
            self.plan["variables"] = {}
        else:
            raise NotPlain  # a <role>, or what the Reader will name
        self.section = tag

    def _start_workflow(self, tag: str, attrib: Any) -> None:
        if tag != "workflow" or not set(attrib) <= _WORKFLOW_ATTRS:
            raise NotPlain
        plan = self.plan
        plan["name"] = attrib.get("name", "")
        plan["taskId"] = attrib.get("taskId") or str(uuid.uuid4())
        modified = attrib.get("modified")
        if modified is not None:
            if modified not in ("true", "false"):
                raise NotPlain
            plan["modified"] = modified == "true"
        budget = attrib.get("budget")
        if budget is not None:
            try:
                plan["budget"] = parse_limits(budget, "<workflow budget>")
            except BudgetError:
                raise NotPlain from None

    def end(self, tag: str) -> None:
        depth = self.depth
        self.depth = depth - 1
        chunks = self.chunks
        if depth == 3:
            raw = "".join(chunks)
            chunks.clear()
            if self.section == "variables":
                self.plan["variables"][self.variable] = element_text(raw, self.preserve)
            elif tag in _TEXT_FIELDS:
                # element_text's common case in place (one call fewer per text of a big plan)
                if raw and "\n" not in raw and not raw[0].isspace() and not raw[-1].isspace():
                    self.agent[tag] = raw
                else:
                    self.agent[tag] = element_text(raw, self.preserve)
            else:
                self._json_field(tag, raw.strip())
            return
        if depth == 2 and tag == "taskPrompt":
            self.plan["taskPrompt"] = element_text("".join(chunks), self.preserve)
        else:
            for chunk in chunks:
                if not chunk.isspace():
                    raise NotPlain  # loose text
            if depth == 2 and tag == "agent" and "task" not in self.agent:
                raise NotPlain
        chunks.clear()

    def _json_field(self, tag: str, text: str) -> None:
        agent = self.agent
        if not text:
            if tag == "output":
                raise NotPlain  # an empty <output>: the Reader says what to write
            agent[tag] = {}
            return
        try:
            value = JSON.decode(text)
        except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
            raise NotPlain from None
        if tag == "config":
            if not isinstance(value, dict):
                raise NotPlain
            agent["config"] = value
            return
        config = agent.get("config")
        if value is None or (config and "output" in config):
            raise NotPlain  # the Reader leaves `null` out, and refuses an output said twice
        agent["config"] = {**(config or {}), "output": value}
        agent["output"] = True  # a second <output> is a repeated part, and a later <config>

    def close(self) -> dict[str, Any]:
        if not self.agents:
            raise NotPlain
        for agent in self.agents:
            agent.pop("output", None)
        self.plan["agents"] = self.agents
        return self.plan


def read_plain(data: bytes, options: dict[str, Any]) -> dict[str, Any] | None:
    """The plan's fields as :class:`xsky.plan.xml.Reader` reads them from ``data`` (UTF-8
    whose prolog holds no DTD), or None when the Reader should read it: it is not plain,
    or not well-formed (the Reader reports where). ``options``: the hardened parser's."""
    parser = etree.XMLParser(target=_PlainPlan(), **options)
    try:
        plan: dict[str, Any] = etree.fromstring(data, parser)
    except (NotPlain, etree.LxmlError, ValueError, LookupError):
        return None
    return plan
