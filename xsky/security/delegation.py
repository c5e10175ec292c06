"""Delegated approvals: may the leader approve this tool call in a person's place?

A person delegates with rules in the allow-rule grammar — ``permissions.delegate`` in the
worker's own settings, or ``RunOptions.delegate`` given with the run — and the leader may
approve a call those rules cover, never more. First, the call is decided by :func:`decide` with
the delegated rules as its only allow rules, the deny rules in force, and a role that holds
nothing: a call no delegated rule names is refused (a role's tools do not count), a compound
shell command needs every part covered, what the checker cannot fully parse stays with a person,
and a deny rule always wins.

Then, for a shell command, every part must be one the checker can follow, because a delegated
rule is "you may approve these", not "anything that starts with these words" (``shell(sed:*)``
does not cover ``sed e``). A part is left to a person when:

* it takes a form that runs a program, loads code or writes files its command does not name
  (``sed e``, ``awk 'BEGIN{system(…)}'``, ``tar --checkpoint-action``, ``git -c``, ``env CMD``,
  ``xargs``…: :mod:`xsky.security.program_forms`), whatever rule names it;
* it has an option the checker does not know: one outside the program's known-safe options, or,
  for a program the table does not know, one the covering rule does not write itself;
* the shell decides what it is: a variable set for it (``TAR_OPTIONS=… tar``), a word known only
  when it runs (``$X``, ``$(…)``), a glob that can expand to a file name read as an option
  (``tar -czf a.tgz *`` with a file named ``--checkpoint-action=…``);
* it names a place whose files make programs run others or load code (``.git/``, ``~``,
  ``.npmrc``, ``.cargo/``, ``*.pth`` …), as an argument or a redirection;
* its program is written with a path outside the system's program folders (``./sed``): rules
  name programs by name, and that file is not the program the name stands for.

Ordinary allow rules keep their meaning: a person who writes ``allow shell(sed:*)`` in settings
owns it. Only what a person lets the leader approve in their place is read this strictly.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Sequence
from typing import Any

from xsky.security.option_reading import rule_words
from xsky.security.permissions import PermissionLayer, PermissionSettings, decide
from xsky.security.program_forms import Finding, finding, program_name
from xsky.security.roles import RoleCapabilityModel
from xsky.security.rules import Rule, matches, parse_rule, rule_problems
from xsky.security.shell_parse import ShellCommand, ShellParseError, normalized, split_command

# A role with no tools: only the delegated rules can allow anything.
_NOBODY = RoleCapabilityModel(name="delegate", description="the person's delegated rules")

# Variables a delegated command may set for itself: they change its language and layout only.
_HARMLESS_VARIABLES = re.compile(
    r"LC_[A-Z]+|LANG|LANGUAGE|TZ|NO_COLOR|CLICOLOR|COLUMNS|LINES|PYTHONUNBUFFERED|"
    r"PYTHONDONTWRITEBYTECODE|CI"
)
# Where the system's programs are: a command written with a path elsewhere (./sed, /ws/bin/sed)
# runs a file a rule's name (sed) does not vouch for.
_SYSTEM_PROGRAMS = {"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin"}
# Folders and files whose contents make programs run other programs or load code: hooks and
# configuration (git's core.pager and hooks, ssh's ProxyCommand, npm's script-shell, cargo's
# runners, docker's and kubectl's credential helpers, shells' rc files, Python's .pth files).
_CONFIG_FOLDERS = {
    ".git", ".ssh", ".config", ".gnupg", ".cargo", ".docker", ".kube", ".aws", ".pip", ".xsky",
    ".vim", ".local", ".npm", ".yarn", ".m2", ".gradle", ".mvn", ".bundle", ".gem", ".ipython",
    ".jupyter", ".husky",
}  # fmt: skip
_CONFIG_FILES = {
    ".gitconfig", ".gitmodules", ".npmrc", ".yarnrc", ".yarnrc.yml", ".pnpmfile.cjs",
    ".bunfig.toml", "bunfig.toml", ".wgetrc", ".curlrc", ".netrc", ".bashrc", ".bash_profile",
    ".bash_login", ".bash_logout", ".profile", ".zshrc", ".zshenv", ".zprofile", ".zlogin",
    ".kshrc", ".inputrc", ".vimrc", ".exrc", ".nanorc", ".lesskey", ".lessfilter", ".mailcap",
    ".gdbinit", ".pythonrc", ".pythonrc.py", ".irbrc", ".pryrc", ".Rprofile", ".perldb",
    ".tmux.conf", ".screenrc", ".envrc", "pip.conf", "pip.ini", "sitecustomize.py",
    "usercustomize.py", "pyvenv.cfg", ".pypirc", ".condarc",
}  # fmt: skip


def delegation(
    tool: str,
    arguments: dict[str, Any],
    delegated: Sequence[str],
    deny: Sequence[str],
    workspace: str | None = None,
    programs: bool = True,
) -> tuple[bool, str]:
    """(covered, why): whether the delegated rules allow this exact call, deny rules holding.
    ``why`` says which rule covers it, or why a person decides (the request shows it).
    ``programs`` False: the rules' words alone, as leaders before v0.5.0 read them (a run they
    started replays with their answers: patch delegation-program-forms)."""
    rules = [r for r in delegated if not rule_problems([r])]
    if not rules:
        return False, "no rules are delegated to the leader"
    settings = PermissionSettings(
        layers=[
            PermissionLayer(
                scope="user",
                path="delegated",
                allow=rules,
                deny=[r for r in deny if not rule_problems([r])],
            )
        ],
    )
    decision = decide(tool, arguments, _NOBODY, settings, workspace, forms=False)
    if decision.effect == "deny" and decision.rule is not None:
        return False, f"a deny rule holds: {decision.rule!r}"
    if decision.effect != "allow" or decision.rule is None:
        if not programs:
            return False, "no delegated rule covers this call"
        return False, decision.reason if decision.hard else "no delegated rule covers this call"
    if tool == "shell" and programs:
        beyond = _beyond(arguments["command"], [parse_rule(r) for r in rules], workspace)
        if beyond is not None:
            return False, beyond
    return True, f"within the delegated rule {decision.rule!r}"


def _beyond(command: str, rules: list[Rule], workspace: str | None) -> str | None:
    """Why a part of ``command`` (already covered, part by part) is more than its rules vouch
    for — the worst part's reason — or None."""
    try:
        parts = split_command(command)
    except ShellParseError as e:  # decide() parsed it; a second reading that fails is refused
        return f"the checker cannot fully understand this command ({e}); a person decides"
    worst: tuple[Finding, ShellCommand] | None = None
    for part in parts:
        found = _part(part, rules, workspace)
        if found is not None and (worst is None or found.rank < worst[0].rank):
            worst = (found, part)
    if worst is None:
        return None
    found, part = worst
    where = f" — in {part.text[:60]!r}" if len(parts) > 1 else ""
    return found.reason() + where


