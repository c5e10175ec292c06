"""A stopped attempt's late checkpoint save never lands over a newer attempt's (chaos10, chaos11).

A save the store holds (a slow S3 PUT, which obstore retries for minutes) outlives its attempt:
the attempt is stopped, waits ``CANCELLED_WAIT`` for the write and ends; the next attempt reads
the older checkpoint and saves further; then the held write arrives. Unfenced, it landed over
the newer one (the next read returned the stopped attempt's turn: the newer answers and usage
gone). Saves are written only over the version their attempt read or wrote last, the store
deciding (S3's If-Match; a digest under a lock on a local disk): the late one is refused.

On the local directory and on S3 (moto), with the real ``Checkpoints`` and ``patiently``."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from activities.agents import storage
from activities.agents.checkpoint import Checkpoint, Checkpoints
from activities.agents.key import AgentKey
from activities.artifacts import ArtifactStore
from activities.storage.s3 import S3Store
from tests.counting_store import CountingStore
from tests.s3server import S3Server, s3_server
from xsky.storage import StoreLocation


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with s3_server() as server:
        yield server


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    made = ArtifactStore(tmp_path / "artifacts")
    if request.param == "s3":
        server: S3Server = request.getfixturevalue("s3")
        env = server.env(server.bucket(f"b-{uuid.uuid4().hex[:12]}"))
        for name, value in env.items():
            if name.startswith("AWS_"):
                monkeypatch.setenv(name, value)
        made.objects = S3Store(StoreLocation(env["XSKY_STORE"]), env["AWS_ENDPOINT_URL"])
    return made


class Beat:
    def progress(self, note: str) -> None:
        pass

    async def flush(self) -> None:
        pass

    @contextlib.asynccontextmanager
    async def running(self):
        yield


class Held:
    """The store behind, whose next write is held until its gate opens (one slow PUT)."""

    def __init__(self, inner: Any):
        self.inner, self.gate = inner, None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _held(self) -> None:
        gate, self.gate = self.gate, None
        if gate is not None:
            gate.wait(10)

    def put(self, key: str, data: bytes, **kw: Any) -> None:
        self._held()
        self.inner.put(key, data, **kw)

    def put_if(self, key: str, data: bytes, tag: str | None) -> str | None:
        self._held()
        return self.inner.put_if(key, data, tag)


KEY = AgentKey(run_id="r", agent_id="1", task_id="T-1", checkpoint="checkpoint-x.json")
MSGS = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]


def turn(cp: Checkpoint, text: str) -> Checkpoint:
    messages = [*cp.messages, {"role": "assistant", "content": text}]
    return Checkpoint(messages=messages, iteration=cp.iteration + 1, tokens=cp.tokens + 15)


async def test_a_stopped_attempts_late_save_does_not_land_over_the_next_attempts(
    store: ArtifactStore, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(storage, "CANCELLED_WAIT", 0.3)
    held = Held(store.objects)
    store.objects = held
    a = Checkpoints(store, KEY)  # attempt A: its first turn saved
    a.save(Checkpoint(messages=MSGS, iteration=1, tokens=15))
    a_cp = turn(a.load() or Checkpoint(messages=MSGS), "A's turn 2")
    gate = threading.Event()
    held.gate = gate
    saving = asyncio.ensure_future(
        storage.patiently(Beat(), "the store", "the checkpoint", lambda: a.save(a_cp))
    )
    await asyncio.sleep(0.2)
    saving.cancel()  # A is stopped (a timeout, a pause) while its save is held
    with contextlib.suppress(asyncio.CancelledError):
        await saving
    b = Checkpoints(store, KEY)  # attempt B reads turn 1 and goes on
    loaded = b.load()
    assert loaded is not None and loaded.iteration == 1
    b_cp = turn(turn(loaded, "B's turn 2"), "B's turn 3")
    b.save(b_cp)
    gate.set()  # A's PUT gets through at last
    await asyncio.sleep(0.5)
    now = Checkpoints(store, KEY).load()
    assert now is not None
    assert now.iteration == 3 and now.messages[-1]["content"] == "B's turn 3"


def test_an_attempt_whose_checkpoint_was_written_since_it_read_it_ends_without_saving(
    store: ArtifactStore,
):
    Checkpoints(store, KEY).save(Checkpoint(messages=MSGS, iteration=1))
    b = Checkpoints(store, KEY)
    base = b.load()
    assert base is not None
    late = Checkpoints(store, KEY)  # another attempt's save lands between B's read and save
    late.load()
    late.save(turn(base, "the other's turn"))
    with pytest.raises(ApplicationError) as moved:
        b.save(turn(base, "B's turn"))
    assert moved.value.type == "CheckpointMoved" and not moved.value.non_retryable
    now = Checkpoints(store, KEY).load()
    assert now is not None and now.messages[-1]["content"] == "the other's turn"


def test_a_save_the_store_took_and_was_sent_again_is_its_own(store: ArtifactStore):
    # A PUT that landed but whose answer was lost is sent again by the store's client: its
    # own condition refuses it. The attempt reads what is there: its own bytes, it goes on.
    cps = Checkpoints(store, KEY)
    cps.save(Checkpoint(messages=MSGS, iteration=1))
    cp = turn(Checkpoint(messages=MSGS, iteration=1), "turn 2")
    inner = store.objects
    real = inner.put_if

    def landed_then_refused(key: str, data: bytes, tag: str | None) -> str | None:
        real(key, data, tag)
        return real(key, data, tag)  # the retry: refused by its own write

    store.objects = type("Once", (), {"__getattr__": lambda s, n: getattr(inner, n)})()
    store.objects.put_if = landed_then_refused  # type: ignore[attr-defined]
    cps.save(cp)
    store.objects = inner
    cps.save(turn(cp, "turn 3"))  # and its version is known: the next save goes through
    now = Checkpoints(store, KEY).load()
    assert now is not None and now.iteration == 3


def test_a_save_costs_one_write_and_a_load_one_read(store: ArtifactStore):
    counting = CountingStore(store.objects)
    store.objects = counting
    cps = Checkpoints(store, KEY)
    cps.save(Checkpoint(messages=MSGS, iteration=1))
    cps.save(turn(Checkpoint(messages=MSGS, iteration=1), "turn 2"))
    assert counting.writes == 2 and counting.reads == 0
    assert Checkpoints(store, KEY).load() is not None
    assert counting.reads == 1


def test_two_attempts_that_save_the_same_state_are_not_both_taken_for_its_writer(
    store: ArtifactStore,
):
    # Two attempts of one dispatch (one paused past its heartbeat timeout, and its retry) read
    # one version and mark the same call of it as about to run (an approved call both resume):
    # the same state. The retry's save lands and it runs the call; the paused one's save is
    # refused — and must not be read back as its own retried write (the bytes there are the
    # same state), or it runs the call a second time (chaos12).
    call = {"id": "call_1", "name": "shell", "arguments": '{"command": "touch x"}'}
    Checkpoints(store, KEY).save(
        Checkpoint(messages=MSGS, iteration=1, pending_calls=[call], share_key="v1-d2")
    )
    paused, retry = Checkpoints(store, KEY), Checkpoints(store, KEY)
    mine, theirs = paused.load(), retry.load()
    assert mine is not None and theirs is not None
    for cp in (mine, theirs):
        cp.calling = "call_1"
    retry.save(theirs)
    with pytest.raises(ApplicationError) as moved:
        paused.save(mine)
    assert moved.value.type == "CheckpointMoved"


def _fold_setup(store: ArtifactStore) -> tuple[Any, AgentKey, Any]:
    from activities.agents.ledger import AttemptLedger

    key = AgentKey(run_id="r", agent_id="1", task_id="T-1", checkpoint="checkpoint-f.json")
    ledger = AttemptLedger.of(store.objects, key)
    later = AgentKey(
        run_id="r", agent_id="1", task_id="T-1", dispatch=2, checkpoint="checkpoint-f.json"
    )
    return ledger, key, AttemptLedger.of(store.objects, later)


def test_a_stopped_attempts_late_fold_does_not_hide_what_its_retry_saved(store: ArtifactStore):
    # review16: attempt 1 saved turn 1 and was stopped; its retry read it, marked a call that
    # must not run again, ran it and saved its answer; attempt 1 woke and kept its final answer
    # in the outcome (fold: create-only, the checkpoint's fence not asked). A later dispatch
    # read that stale conversation in the checkpoint's place: the call that ran was gone. And
    # the next attempt of the dispatch (the retry lost) returned attempt 1's result, which never
    # saw the call that ran: it goes on from the checkpoint instead.
    from activities.agents.activity import _kept_unless_passed
    from xsky.runs import AgentOutcome

    ledger, key, later = _fold_setup(store)
    stopped = Checkpoints(store, key, kept_at=ledger.outcome_key)
    first = Checkpoint(messages=MSGS, iteration=1)
    stopped.save(first)
    retry = Checkpoints(store, key, kept_at=ledger.outcome_key)
    cp = retry.load()
    assert cp is not None
    cp.pending_calls, cp.calling = [{"id": "X", "name": "pay", "arguments": "{}"}], "X"
    retry.save(cp)
    cp.messages = [*cp.messages, {"role": "tool", "tool_call_id": "X", "content": "paid"}]
    cp.pending_calls, cp.calling = [], None
    retry.save(cp)
    assert stopped.foldable
    late = turn(first, "the stopped attempt's answer")
    ledger.complete(1, AgentOutcome(result="late"), b"", stopped.fold(late))
    now = Checkpoints(store, key, kept_at=later.outcome_key).load()
    assert now is not None and now.messages[-1]["content"] == "paid"
    assert ledger.outcome() is not None and ledger.outcome().result == "late"  # (it is kept)
    assert _kept_unless_passed(ledger, store, key) is None


def test_a_conversation_folded_over_the_checkpoint_is_read_through_it(store: ArtifactStore):
    # ... while a fold that follows the checkpoint as saved is read in its place (S3's ETags,
    # a local digest: the version its attempt knew is the one a load reads), and a retry whose
    # predecessor's report was lost returns its kept outcome.
    from activities.agents.activity import _kept_unless_passed
    from xsky.runs import AgentOutcome

    ledger, key, later = _fold_setup(store)
    cps = Checkpoints(store, key, kept_at=ledger.outcome_key)
    cps.save(Checkpoint(messages=MSGS, iteration=1))
    resumed = Checkpoints(store, key, kept_at=ledger.outcome_key)
    cp = resumed.load()
    assert cp is not None and resumed.foldable
    final = turn(cp, "final")
    ledger.complete(2, AgentOutcome(result="final"), b"", resumed.fold(final))
    now = Checkpoints(store, key, kept_at=later.outcome_key).load()
    assert now is not None and now.messages[-1]["content"] == "final"
    returned = _kept_unless_passed(ledger, store, key)
    assert returned is not None and returned.result == "final"
