"""Tool permissions: may this agent make this call? ``allow``, ``ask`` a person, or ``deny``.

``decide(tool, arguments, role, settings)`` evaluates, in order:

1. rules from settings.json (user and project layers) and rules a person allowed for this
   run — ``deny`` rules first (a deny in any layer wins), then ``ask``, then ``allow``;
   the first match decides. Syntax: ``Tool`` or ``Tool(specifier)``: a shell prefix
   ``shell(git log:*)``, an exact command ``shell(make test)``, a path glob
   ``file_write(src/**)``, a domain ``browser_navigate(domain:example.com)``;
2. otherwise the role: ``allowedTools`` → allow, ``requestedTools`` → ask, else deny;
3. then ``security.permission_mode``: ``default`` (ask means ask), ``accept_edits`` (file
   writes inside the workspace need no approval), ``plan`` (read-only tools only),
   ``bypass`` (everything but deny rules — never the default, and reported as used).

Shell commands are parsed, not string-matched: each command inside a compound command is
decided on its own and the strictest answer wins, so ``allow shell(ls:*)`` never allows
``ls && rm -rf x``. Redirections are decided as file reads and writes. What cannot be
parsed is denied.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import posixpath
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field

from xsky.addresses import blocked_host
from xsky.models import RoleCapabilityModel, WireModel
from xsky.shell_parse import ShellCommand, ShellParseError, inline_code, normalized, split_command
from xsky.tool_registry import PATH_TOOLS, PRIMARY_ARG, PRIVILEGED_TOOLS, READ_ONLY_TOOLS, URL_TOOLS

Effect = Literal["allow", "ask", "deny"]
PermissionMode = Literal["default", "accept_edits", "plan", "bypass"]
_RANK = {"allow": 0, "ask": 1, "deny": 2}

# What each tool is (read-only, which argument rules match …) comes from the tool registry.
_HARMLESS_TARGETS = {"/dev/null", "/dev/stdout", "/dev/stderr"}
_HEREDOC_OPS = {"<<", "<<-", "<<<"}
_RUNTIME_CHARS = set("~$`*?[{")
PROTECTED_DIRS = (".git", ".xsky")
MAX_COMMAND = 16 * 1024  # characters of a shell command the checker reads; longer ones are refused
_RULE_RE = re.compile(r"^\s*([A-Za-z_*][A-Za-z0-9_*]*)\s*(?:\((.*)\))?\s*$", re.S)


@dataclass(frozen=True)
class Rule:
    tool: str
    specifier: str | None
    text: str
    source: str  # where it came from: "project settings (path)", "user settings (path)", "this run"


@dataclass(frozen=True)
class Decision:
    effect: Effect
    reason: str  # the rule, or the part of the role or mode, that decided
    rule: str | None = None
    hard: bool = False  # a safety refusal (unparseable, outside the workspace …): no mode lifts it


class PermissionLayer(WireModel):
    scope: str  # "user" | "project"
    path: str = ""
    allow: list[str] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)


class PermissionSettings(WireModel):
    """Everything decide() needs besides the role; resolved at start and carried by the run."""

    layers: list[PermissionLayer] = Field(default_factory=list)
    mode: PermissionMode = "default"
    run_rules: list[str] = Field(default_factory=list)  # "allow for this run" approvals


def parse_rule(text: str, source: str = "") -> Rule:
    m = _RULE_RE.match(text)
    if not m or (m.group(2) is not None and not m.group(2).strip()):
        raise ValueError(
            f"permission rule {text!r} is not valid; write Tool or Tool(specifier), e.g. shell(git log:*), "
            "file_write(src/**), browser_navigate(domain:example.com)"
        )
    return Rule(
        m.group(1), m.group(2).strip() if m.group(2) is not None else None, text.strip(), source
    )


def rule_problems(rules: Iterable[str]) -> list[str]:
    problems = []
    for text in rules:
        try:
            parse_rule(text)
        except ValueError as e:
            problems.append(str(e))
    return problems


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


def _host(url: str) -> str:
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def _matches(rule: Rule, tool: str, subject: str | None, workspace: str | None) -> bool:
    if not fnmatch.fnmatchcase(tool, rule.tool):
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
            if _matches(rule, tool, base, workspace):
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
        want = spec[len("domain:") :].strip().lower()
        host = _host(subject)
        if want.startswith("*."):
            return host.endswith(want[1:])
        return host == want or host.endswith("." + want)
    return fnmatch.fnmatchcase(subject, spec)


def _rules(settings: PermissionSettings) -> dict[str, list[Rule]]:
    rules: dict[str, list[Rule]] = {"deny": [], "ask": [], "allow": []}
    # Project rules are listed before user rules, so a project rule is named when both match.
    for layer in sorted(settings.layers, key=lambda layer: 0 if layer.scope == "project" else 1):
        source = f"{layer.scope} settings" + (f" ({layer.path})" if layer.path else "")
        for effect in ("deny", "ask", "allow"):
            rules[effect] += [parse_rule(t, source) for t in getattr(layer, effect)]
    rules["allow"] += [parse_rule(t, "this run (approved by a person)") for t in settings.run_rules]
    return rules


# -- deciding -----------------------------------------------------------------------------------


def decide(
    tool: str,
    arguments: dict[str, Any],
    role: RoleCapabilityModel,
    settings: PermissionSettings | None = None,
    workspace: str | None = None,
    protected: Sequence[str] = (),
) -> Decision:
    """``protected``: folders no command may name (xsky's state, artifacts, other runs)."""
    try:
        settings = settings or PermissionSettings()
        rules = _rules(settings)
        if tool == "shell":
            decision = _decide_shell(arguments, role, rules, workspace, protected)
        else:
            subject = arguments.get(PRIMARY_ARG.get(tool, ""))
            decision = _decide_one(
                tool, subject if isinstance(subject, str) else None, role, rules, workspace
            )
        return _apply_mode(tool, arguments, decision, settings.mode, workspace)
    except Exception as e:  # noqa: BLE001 - the checker failing is a refusal, never a pass
        return Decision(
            "deny",
            f"refused: the permission checker failed on this call ({type(e).__name__}: {str(e)[:200]})",
            hard=True,
        )


def _decide_one(
    tool: str,
    subject: str | None,
    role: RoleCapabilityModel,
    rules: dict[str, list[Rule]],
    workspace: str | None,
) -> Decision:
    shown = f" for {subject[:80]!r}" if subject else ""
    if tool in PATH_TOOLS and subject is not None:
        rel = relative_path(subject, workspace)
        if rel is None:
            return Decision("deny", f"{subject!r} is outside the run's workspace", hard=True)
        if tool == "file_write" and any(part in PROTECTED_DIRS for part in rel.split("/")):
            return Decision(
                "deny",
                f"writing into {rel.split('/')[0]}/ is not allowed: agents may not change version control or xsky state",
                hard=True,
            )
    for effect in ("deny", "ask", "allow"):
        for rule in rules[effect]:
            if _matches(rule, tool, subject, workspace):
                return Decision(
                    effect,
                    f"{effect} rule {rule.text!r} from {rule.source} matched{shown}",
                    rule.text,
                )
    if tool in role.allowed_tools:
        return Decision("allow", f"role {role.name} lists {tool} in allowedTools")
    if tool in role.requested_tools:
        return Decision(
            "ask", f"role {role.name} lists {tool} in requestedTools: a person must approve it"
        )
    return Decision(
        "deny", f"role {role.name} may not use {tool} (not in its allowedTools or requestedTools)"
    )


def _decide_shell(
    arguments: dict[str, Any],
    role: RoleCapabilityModel,
    rules: dict[str, list[Rule]],
    workspace: str | None,
    protected: Sequence[str] = (),
) -> Decision:
    command = arguments.get("command")
    if not isinstance(command, str) or not command.strip():
        return Decision("deny", "shell needs a command", hard=True)
    if "\x00" in command:
        return Decision(
            "deny",
            "refused: the command holds a NUL byte, which no shell command can carry",
            hard=True,
        )
    if len(command) > MAX_COMMAND:
        return Decision(
            "deny",
            f"refused: the command is {len(command):,} characters, more than the checker reads "
            f"({MAX_COMMAND:,}); write it to a script file and run that",
            hard=True,
        )
    try:
        parts = split_command(command)
    except ShellParseError as e:
        if e.forbidden:
            return Decision("deny", f"refused: {e}", hard=True)
        # Not understood is not allowed: a person reads it and decides (no mode lifts this).
        return Decision(
            "ask",
            f"the checker cannot fully understand this command ({e}); a person must decide",
            hard=True,
        )
    worst: Decision | None = None
    for part in parts:
        for d in _part_decisions(part, role, rules, workspace, protected):
            if worst is None or _RANK[d.effect] > _RANK[worst.effect]:
                worst = d
    assert worst is not None
    if len(parts) > 1 and worst.effect != "allow":
        worst = Decision(
            worst.effect,
            f"{worst.reason} (one of {len(parts)} commands in {command[:60]!r})",
            worst.rule,
            worst.hard,
        )
    return worst


def _part_decisions(
    part: ShellCommand,
    role: RoleCapabilityModel,
    rules: dict[str, list[Rule]],
    workspace: str | None,
    protected: Sequence[str] = (),
) -> list[Decision]:
    # ":" stands for redirects or assignments with no command of their own: only they count.
    decisions = [] if part.argv == [":"] else _command_decisions(part, role, rules, workspace)
    decisions += [
        d
        for d in (_reach_decision(part), _protected_decision(part, workspace, protected))
        if d is not None
    ]
    for redirect in part.redirects:
        target = redirect.target
        if (
            redirect.op in _HEREDOC_OPS
            or target in _HARMLESS_TARGETS
            or target.isdigit()
            or target.startswith("&")
            or _DEV_NET.match(target)
        ):  # /dev/tcp targets were decided as destinations
            continue
        if _RUNTIME_CHARS & set(target):
            decisions.append(
                Decision(
                    "deny",
                    f"redirection {redirect.op} {target!r}: where it goes is only known at run time",
                    hard=True,
                )
            )
            continue
        as_tool = "file_write" if ">" in redirect.op else "file_read"
        # A redirection is a file operation: the file rules decide it (and the workspace
        # bounds); a role that may run the shell may redirect inside its workspace.
        d = _decide_one(
            as_tool,
            target,
            role,
            {k: [r for r in v if r.tool != "shell"] for k, v in rules.items()},
            workspace,
        )
        if d.rule is None and d.effect != "deny" or (d.rule is None and "may not use" in d.reason):
            d = Decision(
                "allow", f"redirection {redirect.op} {target!r} stays inside the workspace"
            )
        decisions.append(d)
    if not decisions:
        decisions.append(Decision("allow", "nothing runs"))
    return decisions


_URL = re.compile(r"(?i)\b[a-z][a-z0-9+.-]*://(?:[^/\s@]*@)?(\[[^\]]+\]|[^/\s:?#]+)")
_DEV_NET = re.compile(r"/dev/(?:tcp|udp)/([^/\s]+)")
NETWORK_PROGRAMS = frozenset(
    {
        "curl",
        "wget",
        "nc",
        "ncat",
        "netcat",
        "telnet",
        "socat",
        "ssh",
        "scp",
        "sftp",
        "ping",
        "nmap",
        "http",
        "https",
        "xh",
        "aria2c",
        "ftp",
        "rsync",
        "dig",
        "nslookup",
        "host",
    }
)


def destinations(argv: list[str], redirects: Iterable[str] = ()) -> list[str]:
    """Hosts a command names: in URLs, in /dev/tcp paths, as arguments of network programs."""
    found = [m.group(1) for token in [*argv, *redirects] for m in _URL.finditer(token)]
    found += [m.group(1) for token in [*argv, *redirects] for m in _DEV_NET.finditer(token)]
    if argv and argv[0].rsplit("/", 1)[-1] in NETWORK_PROGRAMS:
        for token in argv[1:]:
            if (
                not token.startswith("-")
                and "://" not in token
                and re.fullmatch(r"[\w.\-:\[\]@]+", token)
            ):
                host = token.rsplit("@", 1)[-1]
                found.append(host.split(":", 1)[0] if host.count(":") == 1 else host)
    return found


def _reach_decision(part: ShellCommand) -> Decision | None:
    for host in destinations(part.argv, [r.target for r in part.redirects]):
        reason = blocked_host(host)
        if reason:
            return Decision(
                "deny",
                f"refused: the command reaches {host} — {reason}; agents cannot reach this machine's "
                "services, private networks or cloud metadata",
                hard=True,
            )
    return None


def _protected_decision(
    part: ShellCommand, workspace: str | None, protected: Sequence[str]
) -> Decision | None:
    """Paths into xsky's state, the artifact store or other runs' workspaces are refused."""
    if not protected:
        return None
    ws = posixpath.normpath(workspace) if workspace else None
    for token in [*part.argv[1:], *(r.target for r in part.redirects)]:
        for piece in token.split("="):
            if piece.startswith("/"):
                path = posixpath.normpath(piece)
            elif ws and (piece == ".." or piece.startswith("../") or "/../" in piece):
                path = posixpath.normpath(posixpath.join(ws, piece))
            else:
                continue
            if ws and (path == ws or path.startswith(ws + "/")):
                continue
            for root in protected:
                if path == root or path.startswith(root.rstrip("/") + "/"):
                    return Decision(
                        "deny",
                        f"refused: {piece} is inside {root}, which holds xsky's state or other runs' "
                        "files; agents work in their own workspace",
                        hard=True,
                    )
    return None


def _command_decisions(
    part: ShellCommand,
    role: RoleCapabilityModel,
    rules: dict[str, list[Rule]],
    workspace: str | None,
) -> list[Decision]:
    """A simple command, decided as written and without its global options (``git -C . push``
    is a push); one that can run code the checker cannot see is asked for unless a rule allows it."""
    plain = " ".join(normalized(part.argv))
    decisions = [_decide_one("shell", plain, role, rules, workspace)]
    if plain != part.text:  # a rule written against the full form still counts
        written = _decide_one("shell", part.text, role, rules, workspace)
        if written.rule is not None:
            decisions.append(written)
    hidden = inline_code(part.argv)
    if hidden is not None:
        decisions = [
            d
            if d.effect != "allow" or d.rule is not None
            else Decision("ask", f"{hidden}: a person decides (or allow exactly this with a rule)")
            for d in decisions
        ]
    return decisions


def _apply_mode(
    tool: str,
    arguments: dict[str, Any],
    decision: Decision,
    mode: PermissionMode,
    workspace: str | None,
) -> Decision:
    if decision.hard or (decision.effect == "deny" and decision.rule is not None):
        return decision  # deny rules and safety refusals (and asks the checker insists on) hold in every mode
    if mode == "plan" and tool not in READ_ONLY_TOOLS:
        return Decision(
            "deny", f"permission mode plan allows read-only tools only; {tool} changes things"
        )
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


def trusted_settings(worker: PermissionSettings, given: PermissionSettings) -> PermissionSettings:
    """What a worker decides with: its own settings files' rules (not the run's copy), the
    exact approvals people gave in this run, and the stricter of the two modes."""
    mode = given.mode if _STRICTNESS[given.mode] > _STRICTNESS[worker.mode] else worker.mode
    return PermissionSettings(
        layers=worker.layers,
        mode=mode,
        run_rules=[r for r in given.run_rules if approval_shaped(r)],
    )


def approval_shaped(text: str) -> bool:
    """Could ``text`` be an approval a person gave (what :func:`run_rules_for` makes)?

    A run's input may carry any list, so the worker keeps only narrow rules: one exact
    call (``tool(=…)``), one named host for a URL tool (no wildcard), or a whole tool that
    cannot run code, reach the network or write. ``shell`` or ``shell(curl:*)`` is dropped.
    """
    try:
        rule = parse_rule(text)
    except ValueError:
        return False
    if rule.specifier is None:
        return rule.tool not in PRIVILEGED_TOOLS
    if rule.specifier.startswith("="):
        return True
    if rule.specifier.startswith("domain:") and rule.tool in URL_TOOLS:
        host = rule.specifier[len("domain:") :].strip()
        return bool(host) and not any(c in host for c in "*?[]/ ")
    return False


def domain_rules(
    settings: PermissionSettings, tools: tuple[str, ...]
) -> tuple[list[str], list[str]]:
    """(allowed, denied) domain patterns of ``Tool(domain:…)`` rules for these tools; ask
    rules count as denied (nobody can be asked in the middle of a connection)."""
    rules = _rules(settings)

    def domains(effects: tuple[str, ...]) -> list[str]:
        return list(
            dict.fromkeys(
                r.specifier[len("domain:") :].strip().lower()
                for e in effects
                for r in rules[e]
                if r.tool in tools and r.specifier and r.specifier.startswith("domain:")
            )
        )

    return domains(("allow",)), domains(("deny", "ask"))


def run_rules_for(tool: str, arguments: dict[str, Any]) -> list[str]:
    """The rules an "allow for this run" approval adds: as narrow as the call it approved.

    A shell command gets one exact rule per command inside it; a URL its domain; a path
    its path; anything else the tool.
    """
    if tool == "shell" and isinstance(arguments.get("command"), str):
        try:
            parts = split_command(arguments["command"])
        except ShellParseError:
            return []
        exact = [p.text for p in parts if p.argv != [":"]] + [
            " ".join(normalized(p.argv)) for p in parts if p.argv != [":"]
        ]
        return list(dict.fromkeys(f"shell(={text})" for text in exact if ")" not in text))
    if tool in URL_TOOLS and isinstance(arguments.get("url"), str) and _host(arguments["url"]):
        return [f"{tool}(domain:{_host(arguments['url'])})"]
    subject = arguments.get(PRIMARY_ARG.get(tool, ""))
    if isinstance(subject, str) and subject and ")" not in subject:
        return [f"{tool}(={subject})"]  # exact: an approved `rm ./build/*` allows no other rm
    return [tool]


def link_local(url: str) -> bool:
    """Cloud metadata services live on link-local addresses (169.254.169.254, fe80::/10)."""
    host = _host(url)
    if host in ("metadata.google.internal", "metadata"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_link_local
    except ValueError:
        return False


def denied_host(settings: PermissionSettings) -> Any:
    """A predicate: may no request of an agent go to this URL?

    True for hosts a browser domain deny rule names, and always for link-local addresses
    (cloud metadata endpoints hand out credentials). Used on every request a page makes,
    redirect hops included, and on every hop of http_get.
    """
    rules = [
        r
        for r in _rules(settings)["deny"]
        if fnmatch.fnmatchcase("browser_navigate", r.tool) and r.specifier
    ]

    def check(url: str) -> bool:
        return link_local(url) or any(
            _matches(rule, "browser_navigate", url, None) for rule in rules
        )

    return check
