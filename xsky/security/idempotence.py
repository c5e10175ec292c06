"""Which tool calls may simply run again when an earlier attempt may have run them.

Temporal runs an activity at least once: when a worker dies in the middle of a tool call, the
next attempt cannot know whether the call did what it does. For a call that changes nothing
(reads a file, fetches a page) that does not matter, and for one that does the same thing
twice without harm (writes the same file, runs a build) the retry repeats it with the same
``XSKY_ATTEMPT_KEY``. A call that acts on the world in a way a repeat would double — a POST,
a push, a publish, an MCP tool its server does not call read-only, a command a person's rule
marks as an effect — is **not** repeated silently: the attempt asks a person (see
``activities/agents/in_doubt.py``). This module only judges calls; it does no I/O.

Three sources say a call is not idempotent, and none can say the opposite of another (a plan
is untrusted: it may ask for more care, never for less):

- the worker's settings, ``permissions.effects`` — rules in the allow-rule grammar, e.g.
  ``shell(./deploy.sh:*)``, ``mcp__payments``, ``browser_click``;
- the agent's ``<config>`` ``"idempotent": false`` — every call it makes that changes
  something;
- what the call is: HTTP methods other than GET/HEAD/OPTIONS, and the commands of
  :data:`_EFFECT_COMMANDS` (uploads with curl or wget, ``git push``, package publishing…),
  and an MCP tool whose server marks it neither read-only (``readOnlyHint``) nor idempotent
  (``idempotentHint``: called again with the same arguments it does nothing more).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from xsky.security.mcp import is_mcp
from xsky.security.rules import Rule, matches
from xsky.security.shell_parse import (
    ShellCommand,
    ShellParseError,
    normalized,
    split_command,
    subcommand_readings,
)
from xsky.security.tools import PRIMARY_ARG, TOOLS

# The answers an in-doubt request takes: run the call again, go on without it, or take it as
# done (optionally with what it returned: "done: <text>").
CHOICES = ("again", "skip", "done")
_SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}
# curl options that send a body (and so, without -X, a POST) or upload a file.
_CURL_SENDS = {"-d", "-F", "-T", "--data", "--data-raw", "--data-binary", "--data-urlencode"}
_CURL_SENDS |= {"--data-ascii", "--form", "--form-string", "--upload-file", "--json"}
_WGET_SENDS = ("--post-data", "--post-file", "--body-data", "--body-file")
# curl's long options that send, as curl 7.88 takes them: whole or by any prefix (sec15:
# `curl --data-ra x URL` POSTs), and a config file, which may hold any of them
_CURL_LONG_SENDS = tuple(o for o in _CURL_SENDS if o.startswith("--")) + ("--config",)
# curl's short options whose value is the rest of their cluster or the next word (`-sd x`,
# `-sXPOST`: sec15 — each POSTs; the cluster's letters after one are its value)
_CURL_VALUED = frozenset("AbcCdDeEFHKmoPQrtTuUwxXyYz")
# Commands whose whole purpose is an effect outside the workspace, by program and subcommand.
_EFFECT_COMMANDS: dict[str, tuple[str, ...]] = {
    "git": ("push", "send-email"),
    "pnpm": ("publish",),
    "yarn": ("publish", "npm"),
    "cargo": ("publish", "yank"),
    "twine": ("upload",),
    "gem": ("push", "yank"),
    # npm's aliases and the abbreviations npm 11 expands (`npm pu` publishes: sec15)
    "npm": (
        "publish",
        "unpublish",
        "deprecate",
        "pu",
        "pub",
        "publ",
        "publi",
        "publis",
        "unp",
        "unpu",
        "unpub",
        "unpubl",
        "unpubli",
        "unpublis",
        "dep",
        "depr",
        "depre",
        "deprec",
        "depreca",
        "deprecat",
    ),
    "uv": ("publish",),
    "poetry": ("publish",),
    "pdm": ("publish",),
    "hatch": ("publish",),
    "flit": ("publish",),
    "helm": ("install", "upgrade", "uninstall", "delete", "del", "un", "rollback", "push"),
    "docker": ("push",),
    "podman": ("push",),
    "gh": ("pr", "issue", "release", "repo", "api", "workflow"),
    "kubectl": ("apply", "create", "delete", "patch", "replace", "scale", "rollout"),
    "terraform": ("apply", "destroy", "import"),
    "aws": (),  # any subcommand: its read-only ones are not told apart here
    "sendmail": (),
    "mail": (),
    "ssh": (),
    "scp": (),
}
# HTTP clients whose method is a word before the URL (httpie: `http POST URL a=b`)
_HTTPIE = frozenset({"http", "https", "httpie", "xh", "xhs"})


def changes_something(tool: str, mcp_read_only: bool = False) -> bool:
    """Is ``tool`` one whose call may have an effect (writes, starts processes, an MCP tool not
    marked read-only)? Only such calls are tracked: a read that may have run is just read again."""
    if is_mcp(tool):
        return not mcp_read_only
    spec = TOOLS.get(tool)  # a name no tool has runs nothing (the agent is told so)
    return spec is not None and not spec.read_only


def not_repeatable(
    tool: str,
    arguments: Mapping[str, Any],
    *,
    effects: Sequence[Rule] = (),
    config: Mapping[str, Any] | None = None,
    mcp_read_only: bool = False,
    mcp_idempotent: bool = False,
    workspace: str | None = None,
) -> str | None:
    """Why a call that may have run must not run again without a person's say (None: it may).
    ``effects``: the worker's ``permissions.effects`` rules, parsed."""
    if not changes_something(tool, mcp_read_only):
        return None
    if config is not None and config.get("idempotent") is False:
        return 'the agent\'s <config> says "idempotent": false'
    subjects = _subjects(tool, arguments)
    for rule in effects:
        if any(matches(rule, tool, subject, workspace) for subject in subjects):
            return f"the rule {rule.text} in {rule.source} marks it as an effect"
    if is_mcp(tool):
        return (
            None
            if mcp_idempotent
            else "its MCP server marks it neither read-only (readOnlyHint) nor idempotent "
            "(idempotentHint)"
        )
    method = arguments.get("method")
    if isinstance(method, str) and method.upper() not in _SAFE_METHODS:
        return f"it sends an HTTP {method.upper()}"
    if tool == "shell":
        return _effect_command(str(arguments.get("command") or ""))
    return None


