"""The text a model-driven agent is given from its dependencies' results, and its scaffolding.

:mod:`xsky.leader.dep_context` writes it: a heading, then each dependency's result under a
label that says which task it came from (``[T-1 · browser · Read the page]``), a long one cut
with a note of how much more there is. A model reads the labels as the metadata they are;
the offline provider, which answers by picking sentences, must not pick them as content
(:func:`content`): its answer is made of what the dependencies found, never of the product's
own labels and notes.
"""

from __future__ import annotations

import re

HEADING = "Results of the steps this task depends on:"
NO_RESULT = "(no result)"  # a dependency that ended with nothing to pass on


def label(task_id: str, kind: str, subject: str) -> str:
    """The line naming the dependency whose result follows."""
    return f"[{task_id} · {kind} · {subject}]"


_LABEL_LINE = re.compile(r"^\[T-[^\]\n·]+ · [^\]\n·]+ · [^\n]*\]$")
# The notes a cut result ends with: dep_context's and a stored result's head (activities/artifacts).
_CUT_NOTE = re.compile(r"^… \(\d+ more characters (?:not shown|in \S+)\)$")


def content(text: str) -> str:
    """``text`` without the heading, the labels and the cut notes: what the dependencies said."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != HEADING:
        return text
    kept: list[str] = []
    for line in lines[1:]:
        bare = line.strip()
        if _LABEL_LINE.match(bare):
            kept.append("")  # a label ends one result: the next is a paragraph of its own
        elif not _CUT_NOTE.match(bare) and bare != NO_RESULT:
            kept.append(line)
    return "\n".join(kept).strip()
