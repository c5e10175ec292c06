"""Permission rules: their syntax, what they match, and one call decided by rules and role.

The policy as a whole — the order of rules, role and mode, and who may write which rule — is
told in :mod:`xsky.security.permissions`, which decides every call; shell commands are
decided part by part in :mod:`xsky.security.shell_rules`. This module is what both build on:
:class:`Rule` and :class:`Decision`, the settings a run carries, :func:`parse_rule`, the
``domain:`` specifier, :func:`matches`, and :func:`decide_one`, which decides one tool on one
subject (a path, a URL, one simple command) against a :class:`Check`.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import ipaddress
import posixpath
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field

from xsky.security.mcp import Hint, covers, entry_problem, is_mcp
from xsky.security.roles import RoleCapabilityModel, has
from xsky.security.tools import PATH_TOOLS, URL_TOOLS
from xsky.wire import WireModel

Effect = Literal["allow", "ask", "deny"]
PermissionMode = Literal["default", "accept_edits", "plan", "bypass"]
# settings: a settings file; input: the run's input rules (no person approved them); person: an
# answer to an approval request; start: a host the person starting the run opened (--allow-host).
Origin = Literal["settings", "input", "person", "start"]

# What each tool is (read-only, which argument rules match …) comes from the tool registry.
PROTECTED_DIRS = (".git", ".xsky")
_RULE_RE = re.compile(r"^\s*([A-Za-z_*][A-Za-z0-9_*-]*)\s*(?:\((.*)\))?\s*$", re.S)
_INPUT_SOURCE = "the run's input (no person approved it)"
_START_SOURCE = "--allow-host (the run's options, from the person who started it)"
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


@dataclass(frozen=True)
class Rule:
    tool: str
    specifier: str | None
    text: str
    source: str  # where it came from, as decisions name it: "project settings (path)", "the run's input …"
    origin: Origin = "settings"
    # A person's approval: the {{…}} values of the call they approved (sorted), if it held any
    values: tuple[tuple[str, str], ...] | None = None


@dataclass(frozen=True)
class Decision:
    effect: Effect
    reason: str  # the rule, or the part of the role or mode, that decided
    rule: str | None = None
    hard: bool = False  # a safety refusal (unparseable, outside the workspace …): no mode lifts it
    origin: Origin | None = None  # the rule's, when a rule decided: a person's approval is "person"
    values: tuple[tuple[str, str], ...] | None = None  # the rule's (a person's approval)


class PermissionLayer(WireModel):
    scope: str  # "user" | "project"
    path: str = ""
    allow: list[str] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)
    # Calls not to repeat unasked after a worker died during them (xsky/security/idempotence.py).
    effects: list[str] = Field(default_factory=list)

    @property
    def source(self) -> str:
        """How decisions name this layer's rules: "user settings (/home/u/.xsky/settings.json)"."""
        return f"{self.scope} settings" + (f" ({self.path})" if self.path else "")


class ApprovedRule(WireModel):
    """An "allow for this run" rule a person gave by answering an approval request."""

    rule: str
    request_id: str | None = None  # None: kept by an older version, which did not record it
    # The {{…}} values of the call approved (None: it held none, or an older version kept it)
    values: dict[str, str] | None = Field(default=None, exclude_if=lambda v: v is None)

    @property
    def source(self) -> str:
        by = f"request {self.request_id} for " if self.request_id else ""
        return f"{by}this run (approved by a person)"


class PermissionSettings(WireModel):
    """Everything decide() needs besides the role; resolved at start and carried by the run."""

    layers: list[PermissionLayer] = Field(default_factory=list)
    mode: PermissionMode = "default"
    # Allow rules that came with the run's input: anyone who can start a run can write these.
    run_rules: list[str] = Field(default_factory=list)
    # "Allow for this run" answers people gave to approval requests (approve_tool).
    approved_rules: list[ApprovedRule] = Field(default_factory=list)
    # network(domain:…) rules of the hosts the run's starter opened (RunOptions.allow_hosts);
    # the worker makes them from its AgentInput (xsky.security.allow_hosts), never from this copy.
    host_rules: list[str] = Field(default_factory=list)
    # Tools only a person may allow, call by call (see xsky.security.permissions); the worker
    # sets them.
    person_only_tools: list[str] = Field(default_factory=list)