def _subjects(tool: str, arguments: Mapping[str, Any]) -> list[str | None]:
    """What rules are matched against: the primary argument, and for a shell command each of
    its simple commands too (``shell(git push:*)`` names ``make && git push``)."""
    subject = arguments.get(PRIMARY_ARG.get(tool, ""))
    found: list[str | None] = [subject if isinstance(subject, str) else None]
    if tool == "shell" and isinstance(subject, str):
        found += [part.text for part in _parts(subject)]
    return found


def _parts(command: str) -> list[ShellCommand]:
    try:
        return split_command(command)
    except ShellParseError:
        return []


def _effect_command(command: str) -> str | None:
    """The first simple command of ``command`` that sends or publishes something, said."""
    parts = _parts(command)
    if not parts and command.strip():
        return "the command could not be read, so it is not taken as harmless to repeat"
    for part in parts:
        argv = normalized(part.argv)
        if not argv:
            continue
        program = argv[0].rsplit("/", 1)[-1]
        if program.startswith("python") and argv[1:3] == ["-m", "twine"]:
            argv, program = argv[2:], "twine"  # (`python3 -m twine upload`)
        rest = argv[1:]
        if program == "curl" and _curl_sends(rest):
            return f"`{part.text[:80]}` sends data (curl)"
        if program == "wget" and any(
            a.startswith(_WGET_SENDS) or (a.startswith("--method") and "GET" not in a.upper())
            for a in rest
        ):
            return f"`{part.text[:80]}` sends data (wget)"
        if program in _HTTPIE and any(
            a.isalpha() and a.isupper() and a not in _SAFE_METHODS for a in rest[:4]
        ):
            return f"`{part.text[:80]}` sends data ({program})"
        if program == "rsync" and any(":" in a and not a.startswith("-") for a in rest):
            return f"`{part.text[:80]}` copies to or from another host (rsync)"
        subcommands = _EFFECT_COMMANDS.get(program)
        if subcommands is None:
            continue
        words = [a for a in rest if not a.startswith("-")]
        if not subcommands or (words and words[0] in subcommands):
            return f"`{part.text[:80]}` acts outside the workspace ({program})"
        # past a global option the table does not know, its value may be taken for the
        # subcommand (sec15: `git -c x=y push`, `kubectl -v 9 apply`, `gh -R o/r pr create`,
        # `docker image push`, `terraform -chdir infra apply` were repeated unasked): each
        # reading the deny rules see is one here too
        if any(
            len(reading) > 1 and reading[1] in subcommands
            for reading in subcommand_readings([program, *rest])
        ):
            return f"`{part.text[:80]}` acts outside the workspace ({program})"
    return None


def _curl_sends(args: list[str]) -> bool:
    words = iter(args)
    for a in words:
        if a.startswith("--"):
            flag, eq, value = a.partition("=")
            if len(flag) > 3 and any(o.startswith(flag) for o in _CURL_LONG_SENDS):
                return True
            if len(flag) > 3 and "--request".startswith(flag):
                method = value if eq else next(words, "GET")
                if method.upper() not in _SAFE_METHODS:
                    return True
            continue
        if not a.startswith("-") or a == "-":
            continue
        for j, letter in enumerate(a[1:], 1):
            if letter in "dFTK":
                return True
            if letter in _CURL_VALUED:
                value = a[j + 1 :] or next(words, "")
                if letter == "X" and value.upper() not in _SAFE_METHODS:
                    return True
                break
    return False


def choice_of(answer: str) -> tuple[str, str]:
    """An answer to an in-doubt request as (choice, note): "done: 3 rows" → ("done", "3 rows").
    An answer that is none of :data:`CHOICES` gives ("", the answer)."""
    head, _, note = answer.partition(":")
    word = head.strip().lower()
    return (word, note.strip()) if word in CHOICES else ("", answer.strip())
