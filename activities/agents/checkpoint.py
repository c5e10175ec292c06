"""An LLM agent's conversation, checkpointed to the artifact store after every model turn.

One conversation per run and agent definition (its name: ``AgentKey.conversation``): a retried
or restarted attempt resumes from the last checkpoint instead of asking the model again.

What is saved at once (:meth:`Checkpoints.save`) and what may wait (:meth:`Checkpoints.later`):
a model's answer is paid for, so it is saved as it arrives (a retry must not pay for it again,
and the budget counts it from here); so is the mark of a call that may change something,
before it runs (exactly once, or ask: xsky/in_doubt.py). The answer of a call that may simply
run again (a read, a write to the workspace) waits for the next save — at most
``DEFERRED_SECONDS`` — since a worker lost meanwhile only costs running it again. An attempt
that ends in any way but its worker's death writes what waited (:meth:`Checkpoints.flush`).
"""

from __future__ import annotations

import json
import logging
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field
from temporalio.exceptions import ApplicationError

from activities.agents.key import AgentKey
from activities.artifacts import ArtifactStore
from xsky.artifacts import artifact_path
from xsky.plan.budget import Usage
from xsky.plan.models import WireModel
from xsky.storage import ANY_VERSION

log = logging.getLogger("xsky.agent_loop")


class Checkpoint(WireModel):
    messages: list[dict[str, Any]]
    iteration: int = 0
    tokens: int = 0
    nudges_seen: int = 0
    pending_calls: list[dict[str, Any]] = Field(default_factory=list)  # calls not yet answered
    repeats: int = 0  # identical tool calls in a row (loop detection survives restarts)
    last_call: str | None = None
    # "<model turn>:<call id>" of the call the detector counted last: run again as an attempt
    # resumes, it is not counted again (activities/agents/loop.py observed)
    last_call_at: str | None = None
    # What the conversation's model calls used, in all (budgets: activities/agents/spend.py):
    # reported as a running total under the conversation's id, so the leader counts each once.
    conversation: str = ""
    usage: Usage = Field(default_factory=Usage)
    # The dispatch spending now ("v<plan version>-d<dispatch>") and the total when it began:
    # a retry of the same dispatch (a lost worker) goes on from there, not from zero.
    share_key: str | None = None
    share_base: Usage = Field(default_factory=Usage)
    # Of the agent's steps (<nodes>), how many its model said it finished (step_done): a retry
    # resumes at the next, and the board says which it is at.
    steps_done: int = 0
    # The call that may be running: the first of ``pending_calls`` when it may change something,
    # named in the save before it starts (activities/agents/in_doubt.py). An attempt that resumes
    # to find it there knows it may have run. ``doubt_acted``: the number of the last answer
    # about it a person gave that was acted on (xsky/in_doubt.py).
    calling: str | None = None
    doubt_acted: int = 0
    # How much the server counted the conversation's input above its estimate (spend.Meter):
    # kept, so a retried attempt's first call is estimated as its last one was.
    undercount: float = 1.0
    # The dispatch ("v<plan version>-d<dispatch>") whose model gave the final answer the last
    # message holds: a retry of that dispatch completes with it (loop.py _answered); a later
    # dispatch, which only goes on from the conversation, does not — even once it saved it
    # (a reply with no answer taken back, a budget stop), under its own ``share_key``.
    answered: str | None = None
    # The attempt that saved it (a token of its own, new for each attempt): two attempts that
    # read one version and save the same next state (both resume the same approved call) write
    # different bytes, so a refused save reads back as its own only what it wrote (see _own).
    writer: str | None = None
    # Where the outcome of the dispatch that saved this is kept (its ledger's outcome key): a
    # model's final answer is saved there, with the outcome, not here (Checkpoints.fold) — the
    # attempt's one write at its end. Read through by Checkpoints.load.
    kept_at: str | None = None
    # In a conversation kept with an outcome only (fold): the version of the checkpoint its
    # attempt read or wrote last — what it follows. A load reads it in the checkpoint's place
    # only while the checkpoint is still that version: saved since, another attempt of the
    # dispatch went on beside it (a stopped one that woke, or the retry of one), and what it
    # saved — a mark of a call that must not run again, the call's answer — is what was done.
    folded_after: str | None = None


# The longest the answers of calls that may run again wait for a save: a worker lost after
# a minute of slow reads (web pages, big files) costs no more than this of them again.
DEFERRED_SECONDS = 10.0


