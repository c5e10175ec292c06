"""Shell commands, decided part by part.

A command is parsed (:mod:`xsky.security.shell_parse`), not string-matched: each simple
command inside a compound one is decided on its own (as written and without its global
options) and the strictest answer wins, so ``allow shell(ls:*)`` never allows
``ls && rm -rf x``. Redirections are decided as file reads and writes; a command naming a
local, private or metadata host, or a path into xsky's state or other runs' files, is
refused. What the checker cannot fully understand is asked of a person, and no permission
mode answers instead of them; what it understands and forbids is refused.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import posixpath
import re
from typing import Any

from xsky.security.addresses import LOCAL_NAMES, blocked_host, ip_of, never_reachable
from xsky.security.allow_hosts import how_to_open
from xsky.security.net import DEV_NET, destinations, named_ports
from xsky.security.option_reading import rule_words
from xsky.security.program_forms import finding, value_code
from xsky.security.roles import has
from xsky.security.rules import Check, Decision, decide_one, domain
from xsky.security.shell_parse import (
    INTERPRETERS,
    SHELLS,
    VALUE_NAME,
    ShellCommand,
    ShellParseError,
    deeper_readings,
    inline_code,
    normalized,
    option_given,
    reads_as_of,
    runner_program,
    split_command,
    ssh_runs_locally,
    subcommand_readings,
)

RANK = {"allow": 0, "ask": 1, "deny": 2}
_HARMLESS_TARGETS = {"/dev/null", "/dev/stdout", "/dev/stderr"}
_HEREDOC_OPS = {"<<", "<<-", "<<<"}
_RUNTIME_CHARS = set("~$`*?[{")
MAX_COMMAND = 16 * 1024  # characters of a shell command the checker reads; longer ones are refused


def decide_shell(arguments: dict[str, Any], check: Check) -> Decision:
    """The strictest decision of the command's parts, after the checks on the whole command
    (present, no NUL byte, at most :data:`MAX_COMMAND` characters, understood)."""
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
    values = arguments.get("values")
    if isinstance(values, dict) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in values.items()
    ):
        check = dataclasses.replace(check, values=values)
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
    if check.forms and (named := _NAMES_PROGRAM_VARIABLE.search(command)) is not None:
        # set otherwise than by an assignment a part shows: `printf -v`, `read`, a `for`
        # loop's variable, `${V:=…}`, then exported (or under `set -a`) — review15: each ran
        # touch past deny shell(touch:*); the worker's gate only, as _program_variable
        worst = Decision(
            "ask",
            f"the command names {named.group(1)}, which gives a program options (or a program "
            "to run) that the checker does not read: a person decides",
        )
    for part in parts:
        for d in part_decisions(part, check):
            if worst is None or RANK[d.effect] > RANK[worst.effect]:
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


# Variables a program reads as its options or as the program it runs (sec12: `TAR_OPTIONS=
# '--to-command=touch\\ x' tar -xf a.tar` ran touch past deny shell(touch:*), unasked — the
# checker asks for `tar --to-command`, but reads tar's words, not its environment).
_PROGRAM_VARIABLES = re.compile(r"^(TAR_OPTIONS|RSYNC_RSH|RSYNC_CONNECT_PROG)$")
# Any mention but a plain read ($TAR_OPTIONS): a builtin or loop that sets it names it bare
_NAMES_PROGRAM_VARIABLE = re.compile(r"(?<![\w$])(TAR_OPTIONS|RSYNC_RSH|RSYNC_CONNECT_PROG)(?!\w)")
_SETTERS = frozenset({"export", "declare", "typeset", "local", "readonly", "env", "sudo", "doas"})


def _program_variable(part: ShellCommand) -> str | None:
    """The name of such a variable the command sets — for itself (``V=… cmd``), for the shell
    (``V=…``, ``export V=…``) or for the command it runs (``env V=… cmd``) — or None."""
    words = list(part.assignments)
    if part.argv[0].rsplit("/", 1)[-1] in _SETTERS:
        words += [w for w in part.argv[1:] if "=" in w and not w.startswith("-")]
    for word in words:
        name = word.split("=", 1)[0].split("[", 1)[0].rstrip("+")
        if _PROGRAM_VARIABLES.match(name):
            return name
    return None


def part_decisions(part: ShellCommand, check: Check) -> list[Decision]:
    # ":" stands for redirects or assignments with no command of their own: only they count.
    decisions = [] if part.argv == [":"] else _command_decisions(part, check)
    if check.forms and (variable := _program_variable(part)) is not None:
        # (the worker's gate only: the leader reads delegated rules' variables on its own —
        # xsky/security/delegation.py — and its decisions replay as they were made)
        decisions.append(
            Decision(
                "ask",
                f"setting {variable} gives a program options (or a program to run) that the "
                "checker does not read: a person decides",
            )
        )
    decisions += [
        d for d in (_reach_decision(part, check), _protected_decision(part, check)) if d is not None
    ]
    for redirect in part.redirects:
        target = redirect.target
        # /dev/tcp targets were decided as destinations
        if (
            redirect.op in _HEREDOC_OPS
            or target in _HARMLESS_TARGETS
            or target.isdigit()
            or target.startswith("&")
            or DEV_NET.match(target)
        ):
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
        d = decide_one(as_tool, target, check.without_shell_rules())
        if d.rule is None and d.effect != "deny" or (d.rule is None and "may not use" in d.reason):
            d = Decision(
                "allow", f"redirection {redirect.op} {target!r} stays inside the workspace"
            )
        decisions.append(d)
    if not decisions:
        decisions.append(Decision("allow", "nothing runs"))
    if part.run_by is not None and reads_as_of((0, 12, 4)):
        decisions = _runner_vouched(part, decisions, check)
    return decisions


def _runner_vouched(part: ShellCommand, decisions: list[Decision], check: Check) -> list[Decision]:
    """The decisions on a command a package or environment runner runs (`npx touch x`: touch
    x), which deny and ask rules decide as any command — deny wins, as it does everywhere
    (sec13b: `npx touch x`, `npm exec -- touch x` ran touch past deny shell(touch:*)). A rule
    allowing the runner (`shell(npx:*)`, `shell(uv run:*)`, a person's approval of the call)
    is the person's answer for the rest: what the program is and how it is called (code
    included, as docs/permissions.md says). Without one, the command is decided in full, as
    a wrapper's is (`npx sed e f` is asked as `env sed e f` is). A word that may only be the
    program (part.maybe) counts for deny and ask rules and the checks that refuse outright."""
    ruled = [
        d
        for d in decisions
        if (d.effect == "deny" and (d.rule is not None or d.hard))
        or (d.effect == "ask" and d.rule is not None)
    ]
    if not part.maybe:
        assert part.run_by is not None
        runner = max(part_decisions(part.run_by, check), key=lambda d: RANK[d.effect])
        if runner.effect != "allow" or runner.rule is None:
            return decisions
    else:
        runner = None
    if ruled:
        return ruled
    name = part.run_by.argv[0].rsplit("/", 1)[-1] if part.run_by is not None else "a runner"
    if runner is None:
        return [Decision("allow", f"no deny or ask rule names what {name} may run here")]
    return [
        Decision(
            "allow",
            f"{runner.reason} (what {name} runs: the rule allowing it answers for it)",
            runner.rule,
            origin=runner.origin,
            values=runner.values,
        )
    ]


def _reach_decision(part: ShellCommand, check: Check) -> Decision | None:
    """A command naming a local, private or metadata host is refused — unless the worker's
    settings, a person or the run's starter (``--allow-host``) opened that host with an exact
    ``network(domain:host:port)`` rule; where the command spells the port out (a URL, a
    ``/dev/tcp`` path) it must be an opened one. The egress proxy then lets that one port
    through, and nothing else of the host. Metadata and link-local hosts are refused always."""
    opened: dict[str, set[int]] = {}
    for r in check.rules["allow"]:
        if (
            r.tool == "network"
            and r.origin != "input"
            and (r.specifier or "").startswith("domain:")
        ):
            host, port = domain(r.specifier or "")
            if port is not None:
                opened.setdefault(host, set()).add(port)
    redirects = [r.target for r in part.redirects]
    ports = named_ports(part.argv, redirects)
    for host in destinations(part.argv, redirects):
        reason = blocked_host(host)
        if not reason:
            continue
        name = host.strip().strip("[]").rstrip(".").lower()
        named = ports.get(host, set())
        if name in opened and not _never(name) and named <= opened[name]:
            continue
        if name in opened and not _never(name):
            port = min(named - opened[name])
            kept = ", ".join(map(str, sorted(opened[name])))
            reason += f"; port {port} is not among those opened for it ({kept})"
        else:
            port = min(named) if named else None
        fix = "no rule can open it" if _never(name) else how_to_open(name, port or "PORT")
        return Decision(
            "deny",
            f"refused: the command reaches {host} — {reason}; agents cannot reach this machine's "
            f"services, private networks or cloud metadata unless a rule opens one host and port: {fix}",
            hard=True,
        )
    return None


def _never(host: str) -> bool:
    """Is ``host`` link-local or a metadata service, which no rule opens?"""
    addr = ip_of(host)
    if addr is not None:
        return never_reachable(addr) is not None
    return bool(LOCAL_NAMES.match(host)) and not host.endswith("localhost")


def _protected_decision(part: ShellCommand, check: Check) -> Decision | None:
    """Paths into xsky's state, the artifact store or other runs' workspaces are refused."""
    if not check.protected:
        return None
    ws = posixpath.normpath(check.workspace) if check.workspace else None
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
            for root in check.protected:
                if path == root or path.startswith(root.rstrip("/") + "/"):
                    return Decision(
                        "deny",
                        f"refused: {piece} is inside {root}, which holds xsky's state or other runs' "
                        "files; agents work in their own workspace",
                        hard=True,
                    )
    return None


def _command_decisions(part: ShellCommand, check: Check) -> list[Decision]:
    """A simple command, decided as written and without its global options (``git -C . push``
    is a push); one that can run code the checker cannot see is asked for unless a rule allows it."""
    plain = " ".join(normalized(part.argv))
    decisions = [decide_one("shell", plain, check)]
    if plain != part.text:  # a rule written against the full form still counts
        written = decide_one("shell", part.text, check)
        if written.rule is not None:
            decisions.append(written)
    if reads_as_of((0, 12, 5)):
        # a deny or ask rule naming a subcommand holds past global options the checker does
        # not know (`kubectl -nprod delete`, `docker --tls run`: sec14)
        # A person's "allow for this run" of this very command answers the ask rules its
        # readings meet (one of which asked them), as it answers the rule the command meets:
        # the same call was asked again each time (review18: `docker --tls run alpine`)
        approved = any(d.effect == "allow" and d.origin == "person" for d in decisions)
        named = _named_subcommands(part.argv[0], check)
        readings = subcommand_readings(part.argv, named)
        if reads_as_of((0, 12, 6)):
            # options between a rule's subcommand words, and the second word's aliases
            # (sec15: `gh pr -R o/r merge`, `aws s3 --region r rm`, `docker volume remove`)
            readings += [
                deeper
                for words in readings
                for deeper in deeper_readings(
                    words, _named_subcommands(part.argv[0], check, words[1])
                )
            ]
        for words in readings:
            read = decide_one("shell", " ".join(words), check)
            if read.rule is not None and (
                read.effect == "deny" or (read.effect == "ask" and not approved)
            ):
                decisions.append(read)
        if reads_as_of((0, 12, 6)) and (
            named != frozenset() or part.argv[0].rsplit("/", 1)[-1] == "xargs"
        ):
            why = _subcommand_unknown(part, check, readings)
            if why is not None:
                decisions.append(Decision("ask", f"{why}, which a rule names: a person decides"))
    runtime = frozenset(part.argv[i] for i, how in part.expansions.items() if how == "runtime")
    leading = frozenset(
        part.argv[i]
        for i, how in part.expansions.items()
        if how == "runtime" and _may_lead(part.argv[i], check, i in part.quoted)
    )
    in_value = (
        value_code(part.argv, runtime, leading)
        or _forwarded(part.argv, leading)
        or _runner_program_value(part.argv, runtime)
        or _macro_value(part.argv, runtime)
    )
    hidden = inline_code(part.argv) or in_value
    if hidden is None and check.forms and _git_clone_config(part.argv):
        # (the worker's gate only: a delegated rule already refuses `git clone -c`, in the
        # leader's own reading — xsky/security/program_forms.py — which replays as it was made)
        hidden = "git clone -c/--config sets configuration (core.sshCommand, core.fsmonitor) that runs programs"
    if hidden is None and check.forms and _git_template(part.argv):
        # (the worker's gate only, as above: review15 — a template folder's hooks/post-checkout,
        # written by the same command, ran touch past deny shell(touch:*) as the clone checked out)
        hidden = "git clone/init --template copies hooks (programs git runs) from a folder"
    if hidden is None and check.forms and normalized(part.argv)[:2] == ["git", "config"]:
        # `git config core.fsmonitor CMD && git status` (also alias.x '!CMD', core.pager …) ran
        # CMD past deny shell(touch:*) unasked, where `git -c core.fsmonitor=CMD status` was
        # asked (sec12): a key that is not known to store data only is asked for
        form = finding(part.argv)
        if form is not None and form.kind == "runs" and not _git_data_key(form.why):
            hidden = form.why
    if hidden is not None:
        decisions = [
            d
            if d.effect != "allow" or d.rule is not None
            else Decision("ask", f"{hidden}: a person decides (or allow exactly this with a rule)")
            for d in decisions
        ]
    if in_value is not None and check.forms:
        # A prefix rule (`shell(sed:*)`) stands for the program's ordinary calls, and a value
        # known only when the command runs can make any call of it (a fourth review: `sed
        # "s/a/{{…}}/"`, `git grep -n "{{…}}"` ran what the value said under `shell(sed:*)`,
        # `shell(git grep:*)`). An interpreter's or a shell's prefix rule allows code however
        # it is given, as in _vouched. (The leader's delegated rules are held to this in
        # xsky/security/delegation.py: a value is "only known when the command runs".)
        decisions = [_value_vouched(d, part, in_value) for d in decisions]
    if in_value is not None:
        decisions = [_approved_with_its_values(d, in_value, check) for d in decisions]
    return [_vouched(d, part) for d in decisions] if check.forms else decisions


# Programs that hand the words after their program's name — after `--` too — to a program they
# run, which reads them as it reads its options: `npm run build -- "{{…}}"` (npm gives the words
# after -- to the script's command), `npx eslint "{{…}}"`, `uv run pytest "{{…}}"`, `cargo run --`.
_FORWARDERS = frozenset(
    "npm npx pnpm pnpx yarn bun bunx uv uvx pipx poetry pdm hatch rye conda mamba micromamba "
    "cargo".split()
)


def _forwarded(argv: list[str], leading: frozenset[str]) -> str | None:
    """Why a {{…}} value that may begin an option is given to a program a package runner runs
    (sec12: `npm run show -- "{{…}}"`, the form the docs advise, and `npx show -n 1p f.txt
    "{{…}}"` ran a value '--expression=1e touch x' as sed's option past deny shell(touch:*):
    `--` ends npm's options, not the script's program's) — or None."""
    name = argv[0].rsplit("/", 1)[-1]
    if name not in _FORWARDERS or not reads_as_of((0, 12, 3)):
        return None
    if any(word in leading and "XSKY_V" in word for word in argv[1:]):
        return (
            f"{name} gives a value known only when it runs to a program it runs, which may read "
            "it as an option (after -- too: npm run passes what follows to the script)"
        )
    return None


def _subcommand_unknown(part: ShellCommand, check: Check, readings: list[list[str]]) -> str | None:
    """Why the subcommand a deny or ask rule may name is known only when the command runs
    (0.12.6; sec15: under deny shell(docker run:*), `docker {{…}} alpine` given 'run', `docker
    $(echo run) alpine`, `docker ${X:-run} alpine`, `docker {run,} alpine`, `docker ru?
    alpine` (a file named run there) and `echo run alpine | xargs docker` each created a
    container, allowed) — or None."""
    argv = part.argv
    name = argv[0].rsplit("/", 1)[-1]
    if name == "xargs":
        inner = _xargs_command(argv[1:])
        if inner and _named_subcommands(inner[0], check) != frozenset():
            if all(w.startswith("-") for w in inner[1:]):
                return f"xargs gives its input's words to {inner[0]}, where it reads its subcommand"
        return None
    for words in [*subcommand_readings(argv, None), *readings]:
        at = len(argv) - len(words) + 1  # (the word the reading takes as the subcommand)
        second = _named_subcommands(argv[0], check, words[1]) if len(words) > 2 else frozenset()
        places = [at] + ([at + 1] if second != frozenset() else [])
        if any(0 < i < len(argv) and i in part.expansions for i in places) or any(
            VALUE_NAME in w for w in words[1 : 2 + (second != frozenset())]
        ):
            return (
                f"a word the shell expands when it runs (a value, $(…), a glob) is read as "
                f"{name}'s subcommand"
            )
    return None


def _xargs_command(args: list[str]) -> list[str]:
    """The command xargs runs (its words after xargs's own options)."""
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return args[i + 1 :]
        if not a.startswith("-") or a == "-":
            return args[i:]
        if a.startswith("--"):
            i += 1
            continue
        for j, letter in enumerate(a[1:], 1):
            if letter in "adELnPsI":
                i += j == len(a) - 1  # its value is the next word
                break
        i += 1
    return []


def _named_subcommands(program: str, check: Check, sub: str | None = None) -> frozenset[str] | None:
    """The words deny and ask rules name as ``program``'s subcommand (`shell(kubectl
    delete:*)` → delete) — None when a rule's first words are a pattern, which may name any.
    With ``sub``: the words they name after that subcommand (`shell(gh pr merge:*)`, pr →
    merge; 0.12.6)."""
    name = program.rsplit("/", 1)[-1]
    depth = 1 if sub is None else 2
    words: set[str] = set()
    for rule in [*check.rules["deny"], *check.rules["ask"]]:
        spec = rule.specifier
        if spec is None or not fnmatch.fnmatchcase("shell", rule.tool):
            continue
        spec = spec[1:] if spec.startswith("=") else spec
        spec = spec[:-2] if spec.endswith(":*") else spec
        head = spec.split(None, depth + 1)
        if not head or any(c in " ".join(head[: depth + 1]) for c in "*?["):
            return None
        if head[0].rsplit("/", 1)[-1] == name and len(head) > depth:
            if sub is None or head[1] == sub:
                words.add(head[depth])
    return frozenset(words)


def _macro_value(argv: list[str], runtime: frozenset[str]) -> str | None:
    """Why a value known only when the command runs is m4's text — a definition (-D X=…) or a
    file — which m4 expands as macros, and syscmd(…) runs a command (sec14) — or None."""
    if not runtime or not reads_as_of((0, 12, 5)) or argv[0].rsplit("/", 1)[-1] != "m4":
        return None
    if any(w in runtime or any(r in w for r in runtime) for w in argv[1:]):
        return "m4 expands a value known only when it runs as macros, where syscmd() runs a command"
    return None


def _runner_program_value(argv: list[str], runtime: frozenset[str]) -> str | None:
    """Why a value known only when the command runs names the program (or its package, tool or
    environment) a package or environment tool runs — or None (sec13: `npx "{{…}}" ran` ran a
    value 'touch' past deny shell(touch:*), as `poetry run`, `mise exec --`, `uv run` … would:
    a value written first is asked for, `"{{…}}" ran`; a runner's was not)."""
    if not runtime or not reads_as_of((0, 12, 4)):
        return None
    at = runner_program(argv)
    if at is None or not any(w in runtime for w in argv[1 : at + 1]):
        return None
    name = argv[0].rsplit("/", 1)[-1]
    return (
        f"a value known only when the command runs may name the program {name} runs (or the "
        "package, tool or environment it comes from)"
    )


# Keys git reads as data only (no program, hook, helper, pager or editor is named by them, nor
# does setting them let another configuration run one), beside program_forms' _GIT_SAFE_KEYS,
# which the leader's delegated reading uses as it was (review15: `git config core.autocrlf
# input`, `git config --global push.autoSetupRemote true`, `fetch.prune` … were asked since the
# worker's gate read git config's keys)
_GIT_DATA_KEYS = re.compile(
    r"(core\.(autocrlf|filemode|ignorecase|eol|safecrlf|quotepath|longpaths|symlinks|"
    r"precomposeunicode|whitespace|compression|excludesfile|abbrev)"
    r"|push\.(default|autosetupremote|followtags)|fetch\.(prune|prunetags|parallel)"
    r"|pull\.(ff|rebase)|rebase\.(autostash|autosquash|updaterefs)"
    r"|merge\.(ff|conflictstyle)|diff\.(colormoved|algorithm|renames|mnemonicprefix)"
    r"|http\.(postbuffer|version)|init\.defaultbranch|user\.(name|email|signingkey)"
    r"|commit\.verbose|status\.showuntrackedfiles|log\.date"
    r"|branch\.(autosetupmerge|autosetuprebase|sort)|branch\.[^.]+\.(remote|merge|rebase)"
    r"|color\.[a-z.]+|advice\.[a-z]+|column\.ui|tag\.sort)"
)
_GIT_CONFIG_KEY = re.compile(r"git config (\S+) changes configuration")


def _git_data_key(why: str) -> bool:
    """Is ``why`` program_forms' finding for setting one key, a key of _GIT_DATA_KEYS?"""
    m = _GIT_CONFIG_KEY.match(why)
    return m is not None and _GIT_DATA_KEYS.fullmatch(m.group(1)) is not None


def _git_template(argv: list[str]) -> bool:
    """``git clone``/``git init`` given ``--template`` (or a prefix of it git takes): the
    folder's hooks become the new repository's, and git runs them (post-checkout as the clone
    checks out)."""
    words = normalized(argv)
    return words[:2] in (["git", "clone"], ["git", "init"]) and option_given(
        words[2:], "--template", 5
    )


def _git_clone_config(argv: list[str]) -> bool:
    """``git clone -c KEY=VALUE`` (``--config``, a unique prefix of it, ``-c`` in a cluster of
    short options): the configuration is the new repository's as the clone runs (sec12: `git
    clone -c core.sshCommand='touch x' h:r d` ran touch past deny shell(touch:*) unasked — a
    `git -c` before the subcommand was asked, this one was not)."""
    words = normalized(argv)
    # (`--co` is the shortest prefix git takes: `--c` is ambiguous with --no-checkout)
    return words[:2] == ["git", "clone"] and option_given(words[2:], "--config", 4, "c", "bouj")


_SSH_VALUED = frozenset("BbcDEeFIiJLlmOoPpQRSWw")


def _ssh_own_words(program: str, args: list[str]) -> list[str]:
    """The words ssh reads as its own: its options before the destination and after it (ssh
    reads them there too), not the remote command's (`ssh h ls -F`: ls's -F, not a config
    file). sftp's words as they are."""
    if program != "ssh":
        return args
    host = False
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return args[:i]
        if a.startswith("-") and len(a) > 1:
            for j, letter in enumerate(a[1:], 1):
                if letter in _SSH_VALUED:
                    i += j == len(a) - 1  # its value is the next word
                    break
        elif host:
            return args[:i]  # the remote command begins
        else:
            host = True
        i += 1
    return args


def _approved_with_its_values(d: Decision, why: str, check: Check) -> Decision:
    """A person's "allow for this run" answered the command with the values it held then: a
    later call whose value could be code or an option there (a forEach's next item, a page the
    run read) is asked again, with why — the other values pass on the person's rule (a sixth
    review: after `curl "{{url}}"` was allowed for the run, an item `-o/root/.bashrc` ran
    unasked). A rule of the settings or of the run's start, written knowing values come, still
    allows as written."""
    if d.effect != "allow" or d.origin != "person":
        return d
    if d.values is not None and d.values == tuple(sorted(check.values.items())):
        return d  # the very values the person approved (review14: asked again before)
    # (a role only a person may vouch for stays so: no mode and no leader lifts it — review14)
    only_a_person = any(has(check.person_only, n) for n in check.names("shell"))
    return Decision(
        "ask",
        f"{why}: a person decides — the approval {d.rule!r} for this run answered the command "
        "with the values it held then, not with this one (allow exactly this with a rule)",
        hard=only_a_person,
    )


# A word that begins with a {{…}} value's variable, as the parser gives it: ${XSKY_V1}, or
# $XSKY_V1 where the name ends (not ${XSKY_V1:-…}, $XSKY_V12x: other expansions).
_LEADING_VALUE = re.compile(r"\$(?:\{(XSKY_V[0-9]+)\}|(XSKY_V[0-9]+)(?![A-Za-z0-9_]))")


def _may_lead(word: str, check: Check, quoted: bool = False) -> bool:
    """Can ``word``, known only when the command runs, begin an option? Yes, unless it begins
    with {{…}} values whose texts the checker was given and those texts cannot: they do not
    start with '-', hold no space after which one could (an unquoted value splits) and no * ? [
    (a glob may name a file called -x). An empty value may let the next word lead — and the
    next value of the same word (`"{{a}}{{b}}"`), so every value the word begins with is read,
    and an expansion after them whose text is not known may lead. ``quoted``: the word's
    expansions are all inside "…" (shell_parse._as_bash_reads) — one word, neither split nor
    globbed: it leads only when its text begins with '-'."""
    text, at = "", 0
    while found := _LEADING_VALUE.match(word, at):
        name = found.group(1) or found.group(2)
        if name not in check.values:
            return True
        text, at = text + check.values[name], found.end()
    if at == 0 or word[at : at + 1] in ("$", "`"):
        return True
    text += word[at:]
    if quoted:
        return text.startswith("-")
    pieces = text.split()
    return not pieces or any(p.startswith("-") for p in pieces) or any(c in text for c in "*?[")


def _value_vouched(d: Decision, part: ShellCommand, why: str) -> Decision:
    if d.effect != "allow" or d.rule is None or "*" not in d.rule or "(" not in d.rule:
        return d
    if part.argv[0].rsplit("/", 1)[-1] in INTERPRETERS | SHELLS:
        return d
    return Decision(
        "ask",
        f"{why}: a person decides — {d.rule!r} allows the program's calls as written, not what "
        "a value can make of one (allow exactly this with a rule)",
    )


def _vouched(d: Decision, part: ShellCommand) -> Decision:
    """An allow by a prefix rule stands for the program's ordinary calls, not for a form of
    it that runs another program the rule's words do not name (``shell(sort:*)`` is no
    answer for ``sort --compress-program=sh``, nor ``shell(awk:*)`` for ``awk 'BEGIN{system(…)}'``):
    that form is asked for, as docs/permissions.md says, unless a rule names it."""
    if d.effect != "allow" or d.rule is None or "*" not in d.rule or "(" not in d.rule:
        return d
    if part.argv[0].rsplit("/", 1)[-1] in INTERPRETERS | SHELLS:
        return d  # `shell(python3:*)` allows code however it is given: `-c` runs no more
    spec = d.rule[d.rule.find("(") + 1 : d.rule.rfind(")")].removeprefix("=").removesuffix(":*")
    form = finding(part.argv, frozenset(rule_words(spec)))
    if form is None or form.kind != "runs":
        return d
    named = finding(spec.split()) if spec.split() else None
    program = part.argv[0].rsplit("/", 1)[-1]
    if (
        program in ("ssh", "sftp")
        and ssh_runs_locally(program, _ssh_own_words(program, part.argv[1:]))
        and not ssh_runs_locally(program, spec.split()[1:])
    ):
        # `shell(ssh:*)` allows connecting, not a program run here that its words do not name
        # (sec12: `ssh -oProxyCommand='touch x' h` ran touch past deny shell(touch:*) under it:
        # ssh "runs programs" however it is called, so the rule's own words seemed to say so)
        return Decision(
            "ask",
            f"{program} options that run a local program (ProxyCommand, LocalCommand, -F, -S): "
            f"a person decides — {d.rule!r} allows the program, not a local program it is told "
            "to run (allow exactly this with a rule)",
        )
    if named is not None and named.why == form.why:
        # the rule's own words run it (uv run, docker, npx: programs that run others however
        # they are called): the person allowed that, as written
        return d
    return Decision(
        "ask",
        f"{form.why}: a person decides — {d.rule!r} allows the program, not a form of it that "
        "runs another (allow exactly this with a rule)",
    )
