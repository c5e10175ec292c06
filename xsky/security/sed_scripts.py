"""What a sed script does beyond editing text: the programs it runs and the files it writes.

sed edits text, and its scripts can do more: the ``e`` command runs a shell command (the one it
names, or the pattern space), the ``s///e`` flag runs the pattern space after the substitution,
and ``w``/``W`` and the ``s///w`` flag write the files they name. Such a command can hide
anywhere in a script — after an address, inside a block, behind another delimiter
(``s|a|b|e``), among other flags (``s/a/b/ge``) — while text that merely looks like one is data
(``a e x`` appends the line "e x"; ``s/e/w/`` replaces e by w). So the script is read command by
command the way GNU sed's compiler reads it (sed/compile.c): addresses, ``!``, the command
letter, then that command's own argument syntax (text to the end of the line for ``a``/``i``/
``c``, a file name to the end of the line for ``r``/``w``, delimited parts and flags for ``s``
and ``y``). Where versions of sed differ, the reader takes the reading that shows more commands.
A script that does not read as sed is an error, never harmless.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# Commands that take no argument (sed's `read_end_of_cmd` follows them).
_PLAIN = set("=dDFgGhHnNpPxz")
# Files `w` may name without writing anything of the workspace's.
_STANDARD = {"/dev/stdout", "/dev/stderr"}


class SedScriptError(ValueError):
    """The text does not read as a sed script."""


@dataclass(frozen=True)
class Effect:
    kind: Literal["runs", "writes"]
    what: str  # one clause a person reads: "sed's e command runs a program (id)"


class _Text:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def get(self) -> str:
        """The next character, "" at the end (reading past the end, as sed's EOF does)."""
        self.i += 1
        return self.text[self.i - 1] if self.i <= len(self.text) else ""

    def unget(self) -> None:
        self.i -= 1

    def nonblank(self) -> str:
        ch = self.get()
        while ch in (" ", "\t"):
            ch = self.get()
        return ch

    def to_end_of_line(self) -> str:
        """Up to the next newline (a file name: no escapes)."""
        out = []
        ch = self.nonblank()
        while ch not in ("", "\n"):
            out.append(ch)
            ch = self.get()
        return "".join(out)

    def comment(self) -> None:
        """Up to the next newline, whatever comes before it (a backslash does not escape it)."""
        ch = self.get()
        while ch not in ("", "\n"):
            ch = self.get()

    def text_to_end_of_line(self) -> str:
        """Text of ``a``/``i``/``c``/``e``: up to a newline no backslash escapes."""
        out = []
        ch = self.get()
        while ch not in ("", "\n"):
            if ch == "\\":
                ch = self.get()
            out.append(ch)
            ch = self.get()
        return "".join(out)

    def label(self) -> str:
        """A label (of ``:``, ``b``, ``t``, ``T``, ``v``): up to a blank, ``;``, or a ``#`` or
        ``}`` that is read next (GNU sed 4.9; older versions read longer labels, so they see no
        command this reader does not)."""
        out = []
        ch = self.nonblank()
        while ch not in ("", "\n", ";", "#", "}") and not ch.isspace():
            out.append(ch)
            ch = self.get()
        if ch in ("#", "}"):
            self.unget()
        return "".join(out)

    def digits(self) -> str:
        out = []
        ch = self.get()
        while ch.isdigit():
            out.append(ch)
            ch = self.get()
        self.unget()
        return "".join(out)

    def delimited(self, delimiter: str, what: str) -> None:
        """Skip one part of ``s`` or ``y`` (or a regex address) up to its closing delimiter."""
        while True:
            ch = self.get()
            if ch in ("", "\n"):
                raise SedScriptError(f"unterminated {what}")
            if ch == delimiter:
                return
            if ch == "\\" and self.get() == "":
                raise SedScriptError(f"unterminated {what}")

    def end_of_command(self, command: str) -> None:
        ch = self.nonblank()
        if ch in ("}", "#"):
            self.unget()
        elif ch not in ("", "\n", ";"):
            raise SedScriptError(f"extra characters after command {command}")


def effects(script: str) -> list[Effect]:
    """Every program run and file write in ``script``; raises SedScriptError when it is not sed."""
    text = _Text(script)
    found: list[Effect] = []
    depth = 0
    while True:
        ch = text.get()
        while ch == ";" or ch.isspace():
            ch = text.get()
        if ch == "":
            break
        if _address(text, ch):
            ch = text.nonblank()
            if ch == ",":
                if not _address(text, text.nonblank()):
                    raise SedScriptError("unexpected ','")
                ch = text.nonblank()
        if ch == "!":
            ch = text.nonblank()
        if ch == "#":
            text.comment()
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth < 0:
                raise SedScriptError("unexpected }")
            text.end_of_command("}")
        elif ch == "e":
            command = text.text_to_end_of_line().strip()
            shown = f" ({command[:40]})" if command else " (the pattern space, as a shell command)"
            found.append(Effect("runs", f"sed's e command runs a program{shown}"))
        elif ch in ("a", "i", "c"):
            first = text.nonblank()
            if first == "":
                raise SedScriptError(f"expected \\ after {ch}")
            if first != "\\" or text.get() not in ("\n", ""):
                text.unget()  # one-liner text, or `a\text`: the text starts here
            text.text_to_end_of_line()  # after `a\` and a newline: the next line
        elif ch in (":", "b", "t", "T", "v"):
            if not text.label() and ch == ":":
                raise SedScriptError('":" lacks a label')
        elif ch in ("q", "Q", "l", "L"):
            text.nonblank()
            text.unget()
            text.digits()
            text.end_of_command(ch)
        elif ch in _PLAIN:
            text.end_of_command(ch)
        elif ch in ("r", "R"):
            if not text.to_end_of_line() and ch == "r":
                raise SedScriptError("missing filename in r command")
        elif ch in ("w", "W"):
            name = text.to_end_of_line()
            if name not in _STANDARD:
                found.append(Effect("writes", f"sed's {ch} command writes the file {name[:60]!r}"))
        elif ch == "s":
            _substitute(text, found)
        elif ch == "y":
            delimiter = text.get()
            if delimiter in ("", "\n", "\\"):
                raise SedScriptError("unterminated y command")
            text.delimited(delimiter, "y command")
            text.delimited(delimiter, "y command")
            text.end_of_command("y")
        elif ch == "":
            raise SedScriptError("missing command")
        else:
            raise SedScriptError(f"unknown command: {ch!r}")
    if depth:
        raise SedScriptError("unmatched {")
    return found


def _address(text: _Text, ch: str) -> bool:
    """Read one address starting with ``ch``; False (nothing read) when ``ch`` starts none."""
    if ch in ("/", "\\"):
        delimiter = text.get() if ch == "\\" else "/"
        if delimiter in ("", "\n"):
            raise SedScriptError("unterminated address regex")
        text.delimited(delimiter, "address regex")
        while text.nonblank() in ("I", "M"):
            pass
        text.unget()
        return True
    if ch.isdigit():
        text.digits()
        if text.nonblank() == "~":
            text.nonblank()
            text.unget()
            text.digits()
        else:
            text.unget()
        return True
    if ch in ("+", "~"):
        text.nonblank()
        text.unget()
        if not text.digits():
            raise SedScriptError(f"expected a number after {ch}")
        return True
    return ch == "$"


def _substitute(text: _Text, found: list[Effect]) -> None:
    delimiter = text.get()
    if delimiter in ("", "\n", "\\"):
        raise SedScriptError("unterminated `s' command")
    text.delimited(delimiter, "`s' command")
    text.delimited(delimiter, "`s' command")
    while True:
        ch = text.get()
        if ch in ("g", "p", "i", "I", "m", "M", " ", "\t", "\r") or ch.isdigit():
            continue  # blanks: some versions refuse them; reading on shows any later flag
        if ch == "e":
            found.append(Effect("runs", "sed's s///e flag runs the result as a shell command"))
        elif ch == "w":
            name = text.to_end_of_line()
            if name not in _STANDARD:
                found.append(Effect("writes", f"sed's s///w flag writes the file {name[:60]!r}"))
            return
        elif ch in ("}", "#"):
            text.unget()
            return
        elif ch in ("", "\n", ";"):
            return
        else:
            raise SedScriptError(f"unknown option to `s': {ch!r}")
