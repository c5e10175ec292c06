"""Grouping a trajectory's units into drafts of atoms: one draft per *task*.

A draft is a fold over units: :meth:`Draft.add` updates a :class:`SplitState` (flags, the
behavioural signals, what the summary and tags are made of), and that state is saved in
the atom's provenance, so a later window or delta continues from it exactly as if it had
seen all the units in one go — the same bytes give the same atoms whatever the cut points.

Machine units between tasks (a compaction marker and its summary, a task start, injected
context) are *pending*: they join the next prompt's atom when that prompt starts one, and
the task in progress when it does not (or when the agent just works on), so a compaction
is never an atom of its own and never splits a task, across window and delta edges alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from xsky.skills.atoms import (
    REVERT_COMMAND,
    VERBS,
    AtomTask,
    SplitState,
    changes_files,
    containment,
    keywords,
)
from xsky.skills.followups import (
    ACK_PREFIX,
    COMPACTION_TEXT,
    Follow,
    classify,
    is_machine,
    own_part,
)
from xsky.skills.trajectory import HEAD_CHARS, MODEL_API, Unit
from xsky.skills.transcripts import SKILL_NAME

# Markers that open (or continue) a pending run: they belong to what comes next.
OPENING_MARKERS = frozenset({"compaction", "task_start", "session_start"})
QUIET_MARKERS = OPENING_MARKERS | {"branch"}


def is_person_prompt(u: Unit) -> bool:
    """A user unit that can name a task (not machine text an older adapter let through)."""
    return u.kind == "user" and not (u.origin is None and is_machine(u.head))


def _opens_pending(u: Unit) -> bool:
    return (
        u.kind == "compaction"
        or u.marker in OPENING_MARKERS
        or (u.kind == "user" and u.origin is None and bool(COMPACTION_TEXT.match(u.head)))
    )


def _quiet(u: Unit) -> bool:
    """A unit that may sit in a pending run (machine text, no activity of the agent)."""
    if u.kind in ("compaction", "meta"):
        return True
    if u.kind == "marker":
        return u.marker in QUIET_MARKERS
    return u.kind == "user" and not is_person_prompt(u)


def assume_model_prompts(units: list[Unit]) -> list[Unit]:
    """A subagent's user turns are its parent model's prompts (for views without origins)."""
    for u in units:
        if u.kind == "user" and u.origin is None and is_person_prompt(u):
            u.origin = "model"
    return units


@dataclass
class Draft:
    """An atom being built from units (new, or the trajectory's last atom being extended)."""

    units: list[Unit] = field(default_factory=list)
    extends: AtomTask | None = None
    keywords: list[str] = field(default_factory=list)
    state: SplitState = field(default_factory=SplitState)
    pending: list[Unit] = field(default_factory=list)  # the trailing run not yet placed
    from_prior: int = 0  # how many of ``pending`` came from the extended atom
    carried: list[Unit] = field(default_factory=list)  # the prior's pending, placed here now
    intent: str | None = None  # set by a model
    summary: str | None = None
    tags: list[str] | None = None
    ux_score: int | None = None
    self_reported: list[str] | None = None
    revised: bool = False  # its intent was read past a preamble after it was first set

    @property
    def completed(self) -> bool:
        return self.state.completed

    @property
    def interrupted(self) -> bool:
        return self.state.interrupted

    def has_prompt(self) -> bool:
        return self.state.has_prompt

    def has_content(self) -> bool:
        """Anything but machine units: an atom worth a file."""
        return self.extends is not None or any(not _quiet(u) for u in self.units)

    def classify(self, u: Unit) -> Follow:
        st = self.state
        head = own_part(u.head, st.last_head)
        return classify(head, u.origin, self.keywords, st.completed, st.interrupted)

    def read_past_preamble(self, head: str) -> None:
        """Read the task's intent past the lines its only prompt shares with the next prompt
        ``head``: a preamble the person pastes before each request (project rules, an
        AGENTS.md-style brief) is only seen to be one when it comes again, so the first
        request behind it — a session's first prompt — showed the preamble as its intent
        (real12). A prompt already read past the one before it is left as it is."""
        st = self.state
        if st.prompts != 1 or not st.last_head:
            return
        whole = st.last_head.strip()[:HEAD_CHARS]
        if st.intent_head != whole:  # read past a preamble already, or not the prompt's text
            return
        own = own_part(st.last_head, head)
        if own != whole:  # its words, for the task's topic and tags, are the request's too
            st.intent_head, self.revised = own, True
            words = keywords(own)
            st.words = {w: 1 for w in words if len(w) >= 4 and w not in VERBS}
            self.keywords = words[:40]

    def add(self, u: Unit) -> None:
        self.units.append(u)
        if (self.pending or _opens_pending(u)) and _quiet(u):
            self.pending.append(u)
            if u.kind == "compaction" and self.state.first_text is None:
                self.state.first_text = u.head
            return
        if self.pending:  # the agent (or the person) goes on: the run was part of this task
            for p in self.pending:  # a skill loaded in it (a bare slash command) was used here
                self._count_skill(p)
            self.carried += self.pending[: self.from_prior]
            self.pending, self.from_prior = [], 0
        self._effects(u)

    def take_pending(self) -> list[Unit]:
        """Give the trailing run to the atom a new prompt starts."""
        moved = self.pending
        in_window = len(moved) - self.from_prior
        if in_window:
            del self.units[-in_window:]
        self.pending, self.from_prior = [], 0
        return moved

    def anchored(self) -> list[Unit]:
        """The units whose raw bytes this atom holds (a trailing run is not placed yet)."""
        in_window = len(self.pending) - self.from_prior
        own = self.units[: len(self.units) - in_window] if in_window else self.units
        return self.carried + own

    def _count_skill(self, u: Unit) -> None:
        """A measured use: on the successful result (Claude Code, Codex), the call (xsky's
        read_skill) or the load of a slash command (Claude Code's meta line)."""
        st = self.state
        if u.skill and SKILL_NAME.match(u.skill) and u.skill not in st.skills:
            st.skills.append(u.skill)

    def _effects(self, u: Unit) -> None:
        st, sig = self.state, self.state.signals
        self._count_skill(u)
        if u.kind == "user":
            if not is_person_prompt(u):
                return  # machine text: no intent, no signal
            self._prompt(u)
        elif u.kind == "assistant":
            st.replied = st.completed = True
            st.api_retry = False
            st.last_answer = u.head
            if st.first_text is None:
                st.first_text = u.head
        elif u.kind == "tool_call":
            st.replied, st.completed, st.api_retry = True, False, False
            name = u.tool or "tool"
            st.tools[name] = st.tools.get(name, 0) + 1
            if not st.edited and changes_files(u.tool, u.head):
                st.edited = True
            if REVERT_COMMAND.search(u.head):
                _bump(sig, "reverted_edits")
        elif u.kind == "tool_result" and u.tool == MODEL_API:  # the turn failed: no answer
            st.completed = False
            _bump(sig, "api_errors")
        elif u.kind == "tool_result":
            st.completed = False
            if u.error:
                _bump(sig, "tool_errors")
        elif u.kind == "thinking":
            st.completed = False
        elif u.marker in ("interrupted", "aborted"):
            st.interrupted = st.person_interrupted = st.replied = True
            _bump(sig, "interrupted")
        elif u.marker == "branch":  # a rewind, an edited prompt, turns rolled back
            st.rewound, st.completed = True, False
            _bump(sig, "rewound")
        elif u.marker == "reverted":  # the person undid the agent's edits (Codex's /undo)
            _bump(sig, "reverted_edits")  # (the turn still ended: it is no open task)
        elif u.marker == "api_retry":  # the turn waits on the API: not done until it answers
            st.completed, st.api_retry = False, True
        elif u.marker == "task_complete":
            st.completed = True
            _bump(sig, "completed")
        elif u.marker == "turn_end":
            st.completed = True
        elif u.kind == "compaction" and st.first_text is None:
            st.first_text = u.head

    def _prompt(self, u: Unit) -> None:
        st, sig = self.state, self.state.signals
        text = own_part(u.head, st.last_head)  # a preamble pasted again names nothing new
        cls = self.classify(u) if st.has_prompt else "new"
        if cls == "answer":
            st.completed = False  # the turn that asked goes on
            return
        words = keywords(text)
        if cls == "correction":
            _bump(sig, "corrections")
        elif cls == "refinement":
            _bump(sig, "refinements")
        if st.last_prompt is not None and containment(words, st.last_prompt) >= 0.75:
            _bump(sig, "re_asks")
        if not st.replied:
            _bump(sig, "unanswered_prompts")
        if st.has_prompt:
            self.read_past_preamble(u.head)
        st.last_prompt, st.replied = words, False
        st.last_head = u.head
        if not st.has_prompt:
            # (a verdict on the last task before the new one — "ok good now …" — is no intent)
            ack = ACK_PREFIX.match(text) if self.extends is None else None
            st.has_prompt, st.intent_head = True, text[ack.end() :] if ack else text
            st.origin = "model" if u.origin == "model" else "person"
        st.prompts += 1
        for w in words:
            if len(w) >= 4 and w not in VERBS:
                st.words[w] = st.words.get(w, 0) + 1
        self.keywords = list(dict.fromkeys(self.keywords + words))[:40]
        st.completed = st.interrupted = False


def _bump(counts: dict[str, int], key: str) -> None:
    counts[key] = counts.get(key, 0) + 1


def fold(units: list[Unit]) -> Draft:
    """One draft holding all ``units`` (their signals and digest)."""
    d = Draft()
    for u in units:
        d.add(u)
    return d


def continuing(prior: AtomTask) -> Draft:
    """The draft that extends the trajectory's last atom, from the state saved in it."""
    p = prior.provenance
    if p.split is not None:
        state = p.split.model_copy(deep=True)
    else:  # an atom of an older version: what its provenance tells
        placeholder = prior.intent.startswith(("(no prompt)", "(agent activity", "(continued)"))
        state = SplitState(
            has_prompt=not placeholder,
            completed=p.ended == "completed",
            interrupted=p.ended == "interrupted",
            prompts=0 if placeholder else 1,
            signals=dict(p.ux_signals),
            skills=list(prior.used_skills) if p.used_skills_by == "measured" else [],
        )
    pending = [Unit.from_wire(w) for w in state.pending]
    state.pending = []
    return Draft(
        extends=prior,
        keywords=list(p.keywords),
        state=state,
        pending=pending,
        from_prior=len(pending),
    )


def starts_new_atom(u: Unit, current: Draft | None) -> bool:
    """Offline rule: does this unit begin a new atom, or continue the current one?"""
    if current is None:
        return True
    if not is_person_prompt(u) or not current.has_prompt():
        return False  # machine text names nothing; a first prompt names the task begun so far
    if current.state.rewound:  # what came before was undone: this prompt starts again
        return True
    return current.classify(u) == "new"


def _group(
    units: list[Unit], prior: AtomTask | None, starts_here: Callable[[int, Unit, Draft], bool]
) -> list[Draft]:
    drafts: list[Draft] = []
    current: Draft | None = continuing(prior) if prior is not None else None
    if current is not None:
        drafts.append(current)
    for i, u in enumerate(units):
        if current is None:
            current = Draft()
            drafts.append(current)
        elif starts_here(i, u, current):
            if is_person_prompt(u):  # the task before reads past the preamble they share
                current.read_past_preamble(u.head)
            fresh = Draft()
            # the prompt before it, so the new task reads past the preamble they share
            fresh.state.last_head = current.state.last_head
            for p in current.take_pending():  # the compaction before this prompt opens its atom
                fresh.add(p)
            current = fresh
            drafts.append(current)
        current.add(u)
    return drafts


def group_offline(units: list[Unit], prior: AtomTask | None) -> list[Draft]:
    """Split one window of units into drafts by task; the first may extend ``prior``."""
    return _group(units, prior, lambda i, u, d: starts_new_atom(u, d))


def group_at(units: list[Unit], starts: list[int], prior: AtomTask | None) -> list[Draft]:
    """Drafts that start at the given unit indexes (a model's choice). What precedes the
    first start extends ``prior``, or, when the trajectory has no atom yet, joins the first."""
    wanted = set(starts)
    # Without a prior atom, the first start joins what precedes it (unless nothing does).
    absorb = [prior is None and 0 not in wanted]

    def starts_here(i: int, u: Unit, d: Draft) -> bool:
        if i not in wanted:
            return False
        if absorb[0]:
            absorb[0] = False
            return False
        return True

    return _group(units, prior, starts_here)
