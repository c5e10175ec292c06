"""Find the plan in an LLM reply: the ``<workflow>`` element (or Eko's ``<root>``) inside chatty
or cut-off output.

A planning concern, not the format's: :mod:`xsky.plan.xml` parses what this finds, and
raises on what is still wrong with line and column.
"""

from __future__ import annotations

import re

from xsky.errors import Problem, WorkflowXMLError

# A fence closes at a line that begins with ``` (as Markdown's does): backticks inside the
# plan's text (a description quoting a fence) do not cut it short.
_FENCE_RE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:\n[ \t]*```|\Z)", re.S)
_OPEN_RE = re.compile(r"<workflow(?=[\s>/])")
_EKO_RE = re.compile(r"<root(?=[\s>])")
_ROOT_ELEMENT_RE = re.compile(r"<root(?:\s[^<>]*)?>\s*<[A-Za-z!?]")
# Only a closed block: a "<think>" said in prose, or one never closed, would blank the plan.
_THINKING_RE = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.S | re.I)
_TAG_RE = re.compile(r"<(/?)([A-Za-z_][\w:.-]*)((?:\"[^\"]*\"|'[^']*'|[^'\">])*?)(/?)>")


def extract_workflow_xml(text: str) -> str:
    """Find the ``<workflow>`` in chatty LLM output.

    Handles code fences, prose before and after, a ``<workflow>`` mentioned in prose
    before the real one, and a reply cut off mid-line (the partial line is dropped and
    open elements are closed, so what remains parses or fails with a precise error).
    """
    if not isinstance(text, str) or not text.strip():
        raise WorkflowXMLError(
            [Problem("the reply is empty: it holds no <workflow> element", 1, 1)]
        )
    # A reasoning model's thinking may sketch the format ("answer as <root>…</root>"): the plan
    # is in what it answers, not in what it thought (blanked, so positions stay put).
    text = _THINKING_RE.sub(lambda m: " " * len(m.group()), text)
    fenced = [body for _, body in _FENCE_RE.findall(text) if _OPEN_RE.search(body)]
    for body in fenced:
        found = _first_workflow(body)
        if found is not None:
            return found
    found = _first_workflow(text)
    if found is not None:
        return found
    # An Eko-form reply (<root>…): taken as Eko takes it, from <root> to </root> or to the end
    # when cut off; the Eko reader (xsky.plan.eko) repairs it, saying what it changed.
    for body in [b for _, b in _FENCE_RE.findall(text) if _EKO_RE.search(b)] + [text]:
        starts = [m.start() for m in _EKO_RE.finditer(body) if "<agent" in body[m.start() :]]
        # A <root> said in prose ("I answer in the <root> format") holds words, not elements:
        # the plan's own is the first whose start tag is followed by an element.
        planned = [at for at in starts if _ROOT_ELEMENT_RE.match(body, at)]
        # A model that corrects itself ("wait, agent 2 must come first:") answers with its
        # last whole plan: the last <root>…</root> that holds agents.
        whole = [
            at
            for at in planned
            if (end := body.find("</root>", at)) >= 0 and "<agent" in body[at:end]
        ]
        start = whole[-1] if len(whole) > 1 else planned[0] if planned else -1
        if start < 0:
            start = starts[0] if starts else -1
        if start >= 0:
            end = body.find("</root>", start)
            return body[start : end + len("</root>")] if end >= 0 else body[start:].rstrip()
    raise WorkflowXMLError(
        [
            Problem(
                "no <workflow> (nor Eko's <root>) element was found in the reply; answer with "
                "<workflow …> … </workflow>",
                1,
                1,
            )
        ]
    )


def _first_workflow(text: str) -> str | None:
    starts = [m.start() for m in _OPEN_RE.finditer(text)]
    for start in starts:
        end = _matching_close(text, start)
        if end is not None and "<agent" in text[start:end]:
            return text[start:end]
    # No complete plan: the reply was cut off. The real opening tag is the last
    # `<workflow` before the first `<agent` (earlier ones are prose mentioning it).
    first_agent = text.find("<agent", starts[0]) if starts else -1
    if first_agent < 0:
        return None
    start = max(s for s in starts if s < first_agent)
    return _repair_truncated(text[start:])


def _matching_close(text: str, start: int) -> int | None:
    depth = 0
    for m in re.finditer(r"<workflow(?=[\s>/])|</workflow\s*>", text[start:]):
        if m.group().startswith("</"):
            depth -= 1
            if depth == 0:
                return start + m.end()
        else:
            depth += 1
    return None


def _repair_truncated(fragment: str) -> str:
    """Close a plan cut off mid-reply: drop the partial last line, close open tags."""
    lines = fragment.rstrip().split("\n")
    if len(lines) > 1 and not lines[-1].rstrip().endswith(">"):
        lines.pop()
    body = "\n".join(lines).rstrip()
    # A dangling "<tag" or "</ta" at the very end cannot be closed; cut it.
    last_lt, last_gt = body.rfind("<"), body.rfind(">")
    if last_lt > last_gt:
        body = body[:last_lt].rstrip()
    stack: list[str] = []
    for m in _TAG_RE.finditer(body):
        closing, name, _, selfclosing = m.groups()
        if selfclosing:
            continue
        if closing:
            if name in stack:
                while stack and stack.pop() != name:
                    pass
        else:
            stack.append(name)
    return body + "".join(f"</{name}>" for name in reversed(stack))
