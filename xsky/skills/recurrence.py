"""Recurring work: whether two atoms are the same *kind* of task, not only similar words.

A kind of task shows in three things: the request with its particulars taken out (a bead,
issue or ticket id, a number, a path: "Work on bead xsky-12" and "Work on bead xsky-40" ask
the same), the steps the agent took (which tools, in what proportion), and how it ended
(completed, interrupted, with failed calls). Two atoms are the same kind when their requests
share enough words **and** their steps look alike **and** they ended alike — two prompts that
share "analyze" and "sessions" but one ran scripts over logs and the other edited a web app
are not one skill.

The bars were tuned on data (bench/recurrence.py, figures in its output): the labelled corpus
(26 tasks of 9 sessions, none recurring), four "work on bead" sessions (one recurring kind)
and an unrelated pair that shares words ("analyze … sessions").
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

from xsky.skills.atoms import AtomTask, keywords

TEXT_MIN = 0.3  # request words in common (over the shorter request's, particulars removed)
STEPS_MIN = 0.5  # tool-use profile in common (weighted Jaccard)
KIND_MIN = 0.55  # the combined similarity a founding match needs
_PARTICULAR = re.compile(r"\d|^[a-z]+-[a-z0-9]{2,}$")  # ids and numbers
_PATH = re.compile(r"\S+/\S+|\S+\.[A-Za-z]{1,5}\b")  # paths and file names


class Shape(BaseModel):
    """An atom's kind of task, by reference-free facts (kept with a seed)."""

    model_config = ConfigDict(extra="ignore")
    request: list[str] = Field(default_factory=list)
    tools: dict[str, int] = Field(default_factory=dict)
    ended: str = "open"  # completed | interrupted | open
    failed_calls: bool = False


def request_words(text: str) -> list[str]:
    """The request's words without its particulars (ids, numbers, paths, file names)."""
    return [w for w in keywords(_PATH.sub(" ", text)) if not _PARTICULAR.search(w)]


def shape_of(atom: AtomTask) -> Shape:
    p = atom.provenance
    tools = dict(p.split.tools) if p.split is not None else {}
    if not tools:  # an atom of an older version: its summary names the tools
        m = re.search(r"tool calls \(([^)]*)\)", atom.summary)
        for part in m.group(1).split(", ") if m else []:
            name, _, n = part.partition(" ×")
            tools[name.strip()] = int(n) if n.isdigit() else 1
    ended = "completed" if p.ux_signals.get("completed") else p.ended
    return Shape(
        request=request_words(atom.intent),
        tools=tools,
        ended=ended,
        failed_calls=p.ux_signals.get("tool_errors", 0) > 0,
    )


def text_similarity(a: Shape, b: Shape) -> float:
    """The words in common over the shorter request's (the overlap coefficient), not over
    both (Jaccard): an intent is cut to its first sentences, so of two requests of one kind
    one may hold only the opening ("Work on bead xsky-31: show the queue depth …") while the
    other goes on ("… Read the bead with bd show, implement it, run the tests …")."""
    sa, sb = set(a.request), set(b.request)
    return len(sa & sb) / min(len(sa), len(sb)) if sa and sb else 0.0


def steps_similarity(a: Shape, b: Shape) -> float:
    """Weighted Jaccard of the tool-use profiles (shares of calls); two atoms without any
    tool call are alike (both were answered in words)."""
    if not a.tools and not b.tools:
        return 1.0
    ta, tb = sum(a.tools.values()) or 1, sum(b.tools.values()) or 1
    names = set(a.tools) | set(b.tools)
    low = sum(min(a.tools.get(n, 0) / ta, b.tools.get(n, 0) / tb) for n in names)
    high = sum(max(a.tools.get(n, 0) / ta, b.tools.get(n, 0) / tb) for n in names)
    return low / high if high else 0.0


def outcome_similarity(a: Shape, b: Shape) -> float:
    return (0.5 if a.ended == b.ended else 0.0) + (0.5 if a.failed_calls == b.failed_calls else 0.0)


def kind_similarity(a: Shape, b: Shape) -> float:
    """0–1: half the request, three tenths the steps, a fifth the outcome."""
    return round(
        0.5 * text_similarity(a, b) + 0.3 * steps_similarity(a, b) + 0.2 * outcome_similarity(a, b),
        3,
    )


def same_kind(
    a: Shape,
    b: Shape,
    text_min: float = TEXT_MIN,
    steps_min: float = STEPS_MIN,
    kind_min: float = KIND_MIN,
) -> bool:
    """Whether two atoms are the same kind of task: every part over its bar."""
    return (
        text_similarity(a, b) >= text_min
        and steps_similarity(a, b) >= steps_min
        and kind_similarity(a, b) >= kind_min
    )


def explain(a: Shape, b: Shape) -> str:
    return (
        f"request {text_similarity(a, b):.2f} (≥ {TEXT_MIN}), steps {steps_similarity(a, b):.2f} "
        f"(≥ {STEPS_MIN}), outcome {outcome_similarity(a, b):.2f}; kind {kind_similarity(a, b):.2f} "
        f"(≥ {KIND_MIN})"
    )
