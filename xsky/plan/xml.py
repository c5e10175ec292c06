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

Parsing is hardened: no DTDs, no entity expansion, no network, a size limit; the tree is
then read by :mod:`xsky.plan.xml_reader`. Anything wrong raises :class:`WorkflowXMLError`
with line and column; nothing else escapes. Finding the plan inside an LLM reply is
:mod:`xsky.plan.extract`'s.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from lxml import etree

from xsky.errors import Problem, WorkflowXMLError
from xsky.gcpause import gc_paused
from xsky.plan.budget import limits_text
from xsky.plan.models import (
    RoleCapabilityModel,
    Workflow,
    WorkflowAgent,
    scrub_xml_illegal,
)
from xsky.plan.xml_reader import XML_SPACE, ParsedWorkflow, Reader, clean_text

__all__ = [
    "DEFAULT_MAX_BYTES",
    "ParsedWorkflow",
    "parse_workflow",
    "parse_workflow_source",
    "workflow_to_xml",
]

DEFAULT_MAX_BYTES = 5 * 1024 * 1024

# One parser per process is enough: lxml parsers are reusable, and building one per call
# costs more than parsing a small plan.
_PARSER_OPTIONS: dict[str, Any] = dict(
    resolve_entities=False,
    no_network=True,
    load_dtd=False,
    dtd_validation=False,
    huge_tree=False,
    remove_comments=True,
    remove_pis=True,
    collect_ids=False,
)


def parse_workflow(text: str | bytes, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Workflow:
    """Parse workflow XML into a :class:`Workflow`; a missing ``taskId`` gets a uuid4."""
    return parse_workflow_source(text, max_bytes=max_bytes).workflow


def parse_workflow_source(
    text: str | bytes, *, max_bytes: int = DEFAULT_MAX_BYTES, base_dir: Path | None = None
) -> ParsedWorkflow:
    """Like :func:`parse_workflow`, and also return each agent's line and column.
    ``base_dir``: where ``<output schema="FILE"/>`` paths start (None: the working directory)."""
    data, source, encoding = _as_bytes(text, max_bytes)
    root = _parse_tree(data, source, encoding)
    with gc_paused():
        return Reader(root, source, base_dir).read()


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


def _parse_tree(data: bytes, source: str, encoding: str | None) -> etree._Element:
    # Refuse a DTD before libxml2 sees it, so it never tries to fetch an external subset.
    prolog_end = _PROLOG_SKIP.match(source)
    if source.startswith("<!DOCTYPE", prolog_end.end() if prolog_end else 0):
        raise WorkflowXMLError([_doctype_problem(source)])
    parser = etree.XMLParser(encoding=encoding, **_PARSER_OPTIONS)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as e:
        line, col = e.position if e.position else (e.lineno or 1, 1)
        raise WorkflowXMLError([Problem(_syntax_message(e), line or 1, max(col, 1))]) from None
    except (etree.LxmlError, ValueError, LookupError) as e:
        raise WorkflowXMLError([Problem(f"the text is not readable XML: {e}", 1, 1)]) from None
    if root is None:
        raise WorkflowXMLError([Problem("the plan is empty: expected a <workflow> element", 1, 1)])
    tree = root.getroottree()
    if tree.docinfo.doctype or tree.docinfo.internalDTD is not None:
        raise WorkflowXMLError([_doctype_problem(source)])  # e.g. a UTF-16 document
    return root


def _syntax_message(e: etree.XMLSyntaxError) -> str:
    msg = re.sub(r", line \d+, column \d+.*$", "", str(e.msg or e)).strip()
    hint = ""
    if "xmlParseEntityRef" in msg or ("Entity" in msg and "not defined" in msg):
        hint = " (write a literal '&' as &amp;; only &amp; &lt; &gt; &quot; &apos; and &#N; are allowed)"
    elif "StartTag: invalid element name" in msg or "xmlParseStartTag" in msg:
        hint = " (write a literal '<' in text as &lt; or wrap the text in <![CDATA[ … ]]>)"
    elif "Opening and ending tag mismatch" in msg:
        hint = " (every <tag> needs its matching </tag>)"
    elif "Start tag expected" in msg or "Document is empty" in msg:
        hint = " (a plan starts with <workflow …>)"
    elif "Excessive depth" in msg:
        hint = " (elements are nested too deeply; a plan needs only <workflow> → <agent> → <task>)"
    return f"XML syntax error: {msg}{hint}"


def _offset_to_line_col(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, col


def _find_in_source(source: str, needle: str) -> tuple[int, int]:
    at = source.find(needle)
    return _offset_to_line_col(source, at) if at >= 0 else (1, 1)


# -- writing ------------------------------------------------------------------------


def _text_element(parent: etree._Element, tag: str, text: str) -> etree._Element:
    el = etree.SubElement(parent, tag)
    # A result set on a model without validation (the leader's copies) may hold what XML 1.0
    # cannot carry at all (an ESC, a NUL): U+FFFD, as validation itself does.
    text = scrub_xml_illegal(text)
    el.text = text
    if clean_text(text) != text:
        # Keep edge whitespace and indentation that the reader would otherwise tidy away.
        el.set(XML_SPACE, "preserve")
    return el


def workflow_to_xml(workflow: Workflow) -> str:
    """The seed's ``resetWorkflowXml``, done right: everything escaped, every field kept.

    ``parse_workflow(workflow_to_xml(w)) == w`` holds for every valid workflow.
    """
    root = etree.Element("workflow")
    root.set("name", workflow.name)
    root.set("taskId", workflow.task_id)
    if workflow.modified:
        root.set("modified", "true")
    if workflow.budget is not None and limits_text(workflow.budget):
        root.set("budget", limits_text(workflow.budget))
    if workflow.task_prompt is not None:
        _text_element(root, "taskPrompt", workflow.task_prompt)
    if workflow.variables:
        variables = etree.SubElement(root, "variables")
        for name, default in workflow.variables.items():
            _text_element(variables, "variable", default).set("name", name)
    for role in workflow.roles:
        _role_element(root, role)
    for agent in workflow.agents:
        _agent_element(root, agent)
    etree.indent(root, space="  ")
    return etree.tostring(root, encoding="unicode")


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
        _text_element(el, "systemPrompt", role.system_prompt)


def _agent_element(root: etree._Element, agent: WorkflowAgent) -> None:
    el = etree.SubElement(root, "agent")
    el.set("name", agent.name)
    el.set("id", agent.id)
    if agent.depends:
        el.set("depends", ",".join(agent.depends))
    if agent.status != "init":
        el.set("status", agent.status)
    _text_element(el, "task", agent.task)
    if agent.input is not None:
        _text_element(el, "input", agent.input)
    if agent.config is not None:
        etree.SubElement(el, "config").text = json.dumps(
            agent.config, ensure_ascii=False, allow_nan=False
        )
    if agent.result is not None:
        _text_element(el, "result", agent.result)
