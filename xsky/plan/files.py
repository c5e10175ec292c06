"""Loading a plan file: parse, validate, and locate every problem in the file."""

from __future__ import annotations

import codecs
import re
import stat
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from xsky.errors import PlanError, Problem, UsageError, WorkflowValidationError, WorkflowXMLError
from xsky.kinds import TOOL_AGENT_KINDS
from xsky.plan import dag
from xsky.plan.agent_config import config_key_problems, direct_argument_problems, plan_warnings
from xsky.plan.extract import extract_workflow_xml
from xsky.plan.loops import (
    instruction_loop_warnings,
    named_value_problems,
    shared_output_warnings,
)
from xsky.plan.models import Workflow
from xsky.plan.output_schema import output_problems
from xsky.plan.steps import input_problems
from xsky.plan.variables import raw_item_problems, with_step_values
from xsky.plan.watches import nested_watch_problems
from xsky.plan.xml import DEFAULT_MAX_BYTES, ParsedWorkflow, parse_workflow_source
from xsky.security.roles import RoleCapabilityModel, plan_role_problems


@dataclass
class LoadedPlan:
    path: Path
    text: str
    workflow: Workflow
    # what may go wrong on some workers only (a shell agent that needs a model): said, not refused
    warnings: list[Problem] = field(default_factory=list)
    # an Eko plan's one line on what was mapped (xsky.plan.eko), None for a native plan; and
    # the repairs made to its XML (xsky.plan.repair), each at its line:col
    dialect: str | None = None
    repairs: list[Problem] = field(default_factory=list)
    parsed: ParsedWorkflow | None = field(default=None, repr=False, compare=False)

    def locate(self, problems: list[Problem]) -> list[Problem]:
        """``problems`` found later (about an agent: ``agent_index``) at their line:col."""
        return _located(self.parsed, problems) if self.parsed is not None else problems


def _unreadable_kind(p: Path) -> str | None:
    """What ``p`` is when reading it could wait forever or fail (a named pipe, a socket)."""
    try:
        mode = p.stat().st_mode
    except OSError:
        return None  # said when it is opened
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return None


_WINDOWS_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


def _backslash_hint(path: str) -> str:
    """What to add when a plan's path is written as Windows writes one (walk12: `validate
    plans\\a.xml` and a path copied from Explorer said only 'no such file'): here a backslash
    is a character of the name, not a separator, and a drive letter names nothing."""
    if _WINDOWS_DRIVE.match(path):
        return (
            " — a Windows path (a drive letter) names no file on this machine: give the file's "
            "path here, its folders separated by '/'"
        )
    if "\\" not in path:
        return ""
    slashed = path.replace("\\", "/")
    if Path(slashed).exists():
        return f" (did you mean {slashed}? folders are separated by '/' here, not '\\')"
    return " (folders are separated by '/' here, not '\\')"


