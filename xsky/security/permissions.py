"""Tool permissions: may this agent make this call? ``allow``, ``ask`` a person, or ``deny``.

``decide(tool, arguments, role, settings)`` evaluates, in order:

1. rules — ``deny`` rules first (a deny in any layer wins), then ``ask``, then ``allow``;
   the first match decides. Syntax: ``Tool`` or ``Tool(specifier)``: a shell prefix
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

from xsky.plan.models import RoleCapabilityModel, WireModel
from xsky.security.addresses import LOCAL_NAMES, blocked_host, ip_of, never_reachable
from xsky.security.shell_parse import (
    ShellCommand,
    ShellParseError,
    inline_code,
    normalized,
    split_command,
)
from xsky.security.tools import (
    PATH_TOOLS,
    PRIMARY_ARG,
    PRIVILEGED_TOOLS,
    READ_ONLY_TOOLS,
    TOOLS,
    URL_TOOLS,
)

Effect = Literal["allow", "ask", "deny"]
PermissionMode = Literal["default", "accept_edits", "plan", "bypass"]
Origin = Literal["settings", "input", "person"]
_RANK = {"allow": 0, "ask": 1, "deny": 2}

# What each tool is (read-only, which argument rules match …) comes from the tool registry.
_HARMLESS_TARGETS = {"/dev/null", "/dev/stdout", "/dev/stderr"}
_HEREDOC_OPS = {"<<", "<<-", "<<<"}
_RUNTIME_CHARS = set("~$`*?[{")
PROTECTED_DIRS = (".git", ".xsky")
MAX_COMMAND = 16 * 1024  # characters of a shell command the checker reads; longer ones are refused
_RULE_RE = re.compile(r"^\s*([A-Za-z_*][A-Za-z0-9_*]*)\s*(?:\((.*)\))?\s*$", re.S)
_INPUT_SOURCE = "the run's input (no person approved it)"
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


@dataclass(frozen=True)
class Rule:
    tool: str
    specifier: str | None
    text: str
    source: str  # where it came from, as decisions name it: "project settings (path)", "the run's input …"
    origin: Origin = "settings"


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


class ApprovedRule(WireModel):
    """An "allow for this run" rule a person gave by answering an approval request."""

    rule: str
    request_id: str | None = None  # None: kept by an older version, which did not record it

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
    # Tools only a person may allow, call by call (see the module docstring); set by the worker.
    person_only_tools: list[str] = Field(default_factory=list)


def parse_rule(text: str, source: str = "", origin: Origin = "settings") -> Rule:
    m = _RULE_RE.match(text)
    if not m or (m.group(2) is not None and not m.group(2).strip()):
        raise ValueError(
            f"permission rule {text!r} is not valid; write Tool or Tool(specifier), e.g. shell(git log:*), "
            "file_write(src/**), browser_navigate(domain:example.com)"
        )
    specifier = m.group(2).strip() if m.group(2) is not None else None
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


def _host(url: str) -> str:
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def _port(url: str) -> int | None:
    """The port a URL connects to: the one it names, else its scheme's (80, 443)."""
    try:
        parts = urlsplit(url)
        return parts.port or _DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:
        return None


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
        want, port = domain(spec)
        host = _host(subject)
        if port is not None:  # one service: this host exactly, on this port
            return host == want and _port(subject) == port
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
    # A person's approval is named before an input rule that says the same.
    rules["allow"] += [parse_rule(a.rule, a.source, "person") for a in settings.approved_rules]
    rules["allow"] += [parse_rule(t, _INPUT_SOURCE, "input") for t in settings.run_rules]
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
        ctx = _Context(role, rules, workspace, frozenset(settings.person_only_tools))
        if tool == "shell":
            decision = _decide_shell(arguments, ctx, protected)
        else:
            subject = arguments.get(PRIMARY_ARG.get(tool, ""))
            decision = _decide_one(tool, subject if isinstance(subject, str) else None, ctx)
        return _apply_mode(tool, arguments, decision, settings.mode, workspace)
    except Exception as e:  # noqa: BLE001 - the checker failing is a refusal, never a pass
        return Decision(
            "deny",
            f"refused: the permission checker failed on this call ({type(e).__name__}: {str(e)[:200]})",
            hard=True,
        )