@dataclass
class Checkpoints:
    """Where one agent's checkpoint is kept: its run's and agent's folder, under the name
    its key gives it (``AgentKey.conversation``) — and the one this attempt has not saved yet."""

    store: ArtifactStore
    key: AgentKey
    # The kept outcome of this attempt's dispatch (AttemptLedger.outcome_key), named in every
    # save: a final answer folded into it (fold) is found from the checkpoint. None: not named.
    kept_at: str | None = None
    _waiting: Checkpoint | None = field(default=None, init=False, repr=False)
    _saved_at: float = field(default_factory=time.monotonic, init=False, repr=False)
    # The version of the checkpoint this attempt read or wrote last (None: there was none);
    # its saves replace only that version (fenced: see save). ANY_VERSION until it knows one.
    _version: str | None = field(default=ANY_VERSION, init=False, repr=False)
    # This attempt's token in every state it saves (Checkpoint.writer).
    _writer: str = field(default_factory=lambda: secrets.token_hex(8), init=False, repr=False)
    # Does the checkpoint as this attempt read or wrote it last name ``kept_at``? Only then can
    # the final answer be kept in the outcome alone (fold): a load finds it from there.
    _names_kept: bool = field(default=False, init=False, repr=False)

    @property
    def name(self) -> str:
        return self.key.conversation

    @property
    def _key(self) -> str:
        return artifact_path(self.key.run_id, self.key.agent_id, self.name)

    def version(self) -> str | None:
        """The version of the checkpoint saved now (None: none is): one read."""
        try:
            return self.store.objects.get_tagged(self._key)[1]
        except FileNotFoundError:
            return None

    def load(self) -> Checkpoint | None:
        key = self._key
        try:
            data, self._version = self.store.objects.get_tagged(key)
        except FileNotFoundError:
            self._version = None
            return None
        try:
            cp = Checkpoint.model_validate_json(data)
        except ValueError as e:
            log.warning("ignoring an unreadable checkpoint %s in %s: %s", key, self.store.where, e)
            return None
        self._names_kept = self.kept_at is not None and cp.kept_at == self.kept_at
        return self._folded(cp, self._version) or cp

    def _folded(self, cp: Checkpoint, version: str | None) -> Checkpoint | None:
        """The conversation the kept outcome ``cp`` names carries, when its dispatch's attempt
        kept it there with its final answer (fold): newer than ``cp``, which that attempt read
        or wrote last and did not save again. (A save after it comes from a later dispatch,
        which names its own kept outcome.) None when there is none (one GET, on a resume), or
        when the checkpoint was saved since the conversation kept followed it (``version`` is
        not its ``folded_after``): the fold does not move the checkpoint's version, so neither
        refuses the other — a stopped attempt's late fold after its retry saved, or its late
        saves after its retry folded — and the checkpoint holds what the calls did."""
        if not cp.kept_at:
            return None
        try:
            kept = json.loads(self.store.objects.get(cp.kept_at))
        except FileNotFoundError:
            return None
        except ValueError:
            return None
        carried = kept.get("checkpoint") if isinstance(kept, dict) else None
        if not isinstance(carried, dict):
            return None  # an outcome kept without it (a question, an older worker)
        try:
            folded = Checkpoint.model_validate(carried)
        except ValueError as e:
            log.warning("ignoring the conversation kept in %s: %s", cp.kept_at, e)
            return None
        if folded.folded_after is None or folded.folded_after != version:
            log.warning(
                "the checkpoint %s was saved since the conversation kept in %s: read instead",
                self._key,
                cp.kept_at,
            )
            return None
        return folded

    def save(self, cp: Checkpoint) -> None:
        """Saved now (anything that waited goes with it: ``cp`` is the newest state).

        Fenced: written only over the version this attempt read or wrote last, the store
        deciding (S3's If-Match; the same single PUT). A stopped attempt's save that the store
        held (a slow PUT obstore retries for minutes) arrives after the next attempt read and
        saved: it is refused, not landed over the newer conversation (which the attempt after
        would have read back as older — its answers paid again, its marks of calls that may
        have run lost). An attempt that finds its checkpoint written by another since it read
        it ends (CheckpointMoved, retried): the next goes on from the newest."""
        cp.writer = self._writer
        cp.kept_at, cp.folded_after = self.kept_at, None
        data = cp.model_dump_json().encode("utf-8")
        self._waiting = None
        self._saved_at = time.monotonic()
        written = self.store.objects.put_if(self._key, data, self._version)
        if written is None:
            written = self._own(data)
        self._version = written
        self._names_kept = self.kept_at is not None

    def _own(self, data: bytes) -> str:
        """The version tag of ``data`` when the store holds it (a save that landed, whose
        answer was lost and which the store's client sent again, is refused by its own
        condition: one read, on that path only); else CheckpointMoved."""
        try:
            there, version = self.store.objects.get_tagged(self._key)
        except FileNotFoundError:
            there, version = None, None
        if there == data and version is not None:
            return version
        log.warning(
            "the checkpoint %s in %s was written by another attempt since this one read it: "
            "this attempt's save is refused",
            self._key,
            self.store.where,
        )
        raise ApplicationError(
            f"the conversation of {self.key.task_id} was saved by another attempt since this "
            "one read it (a stopped attempt's late write, or two at once): this attempt ends "
            "without saving over it, and the next goes on from the newest",
            type="CheckpointMoved",
            non_retryable=False,
        )

    @property
    def foldable(self) -> bool:
        """Can the final answer be kept in the outcome alone (fold)? Only where the checkpoint
        as saved names that outcome — this dispatch saved it (or read it so) before: else a
        load would find the checkpoint of before, or none, and go on from there."""
        return self._names_kept

    def fold(self, cp: Checkpoint) -> bytes:
        """The conversation with its final answer, to be kept in the dispatch's outcome
        instead of saved here (AttemptLedger.complete): that one write keeps both. What
        waited goes with it. The saved checkpoint names the outcome (``kept_at``), so
        :meth:`load` finds it there; should the outcome not be kept, the attempt saves it
        here after all (the loop's ``_fold``)."""
        cp.kept_at, cp.writer = self.kept_at, self._writer
        cp.folded_after = self._version  # (known: foldable)
        self._waiting = None
        return cp.model_dump_json().encode("utf-8")

    def unfold(self, cp: Checkpoint) -> None:
        """The folded conversation was not kept with the outcome (the store refused it, the
        attempt was stopped): saved with the next save, or as the attempt ends (flush)."""
        self._waiting = cp

    def later(self, cp: Checkpoint) -> None:
        """Saved with the next save, or now when the last was ``DEFERRED_SECONDS`` ago."""
        if time.monotonic() - self._saved_at >= DEFERRED_SECONDS:
            self.save(cp)
        else:
            self._waiting = cp

    def flush(self) -> None:
        """Save what waits, if anything: the attempt ends (failed, stopped, cancelled)."""
        if self._waiting is not None:
            self.save(self._waiting)