def parse_rule(text: str, source: str = "", origin: Origin = "settings") -> Rule:
    m = _RULE_RE.match(text)
    if not m or (m.group(2) is not None and not m.group(2).strip()):
        raise ValueError(
            f"permission rule {text!r} is not valid; write Tool or Tool(specifier), e.g. shell(git log:*), "
            "file_write(src/**), browser_navigate(domain:example.com)"
        )
    specifier = m.group(2).strip() if m.group(2) is not None else None
    if is_mcp(m.group(1)):
        problem = None if "*" in m.group(1) else entry_problem(m.group(1))
        if problem is None and specifier not in (None, "*"):
            problem = (
                "MCP rules name a server or one of its tools, without arguments: "
                "mcp__<server> or mcp__<server>__<tool>"
            )
        if problem is not None:
            raise ValueError(f"permission rule {text!r} is not valid: {problem}")
    if specifier is not None and specifier.startswith("domain:"):
        try:
            domain(specifier)
        except ValueError as e:
            raise ValueError(f"permission rule {text!r} is not valid: {e}") from None
    return Rule(m.group(1), specifier, text.strip(), source, origin)


def rule_problems(rules: Iterable[str]) -> list[str]:
    problems = []
    for text in rules:
        try:
            parse_rule(text)
        except ValueError as e:
            problems.append(str(e))
    return problems


_HOST_PATTERN = re.compile(r"^(?:\*\.)?[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?\.?$|^\*$")


def domain(specifier: str) -> tuple[str, int | None]:
    """(host pattern, port or None) of a ``domain:`` specifier: ``domain:example.com``,
    ``domain:*.example.com``, ``domain:127.0.0.1:8080`` or ``domain:[::1]:8080``.

    The host is lower-cased, an IPv6 address without its brackets. Raises ValueError, saying
    how to write it, when the specifier is none of these.
    """
    text = specifier[len("domain:") :].strip().lower()
    port: str | None = None
    if text.startswith("["):
        host, close, rest = text[1:].partition("]")
        if not close or (rest and not rest.startswith(":")):
            raise ValueError(
                f"domain:{text} is not a host: write an IPv6 address in brackets, e.g. domain:[::1]:8080"
            )
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError(
                f"domain:{text}: {host!r} in brackets is not an IPv6 address"
            ) from None
        port = rest[1:] if rest else None
    elif text.count(":") > 1:
        raise ValueError(
            f"domain:{text} is ambiguous: write an IPv6 address in brackets, with the port after "
            "them, e.g. domain:[::1] or domain:[::1]:8080"
        )
    else:
        host, colon, after = text.partition(":")
        port = after if colon else None
        if not _HOST_PATTERN.match(host):
            raise ValueError(
                f"domain:{text}: {host!r} is not a host name; write domain:example.com, "
                "domain:*.example.com or domain:host:port"
            )
    if port is None:
        return host, None
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(
            f"domain:{text}: the port {port!r} is not a number from 1 to 65535, e.g. domain:127.0.0.1:8080"
        )
    if "*" in host:
        raise ValueError(
            f"domain:{text}: a port may follow only one exact host (a rule for a host and port "
            "names one service), not a pattern; drop the port or name the host"
        )
    return host, int(port)


# -- matching ---------------------------------------------------------------------------------


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """gitignore-style: ** crosses directories, * and ? do not; a trailing / means 'inside'."""
    pattern = pattern.lstrip("/").removeprefix("./")
    if pattern.endswith("/"):
        pattern += "**"
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("^" + "".join(out) + "$")


def relative_path(path: str, workspace: str | None) -> str | None:
    """The path relative to the workspace, normalised; None when it points outside."""
    if workspace and posixpath.isabs(path):
        ws = posixpath.normpath(workspace)
        norm = posixpath.normpath(path)
        if norm != ws and not norm.startswith(ws + "/"):
            return None
        path = posixpath.relpath(norm, ws)
    norm = posixpath.normpath(path or ".")
    if norm.startswith("../") or norm == ".." or posixpath.isabs(norm):
        return None
    return norm


def url_host(url: str) -> str:
    """The host a URL names, lower-cased (empty when it names none or is not a URL)."""
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def url_port(url: str) -> int | None:
    """The port a URL connects to: the one it names, else its scheme's (80, 443)."""
    try:
        parts = urlsplit(url)
        return parts.port or DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:
        return None


