"""Workflow XML: parse it, and write it back.

The format is the seed's::

    <workflow name="Task Name" taskId="uuid">
      <agent name="browser" id="1"><task>…</task></agent>
      <agent name="llm" id="2" depends="1">
        <task>Summarize</task>
        <input>{{agent_1_result}}</input>
        <config>{"model": "gpt-4o-mini"}</config>
      </agent>
    </workflow>

plus optional ``<taskPrompt>``, ``<variables>`` and, per agent, a ``status`` attribute and
a ``<result>`` so a plan in progress can be written out and read back unchanged.

Parsing is hardened: no DTDs, no entity expansion, no network, a size limit. The tree is
then read (:class:`Reader`): every element, attribute and text is checked against the format
and the result validated; anything wrong raises :class:`WorkflowXMLError` with every problem
found, each with its line and column — not only the first; nothing else escapes. Writing
(:func:`workflow_to_xml`) is the exact inverse: ``parse_workflow(workflow_to_xml(w)) == w``.
Finding the plan inside an LLM reply is :mod:`xsky.plan.extract`'s.
"""

from __future__ import annotations

import json
import os
import re
import stat
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from contextvars import ContextVar
from dataclasses import replace
from pathlib import Path
from typing import Any

from lxml import etree
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from xsky.errors import Problem, WorkflowXMLError
from xsky.gcpause import gc_paused
from xsky.plan import eko
from xsky.plan.as_before import switched_on
from xsky.plan.budget import BudgetError, limits_text, parse_limits
from xsky.plan.loops import source_problem
from xsky.plan.models import Workflow, WorkflowAgent, friendly_error
from xsky.plan.plain_plans import (
    JSON,
    XML_SPACE,
    clean_text,
    element_text,
    read_plain,
    text_element,
)
from xsky.plan.steps import (
    nth_on_line,
    read_steps,
    start_tag_at,
    step_element,
    tag_name,
    write_steps,
)
from xsky.plan.variables import nearest
from xsky.security.roles import RoleCapabilityModel
from xsky.wire import XML_ILLEGAL, scrub_xml_illegal

__all__ = [
    "DEFAULT_MAX_BYTES",
    "ParsedWorkflow",
    "parse_workflow",
    "parse_workflow_source",
    "workflow_to_xml",
]

DEFAULT_MAX_BYTES = 5 * 1024 * 1024

# Nothing outside the text is ever read; entity handling is chosen per document (_parser_for).
_PARSER_OPTIONS: dict[str, Any] = dict(
    no_network=True,
    load_dtd=False,
    dtd_validation=False,
    huge_tree=False,
    remove_comments=True,
    remove_pis=True,
    collect_ids=False,
)
_PLAIN_OPTIONS: dict[str, Any] = {**_PARSER_OPTIONS, "resolve_entities": "internal"}


# -- parsing, hardened --------------------------------------------------------------------


