"""Mending a plan's XML the way Eko mends a plan it is still streaming, every change reported.

Eko (``fixXmlTag`` in eko-core's ``common/utils.ts``, and xmldom's tolerance) reads a plan
cut off mid-stream by dropping a half-written tag, escaping a bare ``&`` (and here a ``<``
that starts no tag: ``price < 50``) and closing the
elements left open; its parser also steps over an end tag that closes nothing. The same class
of damage is mended here, for the text of an Eko plan and of a planner's reply only — a
native ``<workflow>`` a person typed stays strict. Unlike Eko, each change is returned as a
:class:`~xsky.errors.Problem` at its line and column, for the caller to show as a warning.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from contextlib import AbstractContextManager
from contextvars import ContextVar

from xsky.errors import Problem
from xsky.plan.as_before import switched_on

# What the scan steps over whole (comments, CDATA, processing instructions), or a tag.
_SPANS = (("<!--", "-->"), ("<![CDATA[", "]]>"), ("<?", "?>"))
_TAG = re.compile(r"<(/?)([A-Za-z_][\w:.-]*)((?:\"[^\"]*\"|'[^']*'|[^'\"<>])*?)(/?)>", re.S)
_NO_TAG = (None, None, None, None)
_BARE_AMP = re.compile(r"&(?!(?:[A-Za-z_][\w.-]*|#[0-9]+|#x[0-9A-Fa-f]+);)")
# A '<' no tag can start with (before a space, a digit, '=' or the end): a comparison in a
# model's text ("price < 50", "a <= b"), as xmldom reads it.
_BARE_LT = re.compile(r"<(?=[\s\d=]|\Z)")
# A leader replaying a run that read plan XML before v0.11.7 (workflows/patches.py, patch
# eko-bare-lt-escaped) reads it as then: such a '<' left as it is (the plan refused).
_LT_KEPT: ContextVar[bool] = ContextVar("xsky_bare_lt_kept", default=False)
# HTML's named entities in a model's text (&nbsp;): XML knows five. Replaced since v0.11.8
# (patch eko-html-entities: a leader replaying an older reading leaves them, and refuses).
_NAMED_ENTITY = re.compile(r"&([A-Za-z][A-Za-z0-9]{1,31});")
_XML_ENTITIES = frozenset({"amp", "lt", "gt", "quot", "apos"})
_MARKUP = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}
_ENTITIES_KEPT: ContextVar[bool] = ContextVar("xsky_entities_kept", default=False)
# What the repairs of a plan cut off say: Eko mends such a plan only to show it while it still
# streams, and never runs it (its final parse mends nothing: "No executable agent"); nor does
# xsky since v0.11.8 — the end of the plan is missing, not damaged (workflows/patches.py,
# patch eko-cut-off-refused: a leader replaying a run that read one before reads it as then).
CUT_OFF = ("dropped a tag cut off mid-way", "the plan ends before its elements do")
_CUT_MENDED: ContextVar[bool] = ContextVar("xsky_cut_off_mended", default=False)


def may_escape_lt(text: str | bytes) -> bool:
    """Whether repairing ``text`` escapes a '<' (the leader asks its patch only then): one
    outside every tag, comment and CDATA section — XML that v0.11.6 refused whole, so no run
    of that version holds it as a plan it read."""
    raw = text.decode("utf-8", errors="replace") if isinstance(text, bytes) else text
    if _BARE_LT.search(raw) is None:  # the common case: no scan at all
        return False
    _, repairs = repair(raw)
    return any(r.message.endswith("escaped a bare '<' as &lt;") for r in repairs)


def is_cut_off(problem: Problem) -> bool:
    """A repair that mended a plan cut off (its end missing), not damaged."""
    return problem.message.removeprefix("repaired: ").startswith(CUT_OFF)


def cut_off_refused() -> bool:
    """Whether a plan cut off is refused (not, while a leader replays an older reading)."""
    return not _CUT_MENDED.get()


def may_be_cut_off(text: str | bytes) -> bool:
    """Whether reading ``text`` as an Eko plan would mend a cut-off end (the leader asks its
    patch only then): XML that ends before its elements do — any other run's plan is whole."""
    raw = text.decode("utf-8", errors="replace") if isinstance(text, bytes) else text
    if "<root" not in raw or raw.rstrip().endswith("</root>"):  # the common cases: no scan
        return False
    _, repairs = repair(raw)
    return any(is_cut_off(r) for r in repairs)


def cut_off_mended_as_before_v0_11_8() -> AbstractContextManager[None]:
    """Read as v0.11.7 and before did: a plan cut off is mended (its end closed), warned of."""
    return switched_on(_CUT_MENDED)


def bare_lt_as_before_v0_11_7() -> AbstractContextManager[None]:
    """Repair as v0.11.6 and before did: a '<' that starts no tag is left as it is."""
    return switched_on(_LT_KEPT)


