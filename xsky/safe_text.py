"""Text from agents, pages, plans and logs made safe to show: every control character is
made visible, none is obeyed.

An agent's result, a page's title or a tool's output can carry what a terminal obeys instead
of showing: ESC sequences (cursor moves, ``ESC[2J`` clearing the screen, OSC 8 hyperlinks,
OSC 52 clipboard writes, window titles, DCS/APC/PM/SOS strings), C1 controls (U+009B is CSI
in one character), backspaces and carriage returns that overwrite what was printed, and the
Unicode bidi controls that reorder text so it reads as something else. Every such character
is written as its Python escape, so the person sees that something was there and what:

- C0 controls, DEL and C1 controls (U+0000–U+001F, U+007F–U+009F) as ``\\xNN``:
  ``ESC [ 2 J`` shows as ``\\x1b[2J``, an OSC 52 write as ``\\x1b]52;c;…\\x07``, CSI as
  ``\\x9b``; a carriage return as ``\\r`` (and a line break, where one must not be, as ``\\n``);
- bidi controls (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069) as ``\\uNNNN``.

Kept as they are: ``\\n``, ``\\t``, and ``\\r`` directly before ``\\n`` (a CRLF line end moves
nothing back over printed text). Every escape sequence begins with ESC or a C1 introducer
and ends in printable characters or in BEL / ST, themselves controls, so neutralising the
characters neutralises whole sequences — and shows them in full. The result holds only
printable characters, so a second pass changes nothing. A literal ``\\x1b`` in the text looks
the same as a neutralised ESC: harmless, as neither is obeyed.

Formats with an escape of their own keep the value exact instead: :func:`json_safe` (JSON
``\\u009b``) and :func:`xml_safe` (``&#x9B;``). :func:`markdown_inline` is for a table cell or
title in the Web UI's markdown.

Pure functions on strings: they run inside Temporal workflow code too.
"""

from __future__ import annotations

import re

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROLS = "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"  # C0 without \t \n \r; DEL; C1

# Finding one is a single regex scan: a text without any (nearly every text) is returned as is.
_UNSAFE = re.compile(f"[{_CONTROLS}{_BIDI}]|\r(?!\n)")
_CONTROL = re.compile(f"[{_CONTROLS}{_BIDI}]")  # all but the line breaks (\t never is one)
_UNSAFE_ONE_LINE = re.compile(f"[{_CONTROLS}\n\r{_BIDI}]")


def _escape_of(code: int) -> str:
    named = {0x0A: "\\n", 0x0D: "\\r"}  # as Python writes them; every other one by number
    return named.get(code) or (f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}")


_CODES = [
    *range(0x00, 0x09),
    *range(0x0A, 0x20),
    *range(0x7F, 0xA0),
    0x061C,
    0x200E,
    0x200F,
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
]
_SHOWN_ONE_LINE = {code: _escape_of(code) for code in _CODES}
_SHOWN = {code: shown for code, shown in _SHOWN_ONE_LINE.items() if code not in (0x0A, 0x0D)}
_JSON_ESCAPES = {code: f"\\u{code:04x}" for code in _SHOWN}
# A text holds few distinct controls (ESC, a bidi override or two): one str.replace each is
# fastest. Past this many, one str.translate, whose cost per character is bounded.
_REPLACE_PASSES = 4


def _replace_each(text: str, pattern: re.Pattern[str], table: dict[int, str]) -> str:
    at = 0
    for _ in range(_REPLACE_PASSES):
        found = pattern.search(text, at)
        if found is None:
            return text
        at = found.start()  # nothing before the first one found is unsafe, then or later
        text = text.replace(found[0], table[ord(found[0])])
    return text.translate(table)


def printable(text: str, *, keep_newlines: bool = True) -> str:
    """``text`` with every control character and escape sequence shown as escapes (see the
    module's docstring); with ``keep_newlines=False`` line breaks are shown as ``\\n`` too,
    for a place that must stay on one line. Tabs stay. 5 MB take under a second,
    whatever they hold."""
    if not keep_newlines:
        if _UNSAFE_ONE_LINE.search(text) is None:
            return text
        return _replace_each(text, _UNSAFE_ONE_LINE, _SHOWN_ONE_LINE)
    if _UNSAFE.search(text) is None:
        return text
    if "\r" in text:  # a CR stays only as part of a CRLF
        text = "\r\n".join(piece.replace("\r", "\\r") for piece in text.split("\r\n"))
    return _replace_each(text, _CONTROL, _SHOWN)


def json_safe(dumped: str) -> str:
    """The output of ``json.dumps(..., ensure_ascii=False)`` with DEL, C1 and bidi controls
    written as JSON escapes (``\\u009b``): the same JSON value, nothing a terminal obeys.

    ``json.dumps`` escapes C0 controls itself, but not these. They can only stand inside
    strings (JSON's structure is ASCII), where an escape is always valid.
    """
    if _CONTROL.search(dumped) is None:
        return dumped
    return _replace_each(dumped, _CONTROL, _JSON_ESCAPES)


def xml_safe(xml: str) -> str:
    """Serialised XML with DEL, C1 and bidi controls and lone CRs as character references
    (``&#x202E;``): a saved copy parses to the same plan, and the terminal shows the reference.

    The other C0 controls are not XML characters at all (a parser refuses them even as
    references), so they get :func:`printable`'s escapes.
    """
    if _UNSAFE.search(xml) is None:
        return xml

    def ref(m: re.Match[str]) -> str:
        code = ord(m[0])
        if code < 0x20 and code != 0x0D:
            return _SHOWN[code]
        return f"&#x{code:X};"

    return _UNSAFE.sub(ref, xml)


# Markdown's inline syntax that data could use: links and images ([ ]), raw HTML and
# entities (< > &: an entity could spell a bidi control), emphasis and code (* _ ` ~), the
# table's cell separator, and the backslash, so an escape in the data cannot pair with one of
# ours. CommonMark renders a backslash-escaped punctuation character as the character.
_MARKDOWN = re.compile(r"([\\`*_\[\]<>&|~])")


def markdown_inline(text: str, width: int | None = None) -> str:
    """``text`` as one line of literal markdown text, for a table cell or a title: controls
    shown (:func:`printable`), whitespace runs and line breaks made one space, markdown's
    syntax characters backslash-escaped; at most ``width`` characters before escaping."""
    flat = " ".join(printable(text).split())
    if width is not None and len(flat) > width:
        flat = flat[: width - 1] + "…"
    return _MARKDOWN.sub(r"\\\1", flat)