def parse_workflow(text: str | bytes, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Workflow:
    """Parse workflow XML into a :class:`Workflow`; a missing ``taskId`` gets a uuid4."""
    return parse_workflow_source(text, max_bytes=max_bytes).workflow


# Since v0.11.8 a plan read as text never touches the disk: only a plan read from its file
# (``base_dir``) may name a schema file, beside it. A leader replaying a run that read a
# replan's schema file before reads it as then (workflows/patches.py, plan-text-reads-no-files).
_SCHEMA_FILES_READ: ContextVar[bool] = ContextVar("xsky_schema_files_read", default=False)


def schema_files_read_as_before_v0_11_8() -> AbstractContextManager[None]:
    """Read as v0.11.7 and before did: a plan given as text may name a schema file, opened
    from the working directory."""
    return switched_on(_SCHEMA_FILES_READ)


def may_name_a_file(text: str | bytes) -> bool:
    """Whether reading ``text`` could open a file (the leader asks its patch only then)."""
    if isinstance(text, bytes):
        return b"schema" in text
    return "schema" in text


def _read_small_file(path: Path, limit: int) -> bytes:
    """At most ``limit`` bytes of a regular file, opened without blocking (a FIFO or a device
    named as a schema would wait for ever, or never end)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "is a directory")
        if not stat.S_ISREG(mode):
            raise OSError(22, "is not a regular file")
        return fh.read(limit)


def parse_workflow_source(
    text: str | bytes, *, max_bytes: int = DEFAULT_MAX_BYTES, base_dir: Path | None = None
) -> ParsedWorkflow:
    """Like :func:`parse_workflow`, and also return each agent's line and column.
    ``base_dir``: the folder of the plan's file, where ``<output schema="FILE"/>`` paths start
    (None: a plan given as text, which may name no file)."""
    data, source, encoding = _as_bytes(text, max_bytes)
    _refuse_doctype(source)
    parser, plain_utf8 = _parser_for(data, source, encoding)
    if eko.is_eko(source):  # the one place the dialect is told apart: Eko's root is <root>
        return eko.read(
            source,
            lambda text: _parse_tree(text.encode("utf-8"), text, etree.XMLParser(**_PLAIN_OPTIONS)),
            lambda root, text: Reader(root, text, base_dir).read(),
        )
    with gc_paused():
        if plain_utf8:
            plain = read_plain(data, _PLAIN_OPTIONS)
            if plain is not None:
                try:
                    workflow = Workflow.model_validate(plain)
                except ValidationError:
                    pass  # the Reader says where
                else:
                    return ParsedWorkflow(workflow, lambda: _reader_of(data, source, parser))
        root = _parse_tree(data, source, parser)
        return Reader(root, source, base_dir).read()


def _reader_of(
    data: bytes, source: str, parser: etree.XMLParser
) -> tuple[Reader, list[etree._Element]]:
    """A Reader over the tree of a plan read on the plain path, for its agents' positions."""
    root = _parse_tree(data, source, parser)
    return Reader(root, source), [el for el in root if el.tag == "agent"]


def _as_bytes(text: str | bytes, max_bytes: int) -> tuple[bytes, str, str | None]:
    """The bytes to parse, the text for locating errors, and the encoding to force."""
    encoding: str | None = None  # bytes: honour the document's own declaration
    if isinstance(text, bytes):
        data = text
        source = text.decode("utf-8", errors="replace")
    elif isinstance(text, str):
        encoding = "utf-8"  # a str is encoded here, whatever its declaration says
        source = text
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError as e:
            line, col = _offset_to_line_col(text, e.start)
            raise WorkflowXMLError(
                [
                    Problem(
                        "the text holds an unpaired surrogate character; save it as valid UTF-8",
                        line,
                        col,
                    )
                ]
            ) from None
    else:
        raise WorkflowXMLError(
            [Problem(f"expected the plan as text, got {type(text).__name__}", 1, 1)]
        )
    if len(data) > max_bytes:
        raise WorkflowXMLError(
            [
                Problem(
                    f"the plan is {len(data):,} bytes, over the {max_bytes:,}-byte limit; "
                    "split the work into smaller plans or raise the limit (max_bytes / XSKY_MAX_PLAN_BYTES)",
                    1,
                    1,
                )
            ]
        )
    if not data.strip():
        raise WorkflowXMLError([Problem("the plan is empty: expected a <workflow> element", 1, 1)])
    return data, source, encoding


_PROLOG_SKIP = re.compile(r"\A(?:\ufeff|\s+|<\?.*?\?>|<!--.*?-->)*", re.S)


def _doctype_problem(source: str) -> Problem:
    line, col = _find_in_source(source, "<!DOCTYPE")
    return Problem(
        "DOCTYPE and DTD declarations are not allowed in workflow XML (entities are never "
        "expanded, nothing is loaded); remove the <!DOCTYPE …> block",
        line,
        col,
    )


def _refuse_doctype(source: str) -> None:
    """Refuse a DTD before libxml2 sees it, so it never tries to fetch an external subset."""
    prolog_end = _PROLOG_SKIP.match(source)
    if source.startswith("<!DOCTYPE", prolog_end.end() if prolog_end else 0):
        raise WorkflowXMLError([_doctype_problem(source)])


def _parse_tree(data: bytes, source: str, parser: etree.XMLParser) -> etree._Element:
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as e:
        line, col = e.position if e.position else (e.lineno or 1, 1)
        said = _syntax_message(e)
        if "expected '>'" in said and (unclosed := _unclosed_tag(source, line or 1, col)):
            # libxml2 notices where the next tag begins: the one left open is named, at its end
            said, line, col = unclosed
        raise WorkflowXMLError([Problem(said, line or 1, max(col, 1))]) from None
    except (etree.LxmlError, ValueError, LookupError) as e:
        raise WorkflowXMLError([Problem(f"the text is not readable XML: {e}", 1, 1)]) from None
    if root is None:
        raise WorkflowXMLError([Problem("the plan is empty: expected a <workflow> element", 1, 1)])
    tree = root.getroottree()
    if tree.docinfo.doctype or tree.docinfo.internalDTD is not None:
        raise WorkflowXMLError([_doctype_problem(source)])  # e.g. a UTF-16 document
    if isinstance(root.tag, str) and root.tag.startswith("{"):
        _default_namespace_dropped(root)
    return root


def _default_namespace_dropped(root: etree._Element) -> None:
    """A plan whose root declares a default namespace (``<workflow xmlns="…">``, an Eko
    ``<root xmlns="…">``) means the names it writes, as Eko's parser reads them: the elements in
    that namespace go by their local names. Elements of another (prefixed) namespace keep it,
    and are reported where they stand, as any element the plan does not know."""
    default = root.nsmap.get(None)
    if default is None:
        return
    prefix = "{" + default + "}"
    for el in root.iter():
        if isinstance(el.tag, str) and el.tag.startswith(prefix):
            el.tag = el.tag[len(prefix) :]
    etree.cleanup_namespaces(root)


_DECLARED_ENCODING = re.compile(r"""\ufeff?<\?xml\s[^>]*?encoding\s*=\s*["']([^"']*)["']""")


def _parser_for(data: bytes, source: str, encoding: str | None) -> tuple[etree.XMLParser, bool]:
    """The parser for a document whose prolog holds no DOCTYPE (checked on ``source``).

    When libxml2 reads the very text that check read — UTF-8, a str or bytes — no DTD can
    follow (one stands only in the prolog), so no entity but the five built-in ones exists
    and the default entity handling reads the document the same as turning it off, which
    costs a third of a 10,000-agent parse; such a plan may also be read on the plain path
    (:mod:`xsky.plan.plain_plans`): the flag says so. Other bytes (UTF-16, a legacy encoding, where the check
    may not have seen what libxml2 will) keep entities off."""
    declared = _DECLARED_ENCODING.match(source)
    says_utf8 = declared is None or declared.group(1).lower() in ("utf-8", "utf8")
    if encoding is not None and not says_utf8:  # a str, encoded here as UTF-8
        return etree.XMLParser(encoding=encoding, **_PLAIN_OPTIONS), False
    if says_utf8 and not data.startswith((b"\xfe\xff", b"\xff\xfe")) and b"\x00" not in data[:4]:
        # Naming UTF-8, libxml2's own, would only slow it down.
        return etree.XMLParser(**_PLAIN_OPTIONS), True
    return etree.XMLParser(**_PARSER_OPTIONS, resolve_entities=False), False


def _syntax_message(e: etree.XMLSyntaxError) -> str:
    msg = re.sub(r", line \d+, column \d+.*$", "", str(e.msg or e)).strip()
    hint = ""
    if "EntityRef" in msg or ("Entity" in msg and "not defined" in msg):
        hint = " (write a literal '&' as &amp;; only &amp; &lt; &gt; &quot; &apos; and &#N; are allowed)"
    elif "StartTag: invalid element name" in msg or "xmlParseStartTag" in msg:
        hint = " (write a literal '<' in text as &lt; or wrap the text in <![CDATA[ … ]]>)"
    elif "Opening and ending tag mismatch" in msg:
        hint = " (every <tag> needs its matching </tag>)"
    elif "Start tag expected" in msg or "Document is empty" in msg:
        hint = " (a plan starts with <workflow …>)"
    elif "error parsing attribute name" in msg or "attributes construct error" in msg:
        hint = (
            " (a tag holds name=\"value\" pairs, each after a space, and ends with '>' or "
            "'/>': is a space, a quote or the '>' of the tag before this point missing?)"
        )
    elif "AttValue" in msg:
        hint = ' (an attribute\'s value is quoted: name="value")'
    elif "Excessive depth" in msg:
        hint = " (elements are nested too deeply; a plan needs only <workflow> → <agent> → <task>)"
    return f"XML syntax error: {msg}{hint}"


def _unclosed_tag(source: str, line: int, col: int) -> tuple[str, int, int] | None:
    """For libxml2's "expected '>'" at (line, col): the tag left without its '>' — the text
    from the last '<' before that point — said where it ends, or None when there is none."""
    lines = source.split("\n")
    if not 1 <= line <= len(lines):
        return None
    offset = sum(len(text) + 1 for text in lines[: line - 1]) + max(col, 1) - 1
    opened = source.rfind("<", 0, offset)
    if opened < 0:
        return None
    tag = source[opened:offset].rstrip()
    if not tag or len(tag) > 200 or ">" in tag:
        return None
    end_line, end_col = _offset_to_line_col(source, opened + len(tag))
    return (
        f"XML syntax error: {' '.join(tag.split())!r} is not closed: expected '>' after it "
        "(every tag ends with '>')",
        end_line,
        end_col,
    )


def _offset_to_line_col(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, col


def _find_in_source(source: str, needle: str) -> tuple[int, int]:
    at = source.find(needle)
    return _offset_to_line_col(source, at) if at >= 0 else (1, 1)


# -- reading: the tree → a Workflow, every problem with its line and column ---------------

_WORKFLOW_ATTRS = ("name", "taskId", "modified", "budget")
_WORKFLOW_CHILDREN = ("taskPrompt", "variables", "role", "agent")
_ROLE_ATTRS = ("name", "description", "model", "tools", "requestedTools", "skills")
_AGENT_ATTRS = ("name", "id", "depends", "forEach", "status")
_AGENT_CHILDREN = ("task", "input", "config", "output", "nodes", "item", "result")
# An <output schema="FILE"/> is a JSON Schema, not a data file: a megabyte is plenty.
MAX_SCHEMA_BYTES = 1024 * 1024
_AGENT_ATTR_SET = frozenset(_AGENT_ATTRS)
_AGENT_CHILD_SET = frozenset(_AGENT_CHILDREN)
_STATUSES = ("init", "running", "done", "error")


class ParsedWorkflow:
    """A parsed plan plus where each agent stood in the text, for error messages.
    ``located``: the Reader and the agents' elements, or how to get them when first asked
    (a plan read on the plain path has no tree until a problem needs a position)."""

    def __init__(
        self,
        workflow: Workflow,
        located: tuple[Reader, list[etree._Element]]
        | Callable[[], tuple[Reader, list[etree._Element]]],
    ):
        self.workflow = workflow
        self._located = located
        # Set for a plan read in Eko's dialect (xsky.plan.eko): the one line that says what was
        # mapped, the repairs made to its XML (each at its line:col), and the text as written.
        self.dialect: str | None = None
        self.repairs: list[Problem] = []
        self.original: str | None = None
        # For a plan read only in part (Reader._partial): each id that stands in for one that
        # could not be used, and the agent's label and id as written ("agent #1", "").
        self.stand_ins: dict[str, tuple[str, str]] = {}

    def as_written(self, problem: Problem) -> Problem:
        """``problem`` with each stand-in id said as the plan wrote it (a check of the whole
        plan read a stand-in's id where the plan's own could not be used)."""
        message = problem.message
        for stand_in, (label, written) in self.stand_ins.items():
            message = re.sub(rf"(?<![\w.-])agent {re.escape(stand_in)}(?![\w.-])", label, message)
            message = re.sub(
                rf"(?<![\w.-]){re.escape(stand_in)}(?![\w.-])",
                written or label.removeprefix("agent "),
                message,
            )
        agent_id = problem.agent_id
        if agent_id in self.stand_ins:
            agent_id = self.stand_ins[agent_id][1]
        return replace(problem, message=message, agent_id=agent_id)

    def _where(self) -> tuple[Reader, list[etree._Element]]:
        if callable(self._located):
            self._located = self._located()
        return self._located

    def agent_position(self, index: int) -> tuple[int, int]:
        """Line and column of the ``index``-th ``<agent>`` start tag."""
        reader, agent_els = self._where()
        return reader.pos(agent_els[index])

    def step_position(self, index: int, path: tuple[int, ...]) -> tuple[int, int]:
        """Line and column of a step of the ``index``-th agent (its agent's, when not found)."""
        reader, agent_els = self._where()
        el = step_element(agent_els[index], path)
        return reader.pos(el if el is not None else agent_els[index])


def _element_text(el: etree._Element) -> str:
    raw = el.text
    return element_text(raw, bool(raw) and el.get(XML_SPACE) == "preserve")


class Reader:
    """Turns the lxml tree into a Workflow, collecting every problem on the way."""

    def __init__(self, root: etree._Element, source: str, base_dir: Path | None = None):
        self.root = root
        self.source = source
        # where <output schema="FILE"/> paths start: the plan file's folder (None: the cwd)
        self.base_dir = base_dir
        self.problems: list[Problem] = []
        self._incomplete = False  # a part the whole plan's checks need could not be read
        self._lines: list[str] | None = None
        self._nth: dict[etree._Element, int] | None = None

    # -- positions -------------------------------------------------------------
    def pos(self, el: etree._Element) -> tuple[int, int]:
        """Line and column of an element's start tag (lxml gives only the line)."""
        if self._lines is None or self._nth is None:
            self._lines = self.source.splitlines()
            self._nth = nth_on_line(self.root)
        return start_tag_at(self._lines, el, self._nth.get(el, 0))

    def problem(self, el: etree._Element, message: str, agent_index: int | None = None) -> None:
        line, col = self.pos(el)
        self.problems.append(Problem(message, line, col, agent_index))

    # -- reading ----------------------------------------------------------------
    def read(self) -> ParsedWorkflow:
        root = self.root
        if root.tag != "workflow":
            self.problem(
                root, f"the root element is <{tag_name(root)}>; a plan's root must be <workflow>"
            )
            raise WorkflowXMLError(self.problems)
        self._check_attrs(root, _WORKFLOW_ATTRS, "workflow")
        self._check_no_text(root, "workflow")

        wf: dict[str, Any] = {
            "name": root.get("name", ""),
            "taskId": root.get("taskId") or str(uuid.uuid4()),
            "agents": [],
        }
        modified = root.get("modified")
        if modified is not None:
            if modified not in ("true", "false"):
                self.problem(root, f'modified="{modified}" must be "true" or "false"')
            wf["modified"] = modified == "true"
        if (budget := root.get("budget")) is not None:
            try:
                wf["budget"] = parse_limits(budget, "<workflow budget>")
            except BudgetError as e:
                self.problem(root, str(e))

        agent_els: list[etree._Element] = []
        for child in root:
            tag = child.tag
            if tag == "agent":
                agent_els.append(child)
            elif tag == "taskPrompt":
                wf["taskPrompt"] = _element_text(child)
            elif tag == "variables":
                before = len(self.problems)
                wf["variables"] = self._read_variables(child)
                self._incomplete |= len(self.problems) > before
            elif tag == "role":
                wf.setdefault("roles", []).append(self._read_role(child))
            else:
                self._unknown_child(child, "workflow", _WORKFLOW_CHILDREN)
        if not agent_els and not self.problems:
            self.problem(root, "the workflow has no <agent> elements; add at least one agent")

        for index, el in enumerate(agent_els):
            wf["agents"].append(self._read_agent(el, index))

        if self.problems:
            partial = self._partial(wf, agent_els)  # (may say what the model refuses too)
            raise WorkflowXMLError(self.problems, partial=partial)
        try:
            workflow = Workflow.model_validate(wf)
        except ValidationError as e:
            self._validation_problems(e.errors(), root, agent_els)
            # (an id or a name that is not one: the rest is still checked, as _partial says)
            partial = self._partial(wf, agent_els, said=True)
            raise WorkflowXMLError(self.problems, partial=partial) from None
        return ParsedWorkflow(workflow, (self, agent_els))

    def _partial(
        self, wf: dict[str, Any], agent_els: list[etree._Element], said: bool = False
    ) -> ParsedWorkflow | None:
        """The plan as far as it reads, for the checks of the whole (dependencies, names,
        cycles) to run too — so one bad ``<config>`` does not hide every other problem. None
        when a part the checks stand on is missing (an agent's id, name or task, a variable),
        which would make them report what is not wrong."""
        if self._incomplete:
            return None
        # An agent whose task or name is missing (said already) stands in with a placeholder,
        # so the rest of the plan is still checked — every problem at once, as the docs say.
        standing = [
            {**a, "task": "(no task)"} if a.get("task") is None else a for a in wf["agents"]
        ]
        standing = [{"name": "llm", **a} if "name" not in a else a for a in standing]
        # So does one whose id is missing or not an id (id="", id="-1"): with an id of its own
        # that no agent has, said as the plan wrote it in what the checks find (as_written).
        taken = {a["id"] for a in standing if isinstance(a.get("id"), str)}
        stand_ins: dict[str, tuple[str, str]] = {}

        def stand_in(index: int) -> None:
            agent = standing[index]
            written = agent.get("id") or ""
            new = f"unread-id-{index + 1}"
            while new in taken:
                new += "x"
            taken.add(new)
            stand_ins[new] = (_label(written or None, index), written)
            standing[index] = {**agent, "id": new}
            if written:  # its dependents wait for it by the id that stands in
                for i, other in enumerate(standing):
                    if written in (other.get("depends") or []):
                        depends = [new if d == written else d for d in other["depends"]]
                        standing[i] = {**other, "depends": depends}

        for index, agent in enumerate(standing):
            if "id" not in agent:
                stand_in(index)
        try:
            workflow = Workflow.model_validate({**wf, "agents": standing})
        except ValidationError as e:
            refused = e.errors()
            fields = _agent_fields(refused)
            if fields is None or any(not f <= {"id", "name", "depends"} for f in fields.values()):
                return None  # a part the checks stand on: they would misjudge the plan
            if not said:  # (behind the reader's own problems until now)
                self._validation_problems(refused, self.root, agent_els)
            for index, f in fields.items():
                if "name" in f:
                    standing[index] = {**standing[index], "name": "llm"}
                if "id" in f:
                    stand_in(index)
            # A dependency on an id that is none, and no agent's: said, and left out.
            unusable = {
                (err["loc"][1], err["input"]) for err in refused if err["loc"][2] == "depends"
            }
            for index, agent in enumerate(standing):
                if any(i == index for i, _ in unusable):
                    depends = [d for d in agent["depends"] if (index, d) not in unusable]
                    standing[index] = {**agent, "depends": depends}
            try:
                workflow = Workflow.model_validate({**wf, "agents": standing})
            except ValidationError:
                return None
        parsed = ParsedWorkflow(workflow, (self, agent_els))
        parsed.stand_ins = stand_ins
        return parsed

    def _read_agent(self, el: etree._Element, index: int) -> dict[str, Any]:
        attrs = dict(el.attrib)
        if not attrs.keys() <= _AGENT_ATTR_SET:
            self._check_attrs(el, _AGENT_ATTRS, "agent", index)
        agent: dict[str, Any] = {}
        agent_id = attrs.get("id")
        if agent_id is None:
            self.problem(
                el,
                f'{_label(None, index)} has no id attribute; add id="…" (unique in the plan)',
                index,
            )
        else:
            agent["id"] = agent_id
        name = attrs.get("name")
        if name is None:
            self.problem(
                el,
                f'{_label(agent_id, index)} has no name attribute; add name="llm" (or browser, file, shell, a role)',
                index,
            )
        else:
            agent["name"] = name
        depends = attrs.get("depends")
        if depends:
            parts = depends.split(",")
            if " " in depends or "" in parts or any(not p or p != p.strip() for p in parts):
                parts = [d.strip() for d in parts if d.strip()]
            agent["depends"] = parts
        for_each = attrs.get("forEach")
        if for_each is not None:
            problem = source_problem(for_each)
            if problem is not None:
                self.problem(el, f"{_label(agent_id, index)}: {problem}", index)
            agent["for_each"] = for_each
        status = attrs.get("status")
        if status is not None:
            if status not in _STATUSES:
                self.problem(
                    el,
                    f'{_label(agent_id, index)}: status="{status}" must be one of {", ".join(_STATUSES)}',
                    index,
                )
            else:
                agent["status"] = status

        text = el.text
        stray = bool(text and not text.isspace())
        for child in el:
            tag = child.tag
            tail = child.tail
            if tail and not stray and not tail.isspace():
                stray = True
            if tag not in _AGENT_CHILD_SET:
                self._unknown_child(child, "agent", _AGENT_CHILDREN, index)
                continue
            if tag in agent or (tag == "nodes" and "steps" in agent):
                self.problem(
                    child, f"{_label(agent_id, index)} has more than one <{tag}>; keep one", index
                )
                continue
            if tag == "nodes":
                agent["steps"] = read_steps(child, lambda e, m: self.problem(e, m, index))
                continue
            if len(child):
                self.problem(
                    child,
                    f"<{tag}> of {_label(agent_id, index)} contains elements; write text only (escape '<' as &lt; or use CDATA)",
                    index,
                )
                agent[tag] = None
                continue
            if tag == "config":
                agent["config"] = self._read_config(child, _label(agent_id, index), index)
            elif tag == "output":
                agent["output"] = self._read_output(child, _label(agent_id, index), index)
            else:
                agent[tag] = _element_text(child)
        if "output" in agent:
            self._merge_output(el, agent, _label(agent_id, index), index)
        if stray:
            self.problem(
                el,
                f"<agent> {_label(agent_id, index)} holds loose text; put text inside <task> or <input>",
                index,
            )
        if "task" not in agent:  # (a missing id, task or name stands in: _partial)
            self.problem(
                el,
                f"{_label(agent_id, index)} has no <task>; add <task>what this agent should do</task>",
                index,
            )
        return agent

    def _read_config(self, el: etree._Element, label: str, index: int) -> dict[str, Any] | None:
        text = (el.text or "").strip()
        if not text:
            return {}
        value = self._json_text(
            el,
            text,
            f"<config> of {label}",
            'a JSON object such as {"tool": "shell", "command": "ls"}',
            index,
        )
        if value is _UNREAD:
            return None
        if not isinstance(value, dict):
            self.problem(
                el,
                f"<config> of {label} must be a JSON object {{…}}, not {type(value).__name__}",
                index,
            )
            return None
        return value

    def _read_output(self, el: etree._Element, label: str, index: int) -> Any:
        """``<output>{schema}</output>`` or ``<output schema="FILE"/>``: the schema's JSON
        value (checked as a JSON Schema by :func:`xsky.plan.output_schema.output_problems`),
        or None when it cannot be read (the problem is recorded)."""
        self._check_attrs(el, ("schema",), "output", index)
        text = (el.text or "").strip()
        file = el.get("schema")
        example = '<output>{"type": "object", "properties": {"title": {"type": "string"}}}</output>'
        if file is not None and text:
            self.problem(
                el,
                f"<output> of {label} has both a schema file and an inline schema; keep one",
                index,
            )
            return None
        if file is None and not text:
            self.problem(
                el,
                f"<output> of {label} is empty; write a JSON Schema inside it ({example}) or name a "
                'file: <output schema="shape.json"/>',
                index,
            )
            return None
        if file is not None:
            return self._read_schema_file(el, file, label, index)
        value = self._json_text(
            el, text, f"<output> of {label}", f"a JSON Schema such as {example}", index
        )
        return None if value is _UNREAD else value

    def _json_text(self, el: etree._Element, text: str, what: str, such: str, index: int) -> Any:
        """``text`` (the element's) parsed as JSON, or ``_UNREAD`` with the problem recorded at
        the line of the error inside it."""
        try:
            return JSON.decode(text)
        except (json.JSONDecodeError, ValueError, RecursionError) as e:
            line, col = self.pos(el)
            detail = e.msg if isinstance(e, json.JSONDecodeError) else str(e)
            if isinstance(e, json.JSONDecodeError):
                line += e.lineno - 1
            self.problems.append(
                Problem(f"{what} is not valid JSON ({detail}); write {such}", line, col, index)
            )
            return _UNREAD

    def _read_schema_file(self, el: etree._Element, file: str, label: str, index: int) -> Any:
        if self.base_dir is None and not _SCHEMA_FILES_READ.get():
            # A plan given as text (a model's reply, a replan, a plan sent through the API) is
            # read by a worker or a leader: a path in it would be opened on their machine.
            self.problem(
                el,
                f'<output schema="{file}"> of {label}: a plan given as text — a model\'s reply, '
                "a replan, a plan sent through the API — cannot name a file (it would be read "
                "on the machine that reads the plan); put the schema inline, <output>{…}</output>, "
                "or start the plan from its file (starter.py run PLAN.xml reads the schema beside "
                "it and sends it inline)",
                index,
            )
            return None
        path = Path(file) if self.base_dir is None else self.base_dir / file
        fix = "write the path relative to the plan file, or put the schema inline: <output>{…}</output>"
        try:
            data = _read_small_file(path, MAX_SCHEMA_BYTES + 1)
        except FileNotFoundError:
            self.problem(
                el, f'<output schema="{file}"> of {label}: no such file {path}; {fix}', index
            )
            return None
        except OSError as e:
            self.problem(
                el,
                f'<output schema="{file}"> of {label}: cannot read {path} ({e.strerror}); {fix}',
                index,
            )
            return None
        if len(data) > MAX_SCHEMA_BYTES:
            self.problem(
                el,
                f'<output schema="{file}"> of {label}: {path} is over {MAX_SCHEMA_BYTES:,} bytes; '
                "a JSON Schema is far smaller — name the schema file, not a data file",
                index,
            )
            return None
        try:
            return JSON.decode(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as e:
            detail = e.msg if isinstance(e, json.JSONDecodeError) else str(e)
            self.problem(
                el,
                f'<output schema="{file}"> of {label}: {path} is not valid JSON ({detail}); '
                "the file must hold one JSON Schema object",
                index,
            )
            return None

    def _merge_output(
        self, el: etree._Element, agent: dict[str, Any], label: str, index: int
    ) -> None:
        """The schema of ``<output>`` goes where the run reads it: ``config["output"]``."""
        schema = agent.pop("output")
        config = agent.get("config")
        if schema is None or ("config" in agent and config is None):
            return  # already reported
        if config and "output" in config:
            self.problem(
                el,
                f'{label} has both <output> and "output" in its <config>; keep one',
                index,
            )
            return
        agent["config"] = {**(config or {}), "output": schema}

    def _read_role(self, el: etree._Element) -> dict[str, Any]:
        self._check_attrs(el, _ROLE_ATTRS, "role")
        name = el.get("name")
        if not name:
            self.problem(
                el,
                '<role> needs a name attribute: <role name="reviewer" tools="file_read">…</role>',
            )
        role: dict[str, Any] = {"name": name or "unnamed"}
        for attr, field in (("description", "description"), ("model", "suggestedModel")):
            if el.get(attr) is not None:
                role[field] = el.get(attr)
        for attr, field in (
            ("tools", "allowedTools"),
            ("requestedTools", "requestedTools"),
            ("skills", "skillNames"),
        ):
            if el.get(attr) is not None:
                role[field] = [t.strip() for t in (el.get(attr) or "").split(",") if t.strip()]
        for child in el:
            if child.tag != "systemPrompt":
                self._unknown_child(child, "role", ("systemPrompt",))
            elif "systemPrompt" in role:
                self.problem(child, f"role {name} has more than one <systemPrompt>; keep one")
            else:
                role["systemPrompt"] = _element_text(child)
        if (el.text or "").strip():
            self.problem(
                el, f"<role> {name} holds loose text; put the prompt inside <systemPrompt>"
            )
        return role

    def _read_variables(self, el: etree._Element) -> dict[str, str]:
        self._check_no_text(el, "variables")
        variables: dict[str, str] = {}
        for child in el:
            if child.tag != "variable":
                self._unknown_child(child, "variables", ("variable",))
                continue
            self._check_attrs(child, ("name",), "variable")
            name = child.get("name")
            if not name:
                self.problem(
                    child,
                    'a <variable> needs a name attribute: <variable name="topic">default</variable>',
                )
                continue
            if name in variables:
                self.problem(child, f"variable {name!r} is declared twice; keep one")
                continue
            variables[name] = _element_text(child)
        return variables

    def _check_attrs(
        self, el: etree._Element, allowed: tuple[str, ...], what: str, index: int | None = None
    ) -> None:
        if len(el.attrib) <= len(allowed) and all(k in allowed for k in el.attrib):
            return
        for key in el.keys():
            if key == XML_SPACE:
                continue
            if key not in allowed:
                self.problem(
                    el,
                    f"unknown attribute {key!r} on <{what}>{nearest(key, allowed, cutoff=0.75)}; allowed: "
                    f"{', '.join(allowed)}",
                    index,
                )

    def _check_no_text(self, el: etree._Element, what: str) -> None:
        stray = [(el.text or "")] + [(c.tail or "") for c in el]
        if any(s.strip() for s in stray):
            self.problem(
                el, f"<{what}> holds loose text; put text inside <task>, <input> or <taskPrompt>"
            )

    def _unknown_child(
        self, el: etree._Element, parent: str, allowed: tuple[str, ...], index: int | None = None
    ) -> None:
        tag = tag_name(el)
        meant = nearest(tag, allowed, cutoff=0.75, shape="<{}>")
        self.problem(
            el,
            f"unknown element <{tag}> inside <{parent}>{meant}; allowed: {', '.join(allowed)}",
            index,
        )

    def _validation_problems(
        self, errors: list[ErrorDetails], root: etree._Element, agents: list[etree._Element]
    ) -> None:
        for err in errors:
            loc = err["loc"]
            msg = friendly_error(loc, err["type"], err["msg"], err.get("input"))
            if len(loc) >= 2 and loc[0] == "agents" and isinstance(loc[1], int):
                index = loc[1]
                el = agents[index]
                agent_id = el.get("id") or f"#{index + 1}"
                self.problem(el, f"agent {agent_id}: {msg}", index)
            else:
                self.problem(root, f"<workflow>: {msg}")


def _agent_fields(errors: list[ErrorDetails]) -> dict[int, set[str]] | None:
    """The fields of each agent the model refused, or None when it refused anything else
    (the workflow's own attributes, an agent as a whole)."""
    fields: dict[int, set[str]] = {}
    for err in errors:
        loc = err["loc"]
        if len(loc) < 3 or loc[0] != "agents" or not isinstance(loc[1], int):
            return None
        fields.setdefault(loc[1], set()).add(str(loc[2]))
    return fields


def _label(agent_id: str | None, index: int) -> str:
    return f"agent {agent_id}" if agent_id else f"agent #{index + 1}"


_UNREAD = object()  # what _json_text gives for text that is not JSON (None is valid JSON)


# -- writing ------------------------------------------------------------------------


# One encoder for every <config> written (json.dumps with options builds one per call: a
# tenth of writing a 30,000-agent plan, which a run does in its first workflow task).
_CONFIG_JSON = json.JSONEncoder(ensure_ascii=False, allow_nan=False)


def _config_text(config: dict[str, Any]) -> str:
    """``json.dumps(config, ensure_ascii=False, allow_nan=False)``, by the C encoder directly:
    in a workflow's sandbox ``isinstance`` is a Python wrapper (the SDK's), and ``encode``'s
    own checks made it half of writing a large plan there."""
    return "".join(_CONFIG_JSON.iterencode(config, _one_shot=True))


def workflow_to_xml(workflow: Workflow) -> str:
    """The seed's ``resetWorkflowXml``, done right: everything escaped, every field kept.

    ``parse_workflow(workflow_to_xml(w)) == w`` holds for every valid workflow.
    """
    root = _plan_head(workflow)
    if not workflow.agents:
        etree.indent(root, space="  ")
        return etree.tostring(root, encoding="unicode")
    # The document lxml would write for this tree, indented, with each plain agent written as
    # text (:func:`_plain_agent`): a run writes its whole plan as it starts, and building an
    # element per field took 0.3 s of a 30,000-agent run's first workflow task, which the SDK
    # fails after 2 s. Everything else is lxml's own writing, one child at a time.
    head = etree.tostring(etree.Element("workflow", dict(root.attrib)), encoding="unicode")
    parts = [head.removesuffix("/>") + ">"]
    parts += ["\n  " + _written(child) for child in root]
    parts += [
        "\n  " + (_plain_agent(a) or _written(_agent_element(None, a))) for a in workflow.agents
    ]
    parts.append("\n</workflow>")
    return "".join(parts)


def _plan_head(workflow: Workflow) -> etree._Element:
    """The plan's root element with everything but its agents (attributes, prompt,
    variables, roles)."""
    root = etree.Element("workflow")
    root.set("name", workflow.name)
    root.set("taskId", workflow.task_id)
    if workflow.modified:
        root.set("modified", "true")
    if workflow.budget is not None and limits_text(workflow.budget):
        root.set("budget", limits_text(workflow.budget))
    if workflow.task_prompt is not None:
        text_element(root, "taskPrompt", workflow.task_prompt)
    if workflow.variables:
        variables = etree.SubElement(root, "variables")
        for name, default in workflow.variables.items():
            text_element(variables, "variable", default).set("name", name)
    for role in workflow.roles:
        _role_element(root, role)
    return root


def _written(el: etree._Element) -> str:
    """``el`` as lxml writes it as a child of the plan's root, indented, without its tail."""
    holder = etree.Element("workflow")
    holder.append(el)
    etree.indent(holder, space="  ")
    return etree.tostring(el, encoding="unicode", with_tail=False)


_TEXT_SPECIAL = re.compile(r"[&<>\r]")
_ATTR_SPECIAL = re.compile(r'[&<>"\n\r\t]')
_TEXT_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\r": "&#13;"})
_ATTR_ESCAPES = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        '"': "&quot;",
        "\n": "&#10;",
        "\r": "&#13;",
        "\t": "&#9;",
    }
)


def _escaped_text(text: str) -> str:
    return text.translate(_TEXT_ESCAPES) if _TEXT_SPECIAL.search(text) else text


def _escaped_attr(text: str) -> str:
    return text.translate(_ATTR_ESCAPES) if _ATTR_SPECIAL.search(text) else text


def _text_part(tag: str, text: str) -> str:
    """:func:`text_element` as lxml writes it (``xml:space`` when tidying would change it)."""
    text = scrub_xml_illegal(text)
    tidy = not text or ("\n" not in text and not text[0].isspace() and not text[-1].isspace())
    space = "" if tidy or clean_text(text) == text else ' xml:space="preserve"'
    return f"\n    <{tag}{space}>{_escaped_text(text)}</{tag}>"


def _plain_agent(agent: WorkflowAgent) -> str | None:
    """What :func:`_agent_element` and lxml write for ``agent``, as text; None for an agent
    with steps, or with a character XML cannot carry (:data:`~xsky.wire.XML_ILLEGAL`) in a
    value lxml would refuse: lxml writes those, and says so."""
    if agent.steps:
        return None
    depends = ",".join(agent.depends)
    # lxml would refuse an attribute before the config is encoded: in that order here too
    if XML_ILLEGAL.search(f"{agent.name}{agent.id}{depends}{agent.for_each or ''}{agent.status}"):
        return None
    config = "" if agent.config is None else _config_text(agent.config)
    if XML_ILLEGAL.search(config):
        return None
    text = f'<agent name="{_escaped_attr(agent.name)}" id="{_escaped_attr(agent.id)}"'
    if agent.depends:  # (a list of one empty id is written as lxml writes it: depends="")
        text += f' depends="{_escaped_attr(depends)}"'
    if agent.for_each is not None:
        text += f' forEach="{_escaped_attr(agent.for_each)}"'
    if agent.status != "init":
        text += f' status="{_escaped_attr(agent.status)}"'
    text += ">" + _text_part("task", agent.task)
    if agent.input is not None:
        text += _text_part("input", agent.input)
    if agent.config is not None:
        text += f"\n    <config>{_escaped_text(config)}</config>"
    if agent.item is not None:
        text += _text_part("item", agent.item)
    if agent.result is not None:
        text += _text_part("result", agent.result)
    return text + "\n  </agent>"


def _role_element(root: etree._Element, role: RoleCapabilityModel) -> None:
    el = etree.SubElement(root, "role")
    el.set("name", role.name)
    if role.description:
        el.set("description", role.description)
    if role.suggested_model is not None:
        el.set("model", role.suggested_model)
    for attr, values in (
        ("tools", role.allowed_tools),
        ("requestedTools", role.requested_tools),
        ("skills", role.skill_names),
    ):
        if values:
            el.set(attr, ",".join(values))
    if role.system_prompt:
        text_element(el, "systemPrompt", role.system_prompt)


def _agent_element(root: etree._Element | None, agent: WorkflowAgent) -> etree._Element:
    el = etree.Element("agent") if root is None else etree.SubElement(root, "agent")
    el.set("name", agent.name)
    el.set("id", agent.id)
    if agent.depends:
        el.set("depends", ",".join(agent.depends))
    if agent.for_each is not None:
        el.set("forEach", agent.for_each)
    if agent.status != "init":
        el.set("status", agent.status)
    text_element(el, "task", agent.task)
    if agent.input is not None:
        text_element(el, "input", agent.input)
    if agent.config is not None:
        etree.SubElement(el, "config").text = _config_text(agent.config)
    write_steps(el, agent.steps)
    if agent.item is not None:
        text_element(el, "item", agent.item)
    if agent.result is not None:
        text_element(el, "result", agent.result)
    return el
