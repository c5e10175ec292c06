"""Codex code mode (0.14x): the model's tool calls as one JavaScript script run by ``exec``.

In code mode the model has two tools, ``exec`` and ``wait`` (codex-rs/code-mode: its
``PUBLIC_TOOL_NAME`` and ``WAIT_TOOL_NAME``); every other tool is a method of a global
``tools`` object the script awaits — ``await tools.exec_command({cmd: "cargo test"})``,
``await tools.apply_patch("*** Begin Patch …")``, ``tools.mcp__server__tool(…)`` (names
normalised to JavaScript identifiers). A method takes a string (a freeform tool such as
``apply_patch``) or an object. The rollout holds only the script (a ``custom_tool_call``
named ``exec``) and its one output: the calls inside are not recorded apart.

:func:`inner_calls` reads the script without running it: each ``tools.<name>(…)`` call
written in it, in order, with its argument read as far as it is a literal — strings
(template literals with their ``${…}`` kept as written), numbers, objects (spreads, shorthand
keys), arrays, ``+`` of strings, and names bound by ``const``/``let``/``var`` to such a value.
What cannot be read this way (a call's result, a computed key) is kept as its source text.
A call written once in a loop is one call here (the script's runs are not counted). A
script with no such call (``ALL_TOOLS.filter(…)``, a computation), or one too large or too
odd to scan, gives none: the caller keeps it as the one ``exec`` call it is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

CODE_MODE_TOOLS = ("exec", "code_mode")  # the script tool (``code_mode``: an early name)
PRAGMA = "// @exec:"  # an optional first line: {"yield_time_ms": …, "max_output_tokens": …}
MAX_SCRIPT = 400_000  # characters of a script scanned; a longer one stays one `exec` call
MAX_CALLS = 50  # calls read from one script
_MAX_DEPTH = 8  # names resolved through names, nested literals
_BUDGET = 5_000  # expressions read in one script (names bound to names can fan out)


@dataclass(frozen=True)
class InnerCall:
    tool: str  # the name as the script calls it (``exec_command``, ``apply_patch``, …)
    argument: Any  # what it was given, read (see the module docstring); None: nothing


class _Unreadable(Exception):
    pass


class Source(str):
    """An expression kept as written: its value cannot be read without running the script."""


_IDENT_START = re.compile(r"[A-Za-z_$]")
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_CALL = re.compile(
    r"tools\s*(?:\?\.\s*|\.\s*)([A-Za-z_$][\w$]*)\s*(?:\?\.\s*)?\("
    r"|tools\s*(?:\?\.\s*)?\[\s*(['\"])([^'\"\\\n]{1,100})\2\s*\]\s*(?:\?\.\s*)?\("
)
_DECL = re.compile(r"(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*=(?!=)")
_NUMBER = re.compile(r"-?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+)\Z")
_CLOSE = {"(": ")", "[": "]", "{": "}"}
# After these a "/" begins a regular expression, not a division.
_REGEX_AFTER = set("(,=:[!&|?{};+-*%<>~^") | {""}
_REGEX_KEYWORDS = ("return", "typeof", "case", "do", "else", "in", "of", "void", "yield", "await")


def inner_calls(script: str) -> list[InnerCall]:
    """The ``tools.<name>(…)`` calls written in a code-mode script, in order (at most
    :data:`MAX_CALLS`); none when there are none or the script cannot be scanned."""
    if len(script) > MAX_SCRIPT:
        return []
    code = script
    first, _, rest = script.partition("\n")
    if first.lstrip().startswith(PRAGMA):
        code = " " * (len(first) + 1) + rest  # (positions kept)
    try:
        calls, decls = _scan(code)
        budget = [_BUDGET]
        return [
            InnerCall(name, _argument(code, start, end, decls, budget))
            for name, start, end in calls
        ]
    except (_Unreadable, RecursionError, IndexError, ValueError, OverflowError):
        return []


def _scan(code: str) -> tuple[list[tuple[str, int, int]], list[tuple[int, str, int]]]:
    """The calls (name, argument start, argument end) and declarations (position, name,
    expression start) in the code, outside strings, comments and regular expressions."""
    calls: list[tuple[str, int, int]] = []
    decls: list[tuple[int, str, int]] = []
    i, n, prev = 0, len(code), ""
    while i < n:
        c = code[i]
        if c in "'\"`":
            i = _skip_string(code, i)
            prev = "a"
            continue
        if (after := _comment_end(code, i)) is not None:
            i = after
            continue
        if c == "/" and (prev in _REGEX_AFTER or prev in _REGEX_KEYWORDS):
            i = _skip_regex(code, i)
            prev = "a"
            continue
        if c.isspace():
            i += 1
            continue
        if _IDENT_START.match(c):
            m = _IDENT.match(code, i)
            assert m is not None
            word = m.group(0)
            before = code[i - 1] if i else ""
            if word == "tools" and not (before and (before.isalnum() or before in "_$.")):
                call = _CALL.match(code, i)
                if call and len(calls) < MAX_CALLS:
                    name = call.group(1) or call.group(3)
                    close = _matching(code, call.end() - 1)
                    calls.append((name, call.end(), close))
                    i, prev = call.end(), "("
                    continue
            if word in ("const", "let", "var"):
                d = _DECL.match(code, i)
                if d:
                    decls.append((i, d.group(1), d.end()))
            i, prev = m.end(), word
            continue
        i += 1
        prev = c
    return calls, decls


def _line_end(code: str, i: int) -> int:
    end = code.find("\n", i)
    return len(code) if end < 0 else end


def _comment_end(code: str, i: int) -> int | None:
    """Where the comment (``//…`` or ``/*…*/``) that begins at ``i`` ends; None: none begins."""
    if code.startswith("//", i):
        return _line_end(code, i)
    if code.startswith("/*", i):
        end = code.find("*/", i + 2)
        return len(code) if end < 0 else end + 2
    return None


def _skip_string(code: str, i: int) -> int:
    """The position after the string (or template literal) that begins at ``i``."""
    quote, j, n = code[i], i + 1, len(code)
    while j < n:
        c = code[j]
        if c == "\\":
            j += 2
            continue
        if c == quote:
            return j + 1
        if quote != "`" and c == "\n":
            raise _Unreadable("a string left open")
        if quote == "`" and code.startswith("${", j):
            j = _matching(code, j + 1) + 1
            continue
        j += 1
    raise _Unreadable("a string left open")


def _skip_regex(code: str, i: int) -> int:
    j, n, in_class = i + 1, len(code), False
    while j < n:
        c = code[j]
        if c == "\\":
            j += 2
            continue
        if c == "\n":
            raise _Unreadable("a regular expression left open")
        if c == "[":
            in_class = True
        elif c == "]":
            in_class = False
        elif c == "/" and not in_class:
            j += 1
            while j < n and (code[j].isalnum() or code[j] == "_"):
                j += 1
            return j
        j += 1
    raise _Unreadable("a regular expression left open")


def _matching(code: str, i: int) -> int:
    """The position of the bracket that closes the one at ``i``."""
    stack = [_CLOSE[code[i]]]
    j, n = i + 1, len(code)
    while j < n:
        c = code[j]
        if c in "'\"`":
            j = _skip_string(code, j)
            continue
        if (after := _comment_end(code, j)) is not None:
            j = after
            continue
        if c in _CLOSE:
            stack.append(_CLOSE[c])
        elif c in ")]}":
            if c != stack.pop():
                raise _Unreadable("brackets do not match")
            if not stack:
                return j
        j += 1
    raise _Unreadable("a bracket left open")


def _top_level(code: str, start: int, end: int, line_comments: bool) -> Iterator[int]:
    """Each position of ``code[start:end]`` outside strings and brackets (and ``//`` comments,
    when ``line_comments``)."""
    j = start
    while j < end:
        c = code[j]
        if c in "'\"`":
            j = _skip_string(code, j)
        elif c in _CLOSE:
            j = _matching(code, j) + 1
        elif line_comments and code.startswith("//", j):
            j = _line_end(code, j)
        else:
            yield j
            j += 1


def _parts(code: str, start: int, end: int, sep: str = ",") -> list[str]:
    """``code[start:end]`` split at top-level ``sep`` (brackets and strings balanced)."""
    parts, last = [], start
    for j in _top_level(code, start, end, line_comments=True):
        if j >= last and code.startswith(sep, j):
            parts.append(code[last:j])
            last = j + len(sep)
    parts.append(code[last:end])
    return parts


def _expression_end(code: str, start: int) -> int:
    """Where the expression a declaration binds ends: a top-level ``;``, ``,`` or line end
    (brackets and strings balanced)."""
    for j in _top_level(code, start, len(code), line_comments=False):
        if code[j] in ";,\n" and code[start:j].strip():
            return j
    return len(code)


def _argument(
    code: str, start: int, end: int, decls: list[tuple[int, str, int]], budget: list[int]
) -> Any:
    args = [a for a in _parts(code, start, end) if a.strip()]
    if not args:
        return None
    return _Reader(code, decls, start, budget).value(args[0], 0)


class _Reader:
    """Literal values of expressions, names resolved by the declarations before ``at``."""

    def __init__(
        self, code: str, decls: list[tuple[int, str, int]], at: int, budget: list[int]
    ) -> None:
        self.code, self.decls, self.at, self.budget = code, decls, at, budget

    def value(self, src: str, depth: int) -> Any:
        """The value of ``src`` if it is a literal (or a name bound to one), else its text."""
        self.budget[0] -= 1
        text = src.strip()
        if depth > _MAX_DEPTH or self.budget[0] < 0:
            return Source(text)
        text = _strip_comments(text).strip()
        try:
            terms = _parts(text, 0, len(text), "+")
        except _Unreadable:
            return Source(text)
        if len(terms) > 1:  # a + b + …: strings joined, or the expression as written
            values = [self.value(t, depth + 1) for t in terms]
            if all(isinstance(v, str) and not isinstance(v, Source) for v in values):
                return "".join(values)
            return Source(text)
        try:
            return self._term(text, depth)
        except _Unreadable:
            return Source(text)

    def _term(self, text: str, depth: int) -> Any:
        if not text:
            return Source(text)
        head = text[0]
        if head in "'\"`":
            try:
                if _skip_string(text, 0) == len(text):
                    return _string(text)
            except _Unreadable:
                pass
            return Source(text)
        if head in "{[" and _matching(text, 0) == len(text) - 1:
            if head == "[":
                items = [p for p in _parts(text, 1, len(text) - 1) if p.strip()]
                return [self.value(p, depth + 1) for p in items]
            return self._object(text, depth)
        if head == "(" and _matching(text, 0) == len(text) - 1:
            return self.value(text[1:-1], depth + 1)
        if _NUMBER.match(text):
            number = float(text)
            return int(number) if number.is_integer() and "." not in text else number
        literals = {"true": True, "false": False, "null": None, "undefined": None}
        if text in literals:
            return literals[text]
        if _IDENT.fullmatch(text):
            return self._name(text, depth)
        return Source(text)

    def _object(self, text: str, depth: int) -> Any:
        out: dict[str, Any] = {}
        for part in _parts(text, 1, len(text) - 1):
            entry = _strip_comments(part).strip()
            if not entry:
                continue
            if entry.startswith("..."):
                spread = self.value(entry[3:], depth + 1)
                if isinstance(spread, dict):
                    out.update(spread)
                else:
                    out[entry] = None  # (what it spreads cannot be read)
                continue
            if _IDENT.fullmatch(entry):  # {cmd}: shorthand
                out[entry] = self._name(entry, depth)
                continue
            key_src, sep, rest = _split_key(entry)
            if not sep:
                out[entry] = None  # a method, a getter: kept as written
                continue
            out[key_src] = self.value(rest, depth + 1)
        return out

    def _name(self, name: str, depth: int) -> Any:
        bound = [d for d in self.decls if d[1] == name and d[0] < self.at]
        if not bound:
            return Source(name)
        _, _, start = bound[-1]
        end = _expression_end(self.code, start)
        return self.value(self.code[start:end], depth + 1)


def _split_key(entry: str) -> tuple[str, str, str]:
    """An object entry's key (unquoted), ``:``, and its value's source."""
    if entry[0] in "'\"":
        end = _skip_string(entry, 0)
        key = _string(entry[:end])
        rest = entry[end:].lstrip()
        return (key, ":", rest[1:]) if rest.startswith(":") else (entry, "", "")
    m = re.match(r"([A-Za-z_$][\w$]*|\d+)\s*:", entry)
    if m:
        return m.group(1), ":", entry[m.end() :]
    return entry, "", ""


def _strip_comments(src: str) -> str:
    if "/" not in src:
        return src
    out, j, n, last = [], 0, len(src), 0
    while j < n:
        c = src[j]
        if c in "'\"`":
            j = _skip_string(src, j)
            continue
        if (after := _comment_end(src, j)) is not None:
            out.append(src[last:j])
            j = last = after
            continue
        j += 1
    out.append(src[last:])
    return "".join(out)


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "v": "\v", "0": "\0"}


def _string(literal: str) -> str:
    """A JavaScript string literal's value; a template literal's ``${…}`` kept as written."""
    quote, body = literal[0], literal[1:-1]
    if quote == '"':
        try:
            value = json.loads(literal)
            if isinstance(value, str):
                return value
        except ValueError:
            pass
    out, j, n = [], 0, len(body)
    while j < n:
        c = body[j]
        if c == "\\" and j + 1 < n:
            e = body[j + 1]
            if e == "u" and body[j + 2 : j + 3] == "{":
                close = body.find("}", j + 3)
                out.append(chr(int(body[j + 3 : close], 16)))
                j = close + 1
                continue
            if e == "u":
                out.append(chr(int(body[j + 2 : j + 6], 16)))
                j += 6
                continue
            if e == "x":
                out.append(chr(int(body[j + 2 : j + 4], 16)))
                j += 4
                continue
            if e == "\n":  # a line continuation
                j += 2
                continue
            out.append(_ESCAPES.get(e, e))
            j += 2
            continue
        out.append(c)
        j += 1
    return "".join(out)