def read_plan_bytes(path: str | Path, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[Path, bytes]:
    """The file's bytes, read no further than the limit (a device, a pipe or a huge file is
    refused without being read whole)."""
    p = Path(path)
    if not p.exists():
        raise UsageError(
            f"{p}: no such file; give the path of a workflow XML file{_backslash_hint(str(path))}"
        )
    if p.is_dir():
        raise UsageError(f"{p}: is a directory; give the path of a workflow XML file")
    kind = _unreadable_kind(p)
    if kind is not None:
        # Opening a pipe waits for a writer (the command hung); a socket cannot be opened.
        # A device is read as far as the limit below, as any file (/dev/zero is said so).
        raise UsageError(
            f"{p}: is {kind}, not a file; give the path of a workflow XML file (save what "
            "writes to it to a file first)"
        )
    try:
        with p.open("rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as e:
        raise UsageError(f"{p}: cannot read it ({e.strerror})") from None
    if len(data) > max_bytes:
        size = f"{p.stat().st_size:,} bytes" if p.is_file() else "endless (not a regular file)"
        raise UsageError(
            f"{p}: {size}, over the {max_bytes:,}-byte limit of a plan; split the work into smaller "
            "plans or raise XSKY_MAX_PLAN_BYTES"
        )
    return p, with_byte_order_mark(data)


def with_byte_order_mark(data: bytes) -> bytes:
    """``data`` with the byte order mark of the UTF-16 or UTF-32 its first four bytes show
    when it has none: a plan opens with ASCII (``<``, a space, a newline), so one saved as UTF-16
    or UTF-32 without a mark has NULs between those characters (XML 1.0's appendix F). libxml2
    read a UTF-16 plan without its mark as UTF-8 ("Document is empty" big endian, "Char 0x0 out
    of allowed range" little endian), and `convert` wrote a UTF-32 one as it was — walk10/11.
    Other bytes are returned as they are."""
    head = data[:4]
    if len(head) < 4 or head.startswith(
        (codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, codecs.BOM_UTF32_BE)
    ):
        return data  # (UTF-32 little endian's mark begins with UTF-16's)
    nul = (head[0] == 0, head[1] == 0, head[2] == 0, head[3] == 0)
    mark = {
        (True, True, True, False): codecs.BOM_UTF32_BE,
        (False, True, True, True): codecs.BOM_UTF32_LE,
        (True, False, True, False): codecs.BOM_UTF16_BE,
        (False, True, False, True): codecs.BOM_UTF16_LE,
    }.get(nul, b"")
    return mark + data


def load_plan(
    path: str | Path,
    *,
    known_agents: Collection[str] = TOOL_AGENT_KINDS,
    variables: Collection[str] | None = (),
    context_keys: Collection[str] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    base_roles: Mapping[str, RoleCapabilityModel] | None = None,
) -> LoadedPlan:
    """Parse and validate; raise :class:`PlanError` whose problems carry line:col in the file.
    ``variables`` None leaves ``{{names}}`` and steps' inputs unchecked (the run gives them).

    With ``base_roles`` (built-ins and settings), a ``<role>`` that would widen one is refused.
    """
    p, data = read_plan_bytes(path, max_bytes)
    parsed = _checked(
        data,
        known_agents=known_agents,
        variables=variables,
        context_keys=context_keys,
        max_bytes=max_bytes,
        base_roles=base_roles,
        base_dir=p.parent,
    )
    # (as it will run: an Eko plan given values for names its steps read has them as variables)
    given = with_step_values(parsed.workflow, dict.fromkeys(variables or (), ""))
    warnings = _located(
        parsed,
        plan_warnings(parsed.workflow)
        + shared_output_warnings(parsed.workflow)
        + instruction_loop_warnings(given),
    )
    text = plan_text(data)
    return LoadedPlan(p, text, parsed.workflow, warnings, parsed.dialect, parsed.repairs, parsed)


_BOMS = (  # (UTF-32's little-endian mark begins with UTF-16's: it is looked for first)
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
_DECLARED = re.compile(rb"""<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")
_DECLARATION = re.compile(r"""(<\?xml[^>]*?encoding\s*=\s*["'])[^"']*(["'])""")


def plan_text(data: bytes) -> str:
    """A plan file's text as XML reads it — by its byte order mark (UTF-8, UTF-16, UTF-32), else
    its declared encoding, else UTF-8 — with a declaration that says UTF-8, as the text is then
    written. (`convert` of a native plan saved as UTF-16 by a Windows editor wrote it "as it is":
    its bytes read as UTF-8, every other character a NUL — walk10.)"""
    encoding = next((name for bom, name in _BOMS if data.startswith(bom)), None)
    if encoding is None:
        declared = _DECLARED.match(data)
        encoding = declared.group(1).decode("ascii") if declared else "utf-8"
    try:
        text = data.decode(encoding, errors="replace")
    except LookupError:  # an encoding Python does not know: as before
        text = data.decode("utf-8", errors="replace")
    return _DECLARATION.sub(r"\g<1>UTF-8\g<2>", text.lstrip("\ufeff"), count=1)


def check_plan_source(
    data: bytes,
    *,
    known_agents: Collection[str] = TOOL_AGENT_KINDS,
    variables: Collection[str] | None = (),
    context_keys: Collection[str] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    base_roles: Mapping[str, RoleCapabilityModel] | None = None,
    base_dir: Path | None = None,
) -> ParsedWorkflow:
    """Parse and validate plan bytes; every problem located at its line:col. ``variables``
    None leaves ``{{names}}`` unchecked (a replan's run supplies them); ``base_dir``: the
    folder of the file it was read from (None: text, which may name no schema file). With the plan, what
    reading it said on the way: an Eko plan's line on what was mapped (``dialect``) and each
    repair or part left out (``repairs``), for a person to see."""
    return _checked(
        data,
        known_agents=known_agents,
        variables=variables,
        context_keys=context_keys,
        max_bytes=max_bytes,
        base_roles=base_roles,
        base_dir=base_dir,
    )


def _checked(
    data: bytes,
    *,
    known_agents: Collection[str],
    variables: Collection[str] | None,
    context_keys: Collection[str] | None,
    max_bytes: int,
    base_roles: Mapping[str, RoleCapabilityModel] | None,
    base_dir: Path | None = None,
) -> ParsedWorkflow:
    def whole(parsed: ParsedWorkflow) -> list[Problem]:
        """The checks of the whole plan, and of each direct tool's arguments."""
        workflow = parsed.workflow
        problems = dag.validate(
            workflow,
            known_agents,
            variables=variables,
            context_keys=context_keys,
            for_a_person=True,
        )
        problems += direct_argument_problems(workflow)
        problems += config_key_problems(workflow)
        problems += named_value_problems(workflow)
        problems += nested_watch_problems(workflow)
        problems += raw_item_problems(workflow)
        problems += output_problems(workflow)
        if variables is not None:
            problems += input_problems(workflow, variables)
        if base_roles is not None:
            problems += [
                Problem(message) for message in plan_role_problems(workflow.roles, base_roles)
            ]
        if parsed.dialect:  # an Eko plan declares no variables: only --var gives one
            problems = [
                replace(p, message=p.message.replace(_DECLARE, _EKO_DECLARE))
                if _DECLARE in p.message
                else p
                for p in problems
            ]
        return sorted(_located(parsed, problems), key=_position)

    try:
        parsed = parse_workflow_source(data, max_bytes=max_bytes, base_dir=base_dir)
    except WorkflowXMLError as e:
        if (inside := _plan_inside_text(data)) is not None:
            raise WorkflowXMLError([inside]) from None
        if data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith((b"{", b"[")):
            eko_v1 = b'"nodes"' in data or b'"dependencies"' in data
            raise WorkflowXMLError(
                [
                    Problem(
                        "this is JSON"
                        + (' — Eko v1\'s plan format ({"nodes": …})' if eko_v1 else "")
                        + ", not a plan: xsky reads plans written as XML, a native <workflow> "
                        "(docs/xml.md) or Eko's <root><agents>… (v2 and later)",
                        1,
                        1,
                    )
                ]
            ) from None
        if not isinstance(e.partial, ParsedWorkflow):
            raise
        # What the reader refused, and what the rest of the plan would still be refused for.
        seen = {p.message for p in e.problems}
        read = e.partial
        more = [q for q in (read.as_written(p) for p in whole(read)) if q.message not in seen]
        raise WorkflowXMLError(sorted([*e.problems, *more], key=_position)) from None
    problems = whole(parsed)
    if problems:
        raise WorkflowValidationError(problems)
    return parsed


_DECLARE = "(declare it in <variables> or pass --var "
_EKO_DECLARE = (
    "(Eko plans have no {{…}} references: Eko passes the text as it is; give it with --var, or "
    "write the text without double braces — e.g. --var "
)


# What may stand around a plan in an XML file: comments, an XML declaration, a document type
# (refused by the parser, which says so), white space.
_XML_AROUND = re.compile(
    r"\s+|<!--.*?-->|<\?xml[^>]*\?>|<!DOCTYPE[^\[>]{0,1024}(?:\[[^\]]{0,4096}\])?\s*>", re.S
)


def _plan_inside_text(data: bytes) -> Problem | None:
    """A plan that does not parse because other text surrounds it — a model's reply saved as
    it came (prose, a Markdown fence): where the plan is, and what to save. None when the
    file begins with its plan (its own problems are the ones to say)."""
    text = data.decode("utf-8", errors="replace").lstrip("\ufeff")
    try:
        plan = extract_workflow_xml(text)
    except WorkflowXMLError:
        return None
    at = text.find(plan)  # (whole: a model that corrected itself repeats the plan's start)
    if at < 0:
        at = text.find(plan[:200])  # mended (cut off): its start is as written
    if at < 0:
        return None
    # Nothing but the plan (a plan cut off, mended by the search; comments and an XML
    # declaration around it, as the examples have): its own problems are said.
    if not _XML_AROUND.sub("", text[:at]) and not _XML_AROUND.sub("", text[at + len(plan) :]):
        return None
    first = text.count("\n", 0, at) + 1
    last = first + plan.count("\n")
    tag = "<root>…</root>" if plan.startswith("<root") else "<workflow …>…</workflow>"
    return Problem(
        f"the plan is inside other text (a model's reply, a Markdown fence?): it runs from "
        f'line {first} to line {last}; save only {tag} in the file (`starter.py plan "…" > '
        "plan.xml` writes just the plan)",
        first,
        1,
    )


def _located(parsed: ParsedWorkflow, problems: list[Problem]) -> list[Problem]:
    """Each problem at the line:col of its agent (the plan's start for the rest)."""
    return [
        p.located(*parsed.step_position(p.agent_index, p.step))
        if p.agent_index is not None and p.step is not None
        else p.located(*parsed.agent_position(p.agent_index))
        if p.agent_index is not None
        else p.located(1, 1)
        for p in problems
    ]


def _position(problem: Problem) -> tuple[int, int]:
    return (problem.line or 0, problem.column or 0)


__all__ = [
    "LoadedPlan",
    "PlanError",
    "UsageError",
    "check_plan_source",
    "load_plan",
    "read_plan_bytes",
]
