"""What a shell command really runs: every simple command in it, found by a bash parser.

``ls && rm -rf x`` is two commands; so are ``ls; rm -rf x``, ``ls | sh``, ``echo $(rm -rf x)``,
backticks, a second line, subshells, loops and functions. ``FOO=1 rm -rf x`` runs ``rm``;
``bash -c "rm -rf x"``, ``eval …``, ``env``, ``sudo``, ``xargs``, ``timeout`` … run what they
wrap, so that is checked too. Redirections are file reads and writes. A command whose name
is only known at run time (``$CMD``) or text that does not parse cannot be checked: it is
refused (fail closed) by raising :class:`ShellParseError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import bashlex
import bashlex.errors

SHELLS = {"sh", "bash", "zsh", "dash", "ksh"}
# Commands that run another command given as their arguments: for each, the options that
# take a value, and how many positional arguments come before the wrapped command.
WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "env": (frozenset({"-u", "--unset", "-C", "--chdir"}), 0),
    "sudo": (frozenset({"-u", "-g", "-C", "-h", "-p", "-U", "-r", "-t", "-D", "--user", "--group"}), 0),
    "doas": (frozenset({"-u", "-C"}), 0),
    "nohup": (frozenset(), 0),
    "time": (frozenset({"-f", "-o"}), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "xargs": (frozenset({"-I", "-i", "-n", "-P", "-L", "-d", "-E", "-s", "-a", "--max-args", "--max-procs"}), 0),
    "command": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "builtin": (frozenset(), 0),
    "stdbuf": (frozenset({"-i", "-o", "-e"}), 0),
    "watch": (frozenset({"-n", "--interval", "-d"}), 0),
    "chroot": (frozenset({"--userspec", "--groups"}), 1),
    "setsid": (frozenset(), 0),
}
_MAX_DEPTH = 8


class ShellParseError(ValueError):
    pass


@dataclass(frozen=True)
class Redirect:
    op: str  # ">", ">>", "<", …
    target: str

    @property
    def writes(self) -> bool:
        return ">" in self.op and "&" not in self.op.replace(">&", "")


@dataclass
class ShellCommand:
    argv: list[str]
    redirects: list[Redirect] = field(default_factory=list)

    @property
    def text(self) -> str:
        return " ".join(self.argv)


def split_command(command: str) -> list[ShellCommand]:
    """Every simple command ``command`` would run, in order. Raises ShellParseError."""
    out: list[ShellCommand] = []
    _parse_into(command, out, 0)
    if not out:
        raise ShellParseError("the command is empty")
    return out


def _strip_arithmetic(command: str) -> str:
    """Replace each ``$(( … ))`` with a number: bashlex cannot parse arithmetic expansion.

    Arithmetic runs no command unless it holds a substitution; one that does is refused.
    """
    out = []
    i = 0
    while True:
        start = command.find("$((", i)
        if start < 0:
            out.append(command[i:])
            return "".join(out)
        depth, j = 2, start + 3
        while j < len(command) and depth:
            depth += {"(": 1, ")": -1}.get(command[j], 0)
            j += 1
        if depth:
            raise ShellParseError("an arithmetic expansion $(( … )) is not closed")
        inner = command[start + 3 : j - 2]
        if "$(" in inner or "`" in inner or "<(" in inner:
            raise ShellParseError("a command substitution inside $(( … )) cannot be checked")
        out.append(command[i:start] + "0")
        i = j


def _parse_into(command: str, out: list[ShellCommand], depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise ShellParseError("commands nest too deeply to check")
    plain = _strip_arithmetic(command)
    try:
        trees = bashlex.parse(plain)
    except (bashlex.errors.ParsingError, NotImplementedError, IndexError, AttributeError, TypeError, ValueError) as e:
        raise ShellParseError(f"the command cannot be parsed ({e}); write it as plain commands") from None
    for tree in trees:
        _walk(tree, command, out, depth)


def _walk(node: Any, source: str, out: list[ShellCommand], depth: int) -> None:
    kind = node.kind
    if kind == "command":
        _command(node, source, out, depth)
    elif kind in ("commandsubstitution", "processsubstitution"):
        _walk(node.command, source, out, depth)
    elif kind in ("operator", "pipe", "reservedword", "tilde", "heredoc"):
        return
    elif kind == "parameter":
        return
    elif kind == "word":
        for part in getattr(node, "parts", []):
            _walk(part, source, out, depth)
    elif kind == "assignment":
        for part in getattr(node, "parts", []):
            _walk(part, source, out, depth)
    elif kind == "redirect":
        target = node.output
        if hasattr(target, "parts"):
            for part in target.parts:
                _walk(part, source, out, depth)
    elif kind == "function":
        for part in node.parts:
            if part.kind == "compound":
                _walk(part, source, out, depth)
    elif kind == "compound":
        for part in node.list:
            _walk(part, source, out, depth)
        for redirect in getattr(node, "redirects", []):
            _walk(redirect, source, out, depth)
    else:  # list, pipeline, for, while, until, if, case …
        for attr in ("parts", "list"):
            for part in getattr(node, attr, []) or []:
                _walk(part, source, out, depth)


def _command(node: Any, source: str, out: list[ShellCommand], depth: int) -> None:
    argv: list[str] = []
    redirects: list[Redirect] = []
    for part in node.parts:
        if part.kind == "assignment":
            _walk(part, source, out, depth)  # FOO=$(rm x): the substitution runs
            continue
        if part.kind == "redirect":
            target = part.output
            text = target.word if hasattr(target, "word") else str(target)
            redirects.append(Redirect(part.type, text))
            _walk(part, source, out, depth)
            continue
        if part.kind == "word":
            if not argv and any(p.kind in ("parameter", "commandsubstitution", "processsubstitution") for p in getattr(part, "parts", [])):
                raise ShellParseError(f"the command name {part.word!r} is only known at run time; it cannot be checked")
            argv.append(part.word)
            _walk(part, source, out, depth)  # substitutions inside arguments run too
    if not argv:
        if redirects:
            out.append(ShellCommand([":"], redirects))
        return
    out.append(ShellCommand(argv, redirects))
    _unwrap(argv, out, depth)


def _unwrap(argv: list[str], out: list[ShellCommand], depth: int) -> None:
    """Also record what shells, eval and wrappers run on our behalf."""
    name = argv[0].rsplit("/", 1)[-1]
    args = argv[1:]
    if name in SHELLS:
        if "-c" in args:
            i = args.index("-c")
            if i + 1 >= len(args):
                raise ShellParseError(f"{name} -c without a command")
            _parse_into(args[i + 1], out, depth + 1)
        elif not any(a and not a.startswith("-") for a in args):
            out.append(ShellCommand([f"{name} (reading commands from its input)"]))
        return
    if name == "eval":
        if args:
            _parse_into(" ".join(args), out, depth + 1)
        return
    if name in WRAPPERS:
        takes_value, positional = WRAPPERS[name]
        rest = list(args)
        while rest:
            head = rest[0]
            if name == "env" and head in ("-S", "--split-string") and len(rest) > 1:
                _parse_into(rest[1], out, depth + 1)  # env -S "cmd args": a command line in a string
                return
            if head == "--":
                rest.pop(0)
                break
            if head.startswith("-"):
                rest.pop(0)
                if head in takes_value and rest:
                    rest.pop(0)
                continue
            if name == "env" and "=" in head:
                rest.pop(0)
                continue
            break
        rest = rest[positional:]
        if rest:
            out.append(ShellCommand(rest))
            _unwrap(rest, out, depth + 1)