def repair(text: str) -> tuple[str, list[Problem]]:
    """``text`` mended, and what was changed (empty: nothing could be, or needed to be)."""
    repairs: list[Problem] = []
    body = _drop_cut_tag(text, repairs)
    out: list[str] = []
    stack: list[tuple[str, int]] = []  # open elements: name, offset of the start tag
    at = 0
    for start, end, groups in _tokens(body):
        out.append(_escape_amps(body, at, start, repairs))
        at = end
        closing, name, _, empty = groups
        token = body[start:end]
        if name is None or empty:
            out.append(token)
        elif not closing:
            stack.append((name, start))
            out.append(token)
        elif stack and stack[-1][0] == name:
            stack.pop()
            out.append(token)
        elif any(open_name == name for open_name, _ in stack):
            # An end tag for an outer element: the inner ones were left open — close them here.
            closed = []
            while stack[-1][0] != name:
                closed.append(stack.pop()[0])
            stack.pop()
            tags = "".join(f"</{n}>" for n in closed)
            repairs.append(_at(body, start, f"closed {tags} left open before </{name}>"))
            out.append(tags + token)
        else:
            repairs.append(_at(body, start, f"removed a stray </{name}> that closes nothing"))
            out.append(" " * len(token))  # blanked, so every later position stays put
    out.append(_escape_amps(body, at, len(body), repairs))
    if stack:
        tags = "".join(f"</{name}>" for name, _ in reversed(stack))
        repairs.append(
            _at(body, len(body), f"the plan ends before its elements do (cut off?): added {tags}")
        )
        out.append(tags)
    return "".join(out), repairs


def _tokens(body: str) -> Iterator[tuple[int, int, tuple[str | None, ...]]]:
    """The comments, CDATA sections, processing instructions and tags of ``body`` in order:
    (start, end, the tag's groups — closing slash, name, attributes, empty slash — or none),
    as one regular expression's finditer found them (``<!--.*?-->|<!\\[CDATA\\[.*?\\]\\]>|
    <\\?.*?\\?>|`` a tag) — in linear time: there each opener with no end after it scanned to
    the text's end, 20,000 unclosed ``<![CDATA[`` took 12 s (a planner's reply, a replan, read
    in the leader's workflow task). Here the end's absence is remembered."""
    none_after: dict[str, int] = {}  # an end not found from here: found from nowhere later
    pos = 0
    while (lt := body.find("<", pos)) >= 0:
        pos = lt + 1
        for opener, closer in _SPANS:
            if not body.startswith(opener, lt):
                continue
            begin = lt + len(opener)
            found = (
                -1 if begin >= none_after.get(closer, len(body) + 1) else body.find(closer, begin)
            )
            if found < 0:
                none_after[closer] = min(begin, none_after.get(closer, begin))
                break  # (no other opener starts so, and no tag starts with "<!" or "<?")
            yield lt, found + len(closer), _NO_TAG
            pos = found + len(closer)
            break
        else:
            m = _TAG.match(body, lt)
            if m is not None:
                yield lt, m.end(), m.groups()
                pos = m.end()


def _drop_cut_tag(text: str, repairs: list[Problem]) -> str:
    """``text`` without a tag (or attribute) it ends in the middle of."""
    body = text.rstrip()
    last_lt = body.rfind("<")
    if last_lt > body.rfind(">"):
        cut = body[last_lt:]
        shown = cut if len(cut) <= 30 else cut[:27] + "…"
        repairs.append(_at(body, last_lt, f"dropped a tag cut off mid-way: {shown!r}"))
        body = body[:last_lt]
    return body


def _escape_amps(body: str, start: int, end: int, repairs: list[Problem]) -> str:
    """The text between tags with its bare '&' and '<' escaped (each a repair)."""
    chunk = body[start:end]
    if "&" not in chunk and "<" not in chunk:
        return chunk
    if not _ENTITIES_KEPT.get():
        chunk = _html_entities(body, start, chunk, repairs)
    for m in _BARE_AMP.finditer(chunk):
        repairs.append(_at(body, start + m.start(), "escaped a bare '&' as &amp;"))
    chunk_amp = _BARE_AMP.sub("&amp;", chunk)
    if _LT_KEPT.get():
        return chunk_amp
    for m in _BARE_LT.finditer(chunk):
        repairs.append(_at(body, start + m.start(), "escaped a bare '<' as &lt;"))
    return _BARE_LT.sub("&lt;", chunk_amp)


def _html_entities(body: str, start: int, chunk: str, repairs: list[Problem]) -> str:
    """``chunk`` with the HTML entities XML does not know (``&nbsp;``, ``&mdash;``) as the
    characters they stand for — Eko's reader keeps them as text; XML refuses the plan."""

    def one(m: re.Match[str]) -> str:
        if m.group(1) in _XML_ENTITIES:
            return m.group()
        char = html.unescape(m.group())
        if char == m.group():  # no entity of HTML either: a bare '&', escaped below
            return char
        if char in _MARKUP:  # &LT; is text in Eko: as text here, never a tag
            char = _MARKUP[char]
        repairs.append(
            _at(body, start + m.start(), f"replaced the HTML entity {m.group()} by {char!r}")
        )
        return char

    return _NAMED_ENTITY.sub(one, chunk)


def may_replace_entities(text: str | bytes) -> bool:
    """Whether repairing ``text`` replaces an HTML entity (the leader asks its patch only then)."""
    raw = text.decode("utf-8", errors="replace") if isinstance(text, bytes) else text
    if not any(m.group(1) not in _XML_ENTITIES for m in _NAMED_ENTITY.finditer(raw)):
        return False
    _, repairs = repair(raw)
    return any("replaced the HTML entity" in r.message for r in repairs)


def entities_as_before_v0_11_8() -> AbstractContextManager[None]:
    """Repair as v0.11.7 and before did: an HTML entity is left as it is (the plan refused)."""
    return switched_on(_ENTITIES_KEPT)


def _at(text: str, offset: int, message: str) -> Problem:
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return Problem(f"repaired: {message}", line, column)