def _part(part: ShellCommand, rules: list[Rule], workspace: str | None) -> Finding | None:
    """What keeps one covered part from being approved in a person's place, the worst first."""
    found: list[Finding] = []
    targets = [r.target for r in part.redirects]
    if part.argv != [":"]:
        command = posixpath.normpath(part.argv[0]) if "/" in part.argv[0] else ""
        if command and posixpath.dirname(command) not in _SYSTEM_PROGRAMS:
            found.append(
                Finding(
                    "runs",
                    f"{part.argv[0][:60]!r} runs the program at that path, not the system's "
                    f"{program_name(command)} its rule names",
                )
            )
        known, expanded, ended = _covering_words(part, rules, workspace), set(), False
        for i, word in enumerate(part.argv[1:], start=1):
            how = part.expansions.get(i)
            if how == "runtime":
                found.append(
                    Finding("unclear", f"{word[:40]!r} is only known when the command runs")
                )
            elif how == "glob-start" and not ended:
                found.append(
                    Finding(
                        "unclear",
                        f"the shell expands {word[:40]!r} into file names, which can read as "
                        "options (a file named --checkpoint-action=…)",
                        f"write ./{word[:40]}, or put it after --",
                    )
                )
            elif how is not None:
                expanded.add(word)
            ended = ended or word == "--"
        for assignment in part.assignments:
            name = assignment.split("=", 1)[0].split("[", 1)[0].rstrip("+")
            if not _HARMLESS_VARIABLES.fullmatch(name):
                found.append(
                    Finding(
                        "unclear",
                        f"{name}= set for {program_name(part.argv[0])} can change what it runs "
                        "(as TAR_OPTIONS, MAKEFLAGS or LESSOPEN do)",
                    )
                )
        form = finding(part.argv, frozenset(known), frozenset(expanded))
        if form is not None:
            found.append(form)
        targets += part.argv[1:]
    for word in targets:
        place = _configuring_place(word)
        if place is not None:
            found.append(
                Finding(
                    "unclear",
                    f"{word[:60]!r} names {place}, whose files can make programs run others or "
                    "load code",
                )
            )
    return min(found, key=lambda f: f.rank) if found else None


def _covering_words(part: ShellCommand, rules: list[Rule], workspace: str | None) -> set[str]:
    """The words the delegated shell rules covering this part write (they make its options
    known: ``shell(pytest -x:*)`` makes ``-x`` known)."""
    plain = " ".join(normalized(part.argv))
    words: set[str] = set()
    for rule in rules:
        if rule.specifier is None or not (
            matches(rule, "shell", plain, workspace) or matches(rule, "shell", part.text, workspace)
        ):
            continue
        spec = rule.specifier.removeprefix("=").removesuffix(":*")
        words |= rule_words(spec)
    return words


def _configuring_place(word: str) -> str | None:
    """The configuring folder or file ``word`` names (``.git/``, ``~``, ``.npmrc``), if any —
    also through a glob the shell expands to one (``.gi?/hooks``; a glob reaches a dot-name only
    when it starts with a dot)."""
    for piece in word.split("="):  # --file=.npmrc, of=~/.bashrc
        if piece.startswith("~"):
            return "the home folder"
        for name in piece.split("/"):
            if name.startswith(".") and "{" in name:
                return f"{name[:40]} (braces the shell expands, perhaps to a configuring place)"
            globbed = name.startswith(".") and any(c in name for c in "*?[")
            folder = next((f for f in _CONFIG_FOLDERS if fnmatch.fnmatchcase(f, name)), None)
            if name in _CONFIG_FOLDERS or (globbed and folder):
                return f"the folder {folder or name}/"
            file = next((f for f in _CONFIG_FILES if fnmatch.fnmatchcase(f, name)), None)
            if name in _CONFIG_FILES or name.endswith(".pth") or (globbed and file):
                return f"the configuration file {file or name}"
    return None
