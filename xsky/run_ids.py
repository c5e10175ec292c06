"""A run's default id: short enough to type and to tell apart in `list`, named for what the
run does — ``xsky-<slug>-<6 hex>``, the slug from the plan's ``taskId``, or its name when
the plan had none (the parser gives such a plan a uuid, which says nothing to a person), or
the first words of a request. Six random hex digits keep every start a run (and a workspace)
of its own; a start that draws an id already taken draws again (client/handle.py)."""

from __future__ import annotations

import difflib
import re
import secrets
import unicodedata

# A taskId the parser made up for a plan without one (xsky/plan/xml.py: uuid4).
MADE_UP = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
NOT_WORD = re.compile(r"[^a-z0-9]+")
MAX_SLUG = 32  # with "xsky-" and "-abc123": at most 44 characters, one column in `list`
FALLBACK = "run"  # a name of no Latin letters or digits at all


def slug(text: str, limit: int = MAX_SLUG) -> str:
    """``Count the words of a note!`` → ``count-the-words-of-a-note``: lower-case ASCII words
    joined by ``-``, cut at a word boundary to at most ``limit`` characters ("" for none)."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    words = NOT_WORD.sub("-", ascii_text.lower()).strip("-")
    if len(words) <= limit:
        return words
    cut = words[:limit]
    # a whole word rather than half of one, unless the first word alone is longer than the limit
    return (cut.rsplit("-", 1)[0] if "-" in cut and words[limit] != "-" else cut).strip("-")


def run_id_base(task_id: str | None, name: str | None) -> str:
    """What a run's default id is named for: the taskId a person gave, else the plan's name."""
    given = (task_id or "").strip()
    for text in (given if given and not MADE_UP.fullmatch(given) else "", name or ""):
        # "xsky-nightly" need not become "xsky-xsky-nightly-…"
        words = slug(text).removeprefix("xsky-")
        if words:
            return words
    return FALLBACK


def default_run_id(task_id: str | None, name: str | None, suffix: str | None = None) -> str:
    """``xsky-<slug>-<6 hex>`` (``suffix``: the hex part, for tests)."""
    return f"xsky-{run_id_base(task_id, name)}-{suffix or secrets.token_hex(3)}"


def near_run_ids(run_id: str, ids: list[str], *, parts: bool = True, most: int = 2) -> list[str]:
    """The ids of ``ids`` (recent runs') close to a mistyped ``run_id``, letters' case aside
    (walk11: `status MY-FIRST-RUN` suggested nothing): a near spelling, or with ``parts`` the id
    the text ends or is part of (`my-first-run`, `slow-2adde3`, `2adde3`: five characters or
    more after any `xsky-`)."""
    by_lower: dict[str, str] = {}
    for i in ids:
        by_lower.setdefault(i.lower(), i)
    typed = run_id.strip().lower()
    close = [by_lower[c] for c in difflib.get_close_matches(typed, list(by_lower), most, 0.8)]
    if parts and len(typed.removeprefix("xsky-")) >= 5:
        close += [i for i in by_lower.values() if typed in i.lower() and i not in close][:most]
    return close[:most]