@dataclass(frozen=True)
class _Context:
    """What every part of one decision is decided against."""

    role: RoleCapabilityModel
    rules: dict[str, list[Rule]]
    workspace: str | None
    person_only: frozenset[str]

    def without_shell_rules(self) -> _Context:
        rules = {k: [r for r in v if r.tool != "shell"] for k, v in self.rules.items()}
        return _Context(self.role, rules, self.workspace, self.person_only)


def _decide_one(tool: str, subject: str | None, ctx: _Context) -> Decision:
    role = ctx.role
    shown = f" for {subject[:80]!r}" if subject else ""
    if tool in PATH_TOOLS and subject is not None:
        rel = relative_path(subject, ctx.workspace)
        if rel is None:
            return Decision("deny", f"{subject!r} is outside the run's workspace", hard=True)
        if tool == "file_write" and any(part in PROTECTED_DIRS for part in rel.split("/")):
            return Decision(
                "deny",
                f"writing into {rel.split('/')[0]}/ is not allowed: agents may not change version control or xsky state",
                hard=True,
            )
    held = tool in role.allowed_tools or tool in role.requested_tools
    person_only = held and tool in ctx.person_only
    for effect in ("deny", "ask", "allow"):
        for rule in ctx.rules[effect]:
            if rule.origin != "settings" and not held:
                continue  # a rule of the run never gives a role a tool it lacks
            if person_only and effect == "allow" and rule.origin != "person":
                continue
            if _matches(rule, tool, subject, ctx.workspace):
                return Decision(
                    effect,
                    f"{effect} rule {rule.text!r} from {rule.source} matched{shown}",
                    rule.text,
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
    arguments: dict[str, Any], ctx: _Context, protected: Sequence[str] = ()
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
        for d in _part_decisions(part, ctx, protected):
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
    part: ShellCommand, ctx: _Context, protected: Sequence[str] = ()
) -> list[Decision]:
    # ":" stands for redirects or assignments with no command of their own: only they count.
    decisions = [] if part.argv == [":"] else _command_decisions(part, ctx)
    decisions += [
        d
        for d in (_reach_decision(part, ctx), _protected_decision(part, ctx.workspace, protected))
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
        d = _decide_one(as_tool, target, ctx.without_shell_rules())
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
_HOSTISH = re.compile(r"[\w.\-:\[\]%]+")
_PIECE = re.compile(r"\[[^\]]*\]|[^:]+")


@dataclass(frozen=True)
class _Syntax:
    """How a network program's arguments read, from its man page: which options take a value
    (so the value is not taken for a host), and which of those values are, or hold, hosts."""

    values: frozenset[str] = frozenset()  # counts, timeouts, files, headers, names …
    hosts: frozenset[str] = frozenset()  # proxies, jump hosts, --resolve, bind addresses …
    cluster: bool = True  # getopt: -sSm10 is -s -S -m 10
    operands: Literal["all", "first", "remote"] = "all"  # which operands name hosts


def _opts(text: str) -> frozenset[str]:
    return frozenset(text.split())


_CURL = _Syntax(
    values=_opts(
        "-A --user-agent -b --cookie -c --cookie-jar -C --continue-at -d --data --data-ascii "
        "--data-binary --data-raw --data-urlencode -D --dump-header -e --referer -E --cert "
        "--cert-type --key --key-type --pass --cacert --capath --ciphers --crlfile --pinnedpubkey "
        "-F --form --form-string -H --header --proxy-header -K --config --limit-rate -m --max-time "
        "--connect-timeout --expect100-timeout --keepalive-time --happy-eyeballs-timeout-ms "
        "--max-filesize --max-redirs -o --output --output-dir -r --range --retry --retry-delay "
        "--retry-max-time -T --upload-file -u --user -U --proxy-user -w --write-out -X --request "
        "-y --speed-time -Y --speed-limit -z --time-cond -Q --quote -t --telnet-option --trace "
        "--trace-ascii --stderr --unix-socket --abstract-unix-socket --oauth2-bearer --proto "
        "--proto-redir --json --variable --hsts --alt-svc --etag-save --etag-compare --aws-sigv4 "
        "--login-options --sasl-authzid --mail-from --mail-rcpt --mail-auth --netrc-file --engine "
        "--proxy-cacert --proxy-cert --proxy-key --proxy-pass --proxy-ciphers --service-name "
        "--proxy-service-name --krb --delegation --ftp-account --ftp-method --local-port "
        "--parallel-max --rate --create-file-mode --request-target --noproxy --tls-max "
        "--haproxy-clientip --hostpubmd5 --hostpubsha256 --pubkey --tlsuser --tlspassword"
    ),
    hosts=_opts(
        "-x --proxy --preproxy --socks4 --socks4a --socks5 --socks5-hostname --proxy1.0 "
        "--resolve --connect-to --interface --dns-servers --dns-interface --dns-ipv4-addr "
        "--dns-ipv6-addr --doh-url --url -P --ftp-port"
    ),
)
_WGET = _Syntax(
    values=_opts(
        "-O --output-document -o --output-file -a --append-output -i --input-file --config "
        "-P --directory-prefix -T --timeout --dns-timeout --connect-timeout --read-timeout "
        "-t --tries -w --wait --waitretry -Q --quota --limit-rate -U --user-agent --header "
        "--user --password --http-user --http-password --ftp-user --ftp-password --proxy-user "
        "--proxy-password --post-data --post-file --body-data --body-file --method --referer "
        "--load-cookies --save-cookies --ca-certificate --ca-directory --certificate "
        "--private-key --certificate-type --private-key-type --secure-protocol --ciphers "
        "--crl-file --pinnedpubkey -l --level -A --accept -R --reject --accept-regex "
        "--reject-regex -D --domains --exclude-domains -I --include-directories "
        "-X --exclude-directories --cut-dirs --restrict-file-names --default-page --progress "
        "--local-encoding --remote-encoding --hsts-file --warc-file --rejected-log "
        "--report-speed --retry-on-http-error --compression --backups --start-pos "
        "--max-redirect -n -B --base"
    ),
    hosts=_opts("-e --execute --bind-address --bind-dns-address --dns-servers"),
)
_PING = _Syntax(
    values=_opts("-c -i -W -w -s -t -l -p -Q -m -S -M -F -T"),
    hosts=_opts("-I"),
    operands="first",
)
_NC = _Syntax(  # OpenBSD and traditional netcat
    values=_opts("-w -p -i -q -I -O -T -V -X -M -m -P -e -c -K -R -Z"),
    hosts=_opts("-s -x -g -G"),
)
_NCAT = _Syntax(
    values=_opts(
        "-w --wait -p --source-port -i --idle-timeout -e --exec -c --sh-exec --lua-exec "
        "-o --output -x --hex-dump -d --delay -m --max-conns --allow --deny --allowfile "
        "--denyfile --ssl-cert --ssl-key --ssl-trustfile --ssl-ciphers --ssl-servername "
        "--ssl-alpn --proxy-type --proxy-auth --proxy-dns -C --crlf -q"
    ),
    hosts=_opts("-s --source --proxy -g -G"),
)
# ssh's -L/-R/-D/-W name addresses the far side resolves (or a local listener), not ours.
_SSH = _Syntax(
    values=_opts("-c -D -E -e -F -I -i -L -l -m -O -p -Q -R -S -w -W -B"),
    hosts=_opts("-b -J -o"),
    operands="first",  # what follows the destination is the remote command
)
_SCP = _Syntax(
    values=_opts("-c -F -i -l -P -S -D -X"),
    hosts=_opts("-J -o"),
    operands="remote",  # host:path; anything else is a local file
)
_SFTP = _Syntax(
    values=_opts("-B -b -c -D -F -i -l -P -R -S -s -X"),
    hosts=_opts("-J -o"),
    operands="first",
)
_RSYNC = _Syntax(
    values=_opts(
        "-e --rsh --port --timeout --contimeout --bwlimit --exclude --include --exclude-from "
        "--include-from --files-from -f --filter --password-file --log-file --log-file-format "
        "--out-format --chmod --chown --usermap --groupmap --compare-dest --copy-dest "
        "--link-dest --backup-dir --suffix -T --temp-dir --partial-dir --max-size --min-size "
        "--max-delete -B --block-size --checksum-choice --compress-choice --compress-level "
        "--skip-compress --iconv --info --debug --modify-window --stop-after --stop-at "
        "--sockopts -M --remote-option --rsync-path"
    ),
    hosts=_opts("--address"),
    operands="remote",
)
_TELNET = _Syntax(values=_opts("-l -n -e -X -k"), hosts=_opts("-b"), operands="first")
_HTTPIE = _Syntax(
    values=_opts(
        "-a --auth -A --auth-type -o --output --session --session-read-only --pretty -s --style "
        "-p --print --verify --cert --cert-key --cert-key-pass --ssl --ciphers --timeout "
        "--max-redirects --max-headers --format-options --response-charset --response-mime "
        "--default-scheme --boundary --unix-socket --bearer"
    ),
    hosts=_opts("--proxy --resolve --interface"),
)
_ARIA2C = _Syntax(
    values=_opts(
        "-d --dir -o --out -l --log -j --max-concurrent-downloads -s --split "
        "-x --max-connection-per-server -k --min-split-size -t --timeout --connect-timeout "
        "-m --max-tries --retry-wait -i --input-file -U --user-agent --header --referer "
        "--http-user --http-passwd --load-cookies --save-cookies -T --torrent-file "
        "-M --metalink-file --max-overall-download-limit --max-download-limit --conf-path "
        "--checksum"
    ),
    hosts=_opts(
        "--all-proxy --http-proxy --https-proxy --ftp-proxy --interface --multiple-interface "
        "--async-dns-server"
    ),
)
_NMAP = _Syntax(
    values=_opts(
        "-p -iL -iR --excludefile -oN -oX -oS -oG -oA -e -g --source-port --data --data-string "
        "--data-length --ttl --max-retries --host-timeout --scan-delay --max-scan-delay "
        "--min-rate --max-rate --script --script-args --top-ports --version-intensity "
        "--max-parallelism --min-parallelism --min-hostgroup --max-hostgroup --mtu --spoof-mac "
        "--resume --stylesheet --datadir --servicedb --versiondb --min-rtt-timeout "
        "--max-rtt-timeout --initial-rtt-timeout"
    ),
    hosts=_opts("--exclude -S -D --dns-servers --proxies -b"),
    cluster=False,  # -sS, -oN, -T4 are options of their own
)
_DIG = _Syntax(values=_opts("-c -f -k -p -q -t -y"), hosts=_opts("-b"), cluster=False)
_HOST = _Syntax(values=_opts("-c -m -N -R -t -W"))
_FTP = _Syntax(values=_opts("-P -o -r -q -T -u"), hosts=_opts("-s"))
_SOCAT = _Syntax(values=_opts("-b -t -T -lf -lp -L -W"), cluster=False)

_SYNTAX: dict[str, _Syntax] = {
    "curl": _CURL,
    "wget": _WGET,
    "ping": _PING,
    "ping6": _PING,
    "nc": _NC,
    "netcat": _NC,
    "ncat": _NCAT,
    "ssh": _SSH,
    "scp": _SCP,
    "sftp": _SFTP,
    "rsync": _RSYNC,
    "telnet": _TELNET,
    "http": _HTTPIE,
    "https": _HTTPIE,
    "xh": _HTTPIE,
    "aria2c": _ARIA2C,
    "nmap": _NMAP,
    "dig": _DIG,
    "host": _HOST,
    "nslookup": _Syntax(cluster=False),
    "ftp": _FTP,
    "socat": _SOCAT,
}
NETWORK_PROGRAMS = frozenset(_SYNTAX)
# socat addresses whose parameters are a path or a command, not a host.
_SOCAT_LOCAL = re.compile(
    r"(?i)^(exec|system|shell|open|file|create|gopen|pipe|unix\w*|abstract\w*|pty|readline|fd|tun|stdio)$"
)


def destinations(argv: list[str], redirects: Iterable[str] = ()) -> list[str]:
    """Hosts a command names: in URLs, in /dev/tcp paths, as the operands of network programs
    and the values of their options that name a host (a proxy, ``--resolve`` …).

    A network program's arguments are read with its syntax (:data:`_SYNTAX`): the value of
    ``-m 10`` or ``-c 3`` is a time or a count, and among its arguments a word of digits alone
    is never taken for a host (``nc host 80``), though ``inet_aton`` would read one as an
    address; inside a URL (``http://2852039166/``) it still is. The checker is advisory here:
    the egress proxy checks the address a program really connects to.
    """
    tokens = [*argv, *redirects]
    found = [m.group(1) for token in tokens for m in _URL.finditer(token)]
    found += [m.group(1) for token in tokens for m in _DEV_NET.finditer(token)]
    name = argv[0].rsplit("/", 1)[-1] if argv else ""
    syntax = _SYNTAX.get(name)
    if syntax is not None:
        named: list[str] = []
        for option, value in _arguments(argv[1:], syntax):
            named += (
                _operand_hosts(value, name)
                if option is None
                else _option_hosts(option, value, name)
            )
        found += [host for host in named if not host.strip("[]").isdigit()]
    return found


def _arguments(args: list[str], syntax: _Syntax) -> Iterable[tuple[str | None, str]]:
    """(option, value) for each option value that names a host, (None, operand) for each operand
    that may; the values of other options are skipped."""
    operands = 0
    i = 0
    while i < len(args):
        token = args[i]
        i += 1
        if token == "--":
            rest = args[i:]
            i = len(args)
        elif token.startswith("-") and len(token) > 1:
            option, eq, value = token.partition("=")
            attached = bool(eq)
            if option not in syntax.values | syntax.hosts:
                if token.startswith("--") or not syntax.cluster:
                    continue  # a flag (an option this table does not know is taken for one)
                # -sSm10: flags, then the first option that takes a value, with the rest as it
                letter = next(
                    (
                        j
                        for j, c in enumerate(token[1:], 1)
                        if f"-{c}" in syntax.values | syntax.hosts
                    ),
                    None,
                )
                if letter is None:
                    continue
                option, value = f"-{token[letter]}", token[letter + 1 :]
                attached = bool(value)
            if not attached and i < len(args):
                value = args[i]
                i += 1
            if option in syntax.hosts:
                yield option, value
            continue
        else:
            rest = [token]
        for operand in rest:
            operands += 1
            if syntax.operands == "first" and operands > 1:
                return
            if syntax.operands == "remote" and ":" not in operand:
                continue  # a local path
            yield None, operand


def _operand_hosts(token: str, program: str) -> list[str]:
    if "://" in token:
        return []  # read as a URL already
    if program == "socat":
        kind, colon, params = token.split(",", 1)[0].partition(":")
        return [] if not colon or _SOCAT_LOCAL.match(kind) else _option_hosts("", params, program)
    if program in ("http", "https", "xh") and token.startswith(":"):
        return ["localhost"]  # HTTPie's :3000/api is localhost:3000/api
    host = re.split(r"[/?#]", token, maxsplit=1)[0].rsplit("@", 1)[-1]
    if not host or not _HOSTISH.fullmatch(host):
        return []
    if host.startswith("["):
        return [host.split("]", 1)[0] + "]"]
    if program in ("scp", "sftp", "rsync") or host.count(":") == 1:
        return [host.split(":", 1)[0]]  # host:path, host::module, host:port
    return [host]  # a bare IPv6 address


def _option_hosts(option: str, value: str, program: str) -> list[str]:
    """The hosts an option's value names: ``127.0.0.1:3128`` (``-x``), ``a.com:443:10.0.0.1``
    (``--resolve``), ``user@jump1,jump2`` (``-J``), ``ProxyJump=h`` (``-o``), ``http_proxy=h`` (``-e``)."""
    value = value.strip().removeprefix("=")
    if option == "-o" and program in ("ssh", "scp", "sftp"):
        key, _, setting = re.sub(r"\s*=\s*|\s+", "=", value, count=1).partition("=")
        if key.lower() == "proxycommand":
            return [host for word in setting.split() for host in _option_hosts("", word, "")]
        if key.lower() not in ("proxyjump", "hostname", "bindaddress"):
            return []  # an option that names no host
        value = setting
    elif option in ("-e", "--execute") and program == "wget":
        value = value.partition("=")[2]  # a .wgetrc command: http_proxy=host:port
    hosts = []
    for piece in value.split(","):
        piece = piece.strip().rsplit("@", 1)[-1]
        if ip_of(piece) is not None:  # a bare IPv6 address: its colons are not ports
            hosts.append(piece)
            continue
        hosts += [p for p in _PIECE.findall(piece) if _HOSTISH.fullmatch(p)]
    return hosts


def _reach_decision(part: ShellCommand, ctx: _Context) -> Decision | None:
    """A command naming a local, private or metadata host is refused — unless the worker's
    settings or a person opened that host with an exact ``network(domain:host:port)`` rule
    (the egress proxy then lets that one port through, and nothing else of the host).
    Metadata and link-local hosts are refused always."""
    opened = {
        domain(r.specifier)[0]
        for r in ctx.rules["allow"]
        if r.tool == "network"
        and r.origin != "input"
        and r.specifier
        and r.specifier.startswith("domain:")
        and domain(r.specifier)[1] is not None
    }
    for host in destinations(part.argv, [r.target for r in part.redirects]):
        reason = blocked_host(host)
        if not reason:
            continue
        name = host.strip().strip("[]").rstrip(".").lower()
        if name in opened and not _never(name):
            continue
        return Decision(
            "deny",
            f"refused: the command reaches {host} — {reason}; agents cannot reach this machine's "
            "services, private networks or cloud metadata (an exact rule naming host and port, "
            f"network(domain:{host}:PORT), in the worker's settings opens a local service)",
            hard=True,
        )
    return None


def _never(host: str) -> bool:
    """Is ``host`` link-local or a metadata service, which no rule opens?"""
    addr = ip_of(host)
    if addr is not None:
        return never_reachable(addr) is not None
    return bool(LOCAL_NAMES.match(host)) and not host.endswith("localhost")


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


def _command_decisions(part: ShellCommand, ctx: _Context) -> list[Decision]:
    """A simple command, decided as written and without its global options (``git -C . push``
    is a push); one that can run code the checker cannot see is asked for unless a rule allows it."""
    plain = " ".join(normalized(part.argv))
    decisions = [_decide_one("shell", plain, ctx)]
    if plain != part.text:  # a rule written against the full form still counts
        written = _decide_one("shell", part.text, ctx)
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
    if decision.effect == "deny" and (decision.hard or decision.rule is not None):
        return decision  # deny rules and safety refusals hold in every mode
    if mode == "plan" and tool not in READ_ONLY_TOOLS:
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


def trusted_settings(worker: PermissionSettings, given: PermissionSettings) -> PermissionSettings:
    """What a worker decides with: its own settings files' rules (not the run's copy), the
    run's approval-shaped rules (those of its input and those people gave, each kept apart so
    decisions say which), the stricter of the two modes, and every tool either calls person-only."""
    mode = given.mode if _STRICTNESS[given.mode] > _STRICTNESS[worker.mode] else worker.mode
    return PermissionSettings(
        layers=worker.layers,
        mode=mode,
        run_rules=[r for r in given.run_rules if approval_shaped(r)],
        approved_rules=[a for a in given.approved_rules if approval_shaped(a.rule)],
        person_only_tools=list(dict.fromkeys(worker.person_only_tools + given.person_only_tools)),
    )


def approval_shaped(text: str) -> bool:
    """Could ``text`` be an approval a person gave (what :func:`run_rules_for` makes)?

    A run's input may carry any list, so the worker keeps only narrow rules for one named
    tool (no wildcard in its name): one exact call (``tool(=…)``), one named host (or host
    and port) for a URL tool, or a whole tool that cannot run code, reach the network or
    write. ``shell``, ``shell(curl:*)`` or ``*`` is dropped.
    """
    try:
        rule = parse_rule(text)
    except ValueError:
        return False
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


def domain_rules(
    settings: PermissionSettings, tools: tuple[str, ...]
) -> tuple[list[str], list[str]]:
    """(allowed, denied) domain patterns of ``Tool(domain:…)`` rules for these tools; ask
    rules count as denied (nobody can be asked in the middle of a connection).

    A pattern is ``host`` (that host and its subdomains), ``*.suffix`` (hosts under the
    suffix) or ``host:port`` — exactly that host on exactly that port (the form the egress
    proxy needs before it opens a loopback or private address); an IPv6 address is in
    brackets (``[::1]``, ``[::1]:8080``). Hosts are lower-cased. The rules of the run's
    input and people's approvals count as well as the settings'.
    """
    rules = _rules(settings)

    def shown(spec: str) -> str:
        host, port = domain(spec)
        host = f"[{host}]" if ":" in host else host
        return host if port is None else f"{host}:{port}"

    def domains(effects: tuple[str, ...]) -> list[str]:
        return list(
            dict.fromkeys(
                shown(r.specifier)
                for e in effects
                for r in rules[e]
                if r.tool in tools and r.specifier and r.specifier.startswith("domain:")
            )
        )

    return domains(("allow",)), domains(("deny", "ask"))


def run_rules_for(tool: str, arguments: dict[str, Any]) -> list[str]:
    """The rules an "allow for this run" approval adds: as narrow as the call it approved.

    A shell command gets one exact rule per command inside it; a URL its domain, with the
    port when the URL names another than its scheme's or the host is local or private (the
    egress proxy lets such a host through only for a rule naming host and port); a path its
    path; anything else the tool.
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
    url = arguments.get("url")
    if tool in URL_TOOLS and isinstance(url, str) and _host(url):
        host, port = _host(url), _port(url)
        shown = f"[{host}]" if ":" in host else host
        scheme = urlsplit(url).scheme.lower()
        if port is not None and (port != _DEFAULT_PORTS.get(scheme) or blocked_host(host)):
            return [f"{tool}(domain:{shown}:{port})"]
        return [f"{tool}(domain:{shown})"]
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