def matches(
    rule: Rule, tool: str, subject: str | None, workspace: str | None, exact_host: bool = False
) -> bool:
    """Does the rule name this call of ``tool`` on ``subject`` (its primary argument)?
    ``mcp__server`` names every tool of that server, as in Claude Code. ``exact_host``: a
    ``domain:`` rule names that host alone, not its subdomains."""
    if not fnmatch.fnmatchcase(tool, rule.tool) and not covers(rule.tool, tool):
        return False
    spec = rule.specifier
    if spec is None or spec == "*":
        return True
    if subject is None:
        return False
    if spec.startswith("="):  # exact, as written ("allow for this run" rules): no patterns
        exact = spec[1:]
        if tool in PATH_TOOLS:
            return relative_path(subject, workspace) == relative_path(exact, workspace)
        return subject == exact
    if tool == "shell":
        # `/bin/rm x` runs rm: rules see the command by its name as well as by its path.
        first, _, rest = subject.partition(" ")
        if "/" in first:
            base = first.rsplit("/", 1)[-1] + (" " + rest if rest else "")
            if matches(rule, tool, base, workspace):
                return True
        if spec.endswith(":*"):
            prefix = spec[:-2].strip()
            return subject == prefix or subject.startswith(prefix + " ")
        if "*" in spec or "?" in spec:
            return fnmatch.fnmatchcase(subject, spec)
        return subject == spec
    if tool in PATH_TOOLS:
        rel = relative_path(subject, workspace)
        return rel is not None and bool(_glob_regex(spec).match(rel))
    if tool in URL_TOOLS and spec.startswith("domain:"):
        want, port = domain(spec)
        host = url_host(subject)
        if port is not None:  # one service: this host exactly, on this port
            return host == want and url_port(subject) == port
        if exact_host:
            return host == want
        if want.startswith("*."):
            return host.endswith(want[1:])
        return host == want or host.endswith("." + want)
    return fnmatch.fnmatchcase(subject, spec)


def effect_rules(settings: PermissionSettings) -> list[Rule]:
    """The settings' ``effects`` rules, each naming where it came from."""
    return [parse_rule(t, layer.source) for layer in settings.layers for t in layer.effects]


def rules_of(settings: PermissionSettings) -> dict[str, list[Rule]]:
    """Every rule of the settings by effect, each naming where it came from."""
    rules: dict[str, list[Rule]] = {"deny": [], "ask": [], "allow": []}
    # Project rules are listed before user rules, so a project rule is named when both match.
    for layer in sorted(settings.layers, key=lambda layer: 0 if layer.scope == "project" else 1):
        source = layer.source
        for effect in ("deny", "ask", "allow"):
            rules[effect] += [parse_rule(t, source) for t in getattr(layer, effect)]
    # A person's approval is named before an input rule that says the same.
    rules["allow"] += [
        dataclasses.replace(
            parse_rule(a.rule, a.source, "person"),
            values=tuple(sorted(a.values.items())) if a.values else None,
        )
        for a in settings.approved_rules
    ]
    rules["allow"] += [parse_rule(t, _INPUT_SOURCE, "input") for t in settings.run_rules]
    rules["allow"] += [parse_rule(t, _START_SOURCE, "start") for t in settings.host_rules]
    return rules


