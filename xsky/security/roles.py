"""Roles: who an agent is, what it may use. The name in ``<agent name=…>`` is the role.

A role (LingXiao's ``RoleCapabilityModel``) has a system prompt, ``allowedTools`` it may
use, ``requestedTools`` it may use only with a person's approval, bound ``skillNames`` and
a ``suggestedModel``. Built in: the seed's four tool agents and its 13 preset roles.
Layers, later wins field by field: built-ins < ``~/.xsky/settings.json`` <
``<project>/.xsky/settings.json`` < ``<role>`` elements in a plan < ``define_role`` on a
running leader.

A role holds the tools of MCP servers by name: ``mcp__github`` every tool of that server,
``mcp__github__create_issue`` one (:mod:`xsky.security.mcp`); they count as privileged.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Annotated, Any

from pydantic import Field, StringConstraints

from xsky.security.mcp import entry_problem, holds, is_mcp
from xsky.security.tools import TOOLS as TOOL_SPECS
from xsky.security.tools import privileged
from xsky.wire import WireModel, XmlText

# Role names, which are agents' names too: what `<agent name=…>` and `<role name=…>` accept.
AGENT_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
AgentName = Annotated[str, StringConstraints(pattern=AGENT_NAME_RE.pattern)]


class RoleCapabilityModel(WireModel):
    """A role (LingXiao's RoleCapabilityModel): who the agent is and what it may use."""

    name: AgentName
    description: XmlText = ""
    system_prompt: XmlText = ""
    allowed_tools: list[str] = Field(default_factory=list)
    requested_tools: list[str] = Field(default_factory=list)  # usable with a person's approval
    skill_names: list[str] = Field(default_factory=list)
    suggested_model: XmlText | None = None


def has(entries: Iterable[str], tool: str) -> bool:
    """Does a role's tool list (or a person-only list) hold ``tool``? An MCP tool is held by its
    own name or by its server's (``mcp__fs`` holds ``mcp__fs__read_file``)."""
    return holds(entries, tool) if is_mcp(tool) else tool in entries


TOOLS: dict[str, str] = {name: spec.description for name, spec in TOOL_SPECS.items()}

_ALWAYS = ["ask_user", "read_skill"]
_READ = ["file_read", "file_list", "code_search"]
_WRITE = ["file_write"]
_WEB = [
    "browser_navigate",
    "browser_click",
    "browser_type",
    "browser_extract",
    "browser_screenshot",
    "http_get",
]


def _role(
    name: str, description: str, prompt: str, allowed: list[str], requested: list[str] | None = None
) -> RoleCapabilityModel:
    return RoleCapabilityModel(
        name=name,
        description=description,
        system_prompt=prompt,
        allowed_tools=list(dict.fromkeys(allowed + _ALWAYS)),
        requested_tools=requested or [],
    )


_RULES = (
    " Work only inside the run's workspace. Use tools to check facts instead of guessing. When a tool "
    "fails, read the error and change your approach rather than repeating the same call. If you cannot go "
    "on without a decision only a person can make, use ask_user. Finish with a clear, complete answer: it "
    "is your result, and other agents may build on it."
)

BUILTIN_ROLES: dict[str, RoleCapabilityModel] = {
    r.name: r
    for r in [
        _role(
            "browser",
            "opens web pages in Chromium: navigate, click, type, extract text and links, screenshots; plain HTTP GET",
            "You are a browser agent. You find information on the web by navigating pages, clicking, typing into "
            "forms and extracting the exact text asked for. Quote values exactly as the page shows them and give "
            "the URL you found them on." + _RULES,
            _WEB,
        ),
        _role(
            "llm",
            "works with text: summarize, extract, compare, classify, write",
            "You are a careful writer and analyst. You work only from the input you are given: summarize, extract, "
            "compare or rewrite it as the task asks, and say plainly when the input does not contain the answer."
            + _RULES,
            [],
        ),
        _role(
            "file",
            "reads, writes and lists files in the run's workspace",
            "You are a file agent. You read, write and organise files in the workspace. Before overwriting a "
            "file, read it; report the paths you changed." + _RULES,
            _READ + _WRITE,
        ),
        _role(
            "shell",
            "runs shell commands in the run's workspace (build, test, inspect)",
            "You are a shell agent. You run commands to inspect, build and test. Prefer short, safe, "
            "non-interactive commands; report the commands you ran and what they printed." + _RULES,
            ["shell", "file_read", "file_list"],
        ),
        _role(
            "architect",
            "decomposes a task and designs the solution: structure, interfaces, trade-offs",
            "You are a software architect. You break a task into parts, choose structure and interfaces, and "
            "weigh trade-offs explicitly. Read the existing code before proposing changes; produce a design that "
            "others can implement step by step." + _RULES,
            _READ,
            ["shell"],
        ),
        _role(
            "backend",
            "implements server-side code, APIs, data access and their tests",
            "You are a backend developer. You implement server-side features with clear interfaces, error "
            "handling and tests, following the conventions already in the codebase. Run the tests you touch."
            + _RULES,
            _READ + _WRITE + ["shell", "python_exec"],
        ),
        _role(
            "frontend",
            "implements user interfaces and checks them in a browser",
            "You are a frontend developer. You build accessible, responsive user interfaces that match the "
            "existing style, and you check your work in the browser." + _RULES,
            _READ
            + _WRITE
            + [
                "shell",
                "browser_navigate",
                "browser_click",
                "browser_extract",
                "browser_screenshot",
            ],
        ),
        _role(
            "fullstack",
            "implements features end to end, backend and frontend",
            "You are a full-stack developer. You deliver a feature end to end: data, API, interface and tests, "
            "keeping each layer consistent with the others." + _RULES,
            _READ
            + _WRITE
            + [
                "shell",
                "python_exec",
                "browser_navigate",
                "browser_click",
                "browser_extract",
                "browser_screenshot",
            ],
        ),
        _role(
            "explore",
            "researches a question: reads code, docs and web pages, reports findings with sources",
            "You are an exploration researcher. You investigate a question by reading code, documentation and "
            "web pages, and report findings with their sources. You change nothing." + _RULES,
            _READ + ["http_get", "browser_navigate", "browser_extract"],
            ["shell"],
        ),
        _role(
            "verify",
            "checks that work is correct: runs tests, reproduces claims, reports evidence",
            "You are a verification engineer. You check claims and changes by running tests and reproducing "
            "results, and you report evidence: commands, outputs, pass or fail." + _RULES,
            _READ + ["shell", "python_exec"],
        ),
        _role(
            "doc",
            "writes and updates documentation: READMEs, guides, references",
            "You are a documentation engineer. You write clear, accurate documentation for its readers, checked "
            "against the code it describes, with working examples." + _RULES,
            _READ + _WRITE,
        ),
        _role(
            "test",
            "writes and runs tests that prove behaviour",
            "You are a test engineer. You write tests that prove the behaviour they name, cover edge cases and "
            "failures, and you run them." + _RULES,
            _READ + _WRITE + ["shell", "python_exec"],
        ),
        _role(
            "devops",
            "builds, deploys and operates: CI, containers, configuration",
            "You are a DevOps engineer. You handle builds, CI, containers and configuration; you make changes "
            "reproducible and explain how to roll them back." + _RULES,
            _READ + _WRITE + ["shell"],
            ["http_get"],
        ),
        _role(
            "data",
            "analyses and transforms data: CSV, JSON, SQL, statistics",
            "You are a data engineer. You load, clean, transform and analyse data, state your assumptions, and "
            "check results with small computations." + _RULES,
            _READ + _WRITE + ["python_exec", "shell"],
        ),
        _role(
            "security",
            "reviews code and configuration for vulnerabilities and risky practices",
            "You are a security engineer. You review code and configuration for vulnerabilities, secrets and "
            "risky defaults, rate each finding by severity and say how to fix it." + _RULES,
            _READ,
            ["shell"],
        ),
        _role(
            "ui-design",
            "designs interfaces: layout, typography, accessibility, visual checks",
            "You are a UI designer. You design clear, accessible interfaces, write the markup and styles, and "
            "look at the result in the browser." + _RULES,
            _READ + _WRITE + ["browser_navigate", "browser_screenshot"],
        ),
        _role(
            "refactor",
            "restructures code without changing its behaviour",
            "You are a refactoring engineer. You improve structure without changing behaviour: small steps, "
            "tests run before and after each one." + _RULES,
            _READ + _WRITE + ["shell"],
        ),
    ]
}


def role_problems(role: Any) -> list[str]:
    """What is wrong with a role definition (a role or a define_role request); empty when fine."""
    problems = []
    if not AGENT_NAME_RE.match(role.name):
        problems.append(
            f"role name {role.name!r} is not valid: letters, digits, '_' or '-', starting with a letter (max 64)"
        )
    for field, tools in (
        ("allowedTools", role.allowed_tools),
        ("requestedTools", role.requested_tools),
    ):
        unknown = [t for t in tools if t not in TOOLS and not is_mcp(t)]
        if unknown:
            problems.append(
                f"role {role.name}: unknown {field} {', '.join(unknown)}; tools are {', '.join(TOOLS)}, "
                "and the tools of MCP servers: mcp__<server> or mcp__<server>__<tool>"
            )
        problems += [
            f"role {role.name}: {field}: {p}"
            for p in (entry_problem(t) for t in tools if is_mcp(t))
            if p is not None
        ]
    both = sorted(set(role.allowed_tools) & set(role.requested_tools))
    if both:
        problems.append(
            f"role {role.name}: {', '.join(both)} both allowed and requested; keep each in one list"
        )
    return problems


def plan_role_problems(
    plan_roles: Iterable[RoleCapabilityModel], base: Mapping[str, RoleCapabilityModel]
) -> list[str]:
    """A plan (which a model may have written) may narrow a known role, never widen it."""
    problems = []
    for role in plan_roles:
        known = base.get(role.name)
        if known is None:
            continue  # a new role: it gets privileged tools only with a person's approval (effective_roles)
        added = [t for t in role.allowed_tools if not has(known.allowed_tools, t)]
        added += [
            t
            for t in role.requested_tools
            if not has(known.allowed_tools, t) and not has(known.requested_tools, t)
        ]
        if added:
            problems.append(
                f'the plan\'s <role name="{role.name}"> gives the role {role.name} {", ".join(dict.fromkeys(added))}, '
                f"which it does not have; a plan may only narrow a role. Give tools in .xsky/settings.json "
                f"or with define_role"
            )
    return problems


def effective_roles(
    plan_roles: Iterable[RoleCapabilityModel],
    base: Mapping[str, RoleCapabilityModel],
    approved: bool,
) -> dict[str, RoleCapabilityModel]:
    """The roles a plan's ``<role>`` elements give, as far as a plan may give them.

    A known role is narrowed (never widened, whatever the plan says). A role the plan
    invents may hold privileged tools (exec, network, writes) only once a person approved
    the plan (``approve_plan``; a review that timed out is no person's approval); until then
    each use of one is asked for (moved to requestedTools). Either way a worker that does not
    know the role asks a person for each such call (:func:`person_only_tools`).
    """
    out: dict[str, RoleCapabilityModel] = {}
    for role in plan_roles:
        known = base.get(role.name)
        if known is not None:
            allowed = [t for t in role.allowed_tools if has(known.allowed_tools, t)]
            requested = [
                t
                for t in role.requested_tools
                if has(known.allowed_tools + known.requested_tools, t) and t not in allowed
            ]
            out[role.name] = role.model_copy(
                update={"allowed_tools": allowed, "requested_tools": requested}
            )
        elif approved:
            out[role.name] = role
        else:
            allowed = [t for t in role.allowed_tools if not privileged(t)]
            requested = list(
                dict.fromkeys(
                    role.requested_tools + [t for t in role.allowed_tools if privileged(t)]
                )
            )
            out[role.name] = role.model_copy(
                update={"allowed_tools": allowed, "requested_tools": requested}
            )
    return out


def trusted_role(
    given: RoleCapabilityModel, known: RoleCapabilityModel | None
) -> RoleCapabilityModel:
    """The role a worker lets an agent act with: what the run says, within what the worker
    itself knows of the role (its built-ins and settings). A role it does not know (from a
    plan, define_role, or a forged input) gets its privileged tools only with approval."""
    if known is not None:
        allowed = [t for t in given.allowed_tools if has(known.allowed_tools, t)]
        requested = [
            t
            for t in given.requested_tools + given.allowed_tools
            if has(known.allowed_tools + known.requested_tools, t) and t not in allowed
        ]
    else:
        allowed = [t for t in given.allowed_tools if not privileged(t)]
        requested = [t for t in given.requested_tools + given.allowed_tools if t not in allowed]
    return given.model_copy(
        update={"allowed_tools": allowed, "requested_tools": list(dict.fromkeys(requested))}
    )


def person_only_tools(
    given: RoleCapabilityModel | None, known: RoleCapabilityModel | None
) -> list[str]:
    """The tools of a role the worker does not know that only a person may allow, call by call:
    all its privileged ones (writes, exec, network).

    :func:`trusted_role` moves them to requestedTools, but a broad allow rule
    (``allow: ["shell"]``) or the bypass mode would answer that ask without a person; a role
    an LLM-written plan or a forged input made up must not be let through so.
    """
    if given is None or known is not None:
        return []
    return [t for t in dict.fromkeys(given.allowed_tools + given.requested_tools) if privileged(t)]


def with_skill_access(role: RoleCapabilityModel | None) -> RoleCapabilityModel | None:
    """A role with bound skills can read them: ``read_skill`` is allowed (it reads only those)."""
    if role is None or not role.skill_names or "read_skill" in role.allowed_tools:
        return role
    return role.model_copy(update={"allowed_tools": [*role.allowed_tools, "read_skill"]})


def merge_roles(
    *layers: Iterable[RoleCapabilityModel] | Mapping[str, Any],
) -> dict[str, RoleCapabilityModel]:
    """Merge role layers, later wins field by field (a layer may override one field only).

    A layer is a list of roles, or a mapping name → partial role fields (settings files).
    """
    merged: dict[str, RoleCapabilityModel] = {}
    for layer in layers:
        if isinstance(layer, Mapping):
            items = [(name, dict(fields)) for name, fields in layer.items()]
        else:
            items = [(r.name, r.model_dump(by_alias=False, exclude_unset=True)) for r in layer]
        for name, fields in items:
            fields.pop("name", None)
            base = merged.get(name)
            if base is None:
                fields.setdefault(
                    "system_prompt",
                    f"You are {name}: {fields.get('description', 'an agent')}." + _RULES,
                )
                merged[name] = RoleCapabilityModel(name=name, **fields)
            else:
                merged[name] = base.model_copy(update=fields)
    return merged
