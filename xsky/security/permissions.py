"""Tool permissions: may this agent make this call? ``allow``, ``ask`` a person, or ``deny``.

``decide(tool, arguments, role, settings)`` evaluates, in order:

1. rules — ``deny`` rules first (a deny in any layer wins), then a person's approvals for
   the run, then ``ask``, then ``allow``; the first match decides. Syntax: ``Tool`` or ``Tool(specifier)``: a shell prefix
   ``shell(git log:*)``, an exact command ``shell(=make test)``, a path glob
   ``file_write(src/**)``, a domain ``browser_navigate(domain:example.com)`` or one host
   on one port ``http_get(domain:127.0.0.1:8080)``. Rules come from three places, and
   every decision says which: settings.json (user and project layers), the run's input
   (``run_rules``: whoever started the run wrote them, so no person approved them) and
   the approvals people gave in this run (``approved_rules``, each naming its request).
   A rule of the run — either kind — decides only for a tool the role holds: it never
   gives a role a tool it lacks;
2. otherwise the role: ``allowedTools`` → allow, ``requestedTools`` → ask, else deny;
3. then ``security.permission_mode``: ``default`` (ask means ask), ``accept_edits`` (file
   writes inside the workspace need no approval), ``plan`` (read-only tools only),
   ``bypass`` (everything but deny rules — never the default, and reported as used).

Tools in ``person_only_tools`` (the privileged tools of a role the worker does not know:
one a plan, ``define_role`` or a forged input made up) are asked for on every call,
whatever allow rules, the run's input or the mode say; deny rules still deny, and only a
person — approving the call, or giving a rule for the run — lets one through.

Shell commands are parsed, not string-matched: each command inside a compound command is
decided on its own and the strictest answer wins, so ``allow shell(ls:*)`` never allows
``ls && rm -rf x``. Redirections are decided as file reads and writes. What the checker
cannot fully parse is asked of a person, and no mode answers in their place; what it
parses and forbids (a variable that changes what runs, a NUL byte, a command longer than
:data:`MAX_COMMAND`) is denied.

The parts: :mod:`xsky.security.rules` (the rule syntax and models, matching, one call by
rules and role), :mod:`xsky.security.shell_rules` (shell commands part by part) and
:mod:`xsky.security.net` (the hosts a command names, and the rules' hosts for the browser
and the egress proxy). The names other modules use are importable from here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from xsky.security.addresses import blocked_host
from xsky.security.allow_hosts import host_rules
from xsky.security.mcp import Hint, is_tool_name
from xsky.security.net import denied_host, destinations, domain_rules, link_local
from xsky.security.roles import RoleCapabilityModel
from xsky.security.rules import (
    DEFAULT_PORTS,
    ApprovedRule,
    Check,
    Decision,
    Effect,
    Origin,
    PermissionLayer,
    PermissionMode,
    PermissionSettings,
    Rule,
    decide_one,
    domain,
    parse_rule,
    relative_path,
    rule_problems,
    rules_of,
    url_host,
    url_port,
)
from xsky.security.shell_parse import ShellParseError, normalized, split_command
from xsky.security.shell_rules import MAX_COMMAND, RANK, decide_shell, part_decisions
from xsky.security.tools import PRIMARY_ARG, PRIVILEGED_TOOLS, READ_ONLY_TOOLS, TOOLS, URL_TOOLS

__all__ = [
    "MAX_COMMAND",
    "ApprovedRule",
    "Decision",
    "Effect",
    "Origin",
    "PermissionLayer",
    "PermissionMode",
    "PermissionSettings",
    "Rule",
    "approval_shaped",
    "decide",
    "denied_host",
    "destinations",
    "domain",
    "domain_rules",
    "link_local",
    "parse_rule",
    "relative_path",
    "rule_problems",
    "run_rules_for",
    "trusted_settings",
]


def decide(
    tool: str,
    arguments: dict[str, Any],
    role: RoleCapabilityModel,
    settings: PermissionSettings | None = None,
    workspace: str | None = None,
    protected: Sequence[str] = (),
    hints: Mapping[str, Hint] | None = None,
    real_names: Mapping[str, str] | None = None,
    forms: bool = True,
) -> Decision:
    """``protected``: folders no command may name (xsky's state, artifacts, other runs);
    ``hints``: what MCP servers say of their tools (read-only, destructive); ``real_names``:
    an MCP tool's server's own name when it is shown under another (rules and role entries
    naming either hold, the strictest first); ``forms`` False: a prefix rule allows every
    form of its program (the leader's delegated rules, judged form by form on their own)."""
    try:
        settings = settings or PermissionSettings()
        check = Check(
            role,
            rules_of(settings),
            workspace,
            frozenset(settings.person_only_tools),
            tuple(protected),
            hints or {},
            real_names or {},
            forms,
        )
        if tool == "shell":
            decision = decide_shell(arguments, check)
        else:
            subject = arguments.get(PRIMARY_ARG.get(tool, ""))
            decision = decide_one(tool, subject if isinstance(subject, str) else None, check)
        read_only = tool in READ_ONLY_TOOLS or check.hints.get(tool) == "read_only"
        return _apply_mode(tool, arguments, decision, settings.mode, workspace, read_only)
    except Exception as e:  # noqa: BLE001 - the checker failing is a refusal, never a pass
        return Decision(
            "deny",
            f"refused: the permission checker failed on this call ({type(e).__name__}: {str(e)[:200]})",
            hard=True,
        )


def decide_parts(
    command: str,
    role: RoleCapabilityModel,
    settings: PermissionSettings | None = None,
    workspace: str | None = None,
) -> list[tuple[str, Decision]]:
    """Each simple command of a shell command, as shown, with the strictest decision on it —
    decided from what was parsed (a part's shown text, `sh (reading commands from its
    input)`, is no command to parse again). Empty when the command is not understood."""
    settings = settings or PermissionSettings()
    whole = decide("shell", {"command": command}, role, settings, workspace)
    if whole.effect == "deny" and whole.hard:
        return []  # refused as a whole (a NUL byte, too long, the checker failing): no parts
    try:
        check = Check(role, rules_of(settings), workspace, frozenset(settings.person_only_tools))
        out = []
        for part in split_command(command):
            worst = max(part_decisions(part, check), key=lambda d: RANK[d.effect])
            mode = _apply_mode(
                "shell", {"command": command}, worst, settings.mode, workspace, False
            )
            out.append((part.text, mode))
        return out
    except Exception:  # noqa: BLE001 - a list for a person to read: the whole decision stands
        return []


def _apply_mode(
    tool: str,
    arguments: dict[str, Any],
    decision: Decision,
    mode: PermissionMode,
    workspace: str | None,
    read_only: bool,
) -> Decision:
    if decision.effect == "deny" and (decision.hard or decision.rule is not None):
        return decision  # deny rules and safety refusals hold in every mode
    if mode == "plan" and not read_only:
        return Decision(
            "deny", f"permission mode plan allows read-only tools only; {tool} changes things"
        )
    if decision.hard:
        return decision  # asks the checker insists on: no mode answers them instead of a person
    if mode == "accept_edits" and tool == "file_write" and decision.effect == "ask":
        path = arguments.get("path")
        if isinstance(path, str) and relative_path(path, workspace) is not None:
            return Decision(
                "allow",
                f"permission mode accept_edits: writes inside the workspace need no approval ({decision.reason})",
            )
    if mode == "bypass" and decision.effect != "allow":
        return Decision("allow", f"permission mode bypass overrode: {decision.reason}")
    return decision


_STRICTNESS: dict[str, int] = {"bypass": 0, "accept_edits": 1, "default": 2, "plan": 3}


def trusted_settings(
    worker: PermissionSettings, given: PermissionSettings, hosts: Sequence[str] = ()
) -> PermissionSettings:
    """What a worker decides with: its own settings files' rules (not the run's copy), the
    run's approval-shaped rules (those of its input and those people gave, each kept apart so
    decisions say which), the rules of the hosts the run's options open (``hosts``:
    ``RunOptions.allow_hosts``, well-formed ones only; never ``given.host_rules``), the
    stricter of the two modes, and every tool either calls person-only."""
    mode = given.mode if _STRICTNESS[given.mode] > _STRICTNESS[worker.mode] else worker.mode
    return PermissionSettings(
        layers=worker.layers,
        mode=mode,
        run_rules=[r for r in given.run_rules if approval_shaped(r)],
        approved_rules=[a for a in given.approved_rules if approval_shaped(a.rule)],
        host_rules=host_rules(list(hosts)),
        person_only_tools=list(dict.fromkeys(worker.person_only_tools + given.person_only_tools)),
    )


def approval_shaped(text: str) -> bool:
    """Could ``text`` be an approval a person gave (what :func:`run_rules_for` makes)?

    A run's input may carry any list, so the worker keeps only narrow rules for one named
    tool (no wildcard in its name): one exact call (``tool(=…)``), one named host (or host
    and port) for a URL tool, a whole tool that cannot run code, reach the network or
    write, or one tool of one MCP server (whose rules name tools, not calls). ``shell``, ``shell(curl:*)`` or ``*`` is dropped.
    """
    try:
        rule = parse_rule(text)
    except ValueError:
        return False
    if is_tool_name(rule.tool):
        return rule.specifier is None  # one tool of one MCP server (its rules take no arguments)
    if rule.tool not in TOOLS:
        return False
    if rule.specifier is None:
        return rule.tool not in PRIVILEGED_TOOLS
    if rule.specifier.startswith("="):
        return True
    if rule.specifier.startswith("domain:") and rule.tool in URL_TOOLS:
        host, _ = domain(rule.specifier)
        return bool(host) and not any(c in host for c in "*?")
    return False


def run_rules_for(tool: str, arguments: dict[str, Any]) -> list[str]:
    """The rules an "allow for this run" approval adds: as narrow as the call it approved.

    A shell command gets one exact rule per command inside it; a URL its domain, with the
    port when the URL names another than its scheme's or the host is local or private (the
    egress proxy lets such a host through only for a rule naming host and port); a path its
    path; an MCP tool (its rules take no arguments) and anything else the tool.
    """
    if is_tool_name(tool):
        return [tool]
    if tool == "shell" and isinstance(arguments.get("command"), str):
        try:
            parts = split_command(arguments["command"])
        except ShellParseError:
            return []
        exact = [p.text for p in parts if p.argv != [":"]] + [
            " ".join(normalized(p.argv)) for p in parts if p.argv != [":"]
        ]
        return list(dict.fromkeys(f"shell(={text})" for text in exact if ")" not in text))
    url = arguments.get("url")
    if tool in URL_TOOLS and isinstance(url, str) and url_host(url):
        host, port = url_host(url), url_port(url)
        shown = f"[{host}]" if ":" in host else host
        scheme = urlsplit(url).scheme.lower()
        if port is not None and (port != DEFAULT_PORTS.get(scheme) or blocked_host(host)):
            return [f"{tool}(domain:{shown}:{port})"]
        return [f"{tool}(domain:{shown})"]
    subject = arguments.get(PRIMARY_ARG.get(tool, ""))
    if isinstance(subject, str) and subject and ")" not in subject:
        return [f"{tool}(={subject})"]  # exact: an approved `rm ./build/*` allows no other rm
    return [tool]