# -- one call -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    """What every part of one decision is decided against: the role, the rules by effect
    (:func:`rules_of`), the run's workspace, the tools only a person may allow, and the
    folders no command may name (xsky's state, artifacts, other runs)."""

    role: RoleCapabilityModel
    rules: dict[str, list[Rule]]
    workspace: str | None = None
    person_only: frozenset[str] = frozenset()
    protected: tuple[str, ...] = ()
    # What MCP servers say of their tools (xsky.security.mcp.McpToolInfo.hint): a default, never a rule.
    hints: Mapping[str, Hint] = field(default_factory=dict)
    # An MCP tool shown under a name its server does not give it → mcp__<server>__<its name>.
    real_names: Mapping[str, str] = field(default_factory=dict)
    # A prefix allow rule stands for a program's ordinary calls, not for a form that runs
    # another program (shell_rules._vouched); off for the leader's delegated rules, which are
    # held to every form by xsky/security/delegation.py (and replay as they decided).
    forms: bool = True
    # The call's {{…}} values (XSKY_V1 → its text), when the checker is given them: a value
    # that cannot begin an option (it does not start with '-') is no option where a program
    # reads options (program_forms.value_code).
    values: Mapping[str, str] = field(default_factory=dict)

    def names(self, tool: str) -> tuple[str, ...]:
        """The names rules and roles may hold ``tool`` by: its own, and an MCP tool's real one."""
        real = self.real_names.get(tool)
        return (tool,) if real is None or real == tool else (tool, real)

    def without_shell_rules(self) -> Check:
        rules = {k: [r for r in v if r.tool != "shell"] for k, v in self.rules.items()}
        return dataclasses.replace(self, rules=rules)


def decide_one(tool: str, subject: str | None, check: Check) -> Decision:
    """One tool on one subject (a path, a URL, one simple command, or None): the workspace
    bounds, then the rules (deny, a person's approvals, ask, allow), then the role. The mode
    is not applied here.
    An MCP tool shown under another name than its server's is matched under both: a rule or
    role entry naming either counts, deny before ask before allow as always."""
    role = check.role
    shown = f" for {subject[:80]!r}" if subject else ""
    if tool in PATH_TOOLS and subject is not None:
        rel = relative_path(subject, check.workspace)
        if rel is None:
            return Decision("deny", f"{subject!r} is outside the run's workspace", hard=True)
        if tool == "file_write" and any(part in PROTECTED_DIRS for part in rel.split("/")):
            return Decision(
                "deny",
                f"writing into {rel.split('/')[0]}/ is not allowed: agents may not change version control or xsky state",
                hard=True,
            )
    names = check.names(tool)
    allowed = any(has(role.allowed_tools, n) for n in names)
    requested = any(has(role.requested_tools, n) for n in names)
    held = allowed or requested
    person_only = held and any(has(check.person_only, n) for n in names)
    # A person's approval for the rest of the run is the answer to an ask: it comes after
    # the deny rules (which no approval lifts) and before the ask rules — one of which raised
    # the request it answered, and would otherwise ask again at the next identical call.
    by_person = [r for r in check.rules["allow"] if r.origin == "person"]
    steps: tuple[tuple[Effect, list[Rule]], ...] = (
        ("deny", check.rules["deny"]),
        ("allow", by_person),
        ("ask", check.rules["ask"]),
        ("allow", check.rules["allow"]),
    )
    for effect, rules in steps:
        for rule in rules:
            if rule.origin != "settings" and not held:
                continue  # a rule of the run never gives a role a tool it lacks
            if person_only and effect == "allow" and rule.origin != "person":
                continue
            # A person's approval names the host they were shown, not its subdomains
            # (approving example.com/docs is no answer for admin.example.com).
            exact = rule.origin == "person"
            if any(matches(rule, n, subject, check.workspace, exact) for n in names):
                return Decision(
                    effect,
                    f"{effect} rule {rule.text!r} from {rule.source} matched{shown}",
                    rule.text,
                    origin=rule.origin,
                    values=rule.values,
                )
    if person_only:
        # Hard: neither accept_edits nor bypass lifts it. The role may come from a plan an
        # LLM wrote, or from a forged input; only a person can vouch for what it does.
        return Decision(
            "ask",
            f"role {role.name} is not one this worker knows (a plan, define_role or the run's input "
            f"made it): each use of {tool} needs a person's approval, whatever allow rules or the "
            "permission mode say",
            hard=True,
        )
    if allowed and check.hints.get(tool) == "destructive":
        return Decision(
            "ask",
            f"role {role.name} holds {tool}, but its MCP server marks it destructive "
            "(destructiveHint): a person approves each call unless an allow rule names it",
        )
    if allowed:
        return Decision("allow", f"role {role.name} lists {tool} in allowedTools")
    if requested:
        return Decision(
            "ask", f"role {role.name} lists {tool} in requestedTools: a person must approve it"
        )
    if tool.startswith("mcp__"):
        server = tool.split("__")[1] if tool.count("__") >= 2 else tool.removeprefix("mcp__")
        return Decision(
            "deny",
            f"role {role.name} may not use {tool} (not in its allowedTools or requestedTools); "
            f"to give it, add mcp__{server} (the server's tools) or {tool} to a role's "
            f'allowedTools, or an allow rule "mcp__{server}" to permissions in the worker\'s '
            "settings",
        )
    return Decision(
        "deny", f"role {role.name} may not use {tool} (not in its allowedTools or requestedTools)"
    )
