"""When a model agent's conversation is saved (activities/agents/checkpoint.py): a model's
answer at once (paid for: a retry must not pay again), the mark of a call that may change
something before it runs, and the answer of a call that may not run again unasked; the
answers of calls that may simply run again wait for the next save — and are saved when the
attempt ends any other way than its worker's death.

Through the ``run_agent`` activity itself (the SDK's ActivityEnvironment: no server), a
scripted OpenAI-compatible server (tests/fake_llm.py) and a store that counts its calls."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from activities.agents import checkpoint
from activities.agents.activity import AgentActivities
from activities.agents.checkpoint import Checkpoints
from activities.agents.key import AgentKey
from tests.counting_store import CountingStore
from tests.fake_llm import FakeLLM, Reply, calls, status, text, turn_of
from tests.unit.attempt_runner import run
from tests.unit.test_store_ops import settings_env
from xsky.config import load_settings
from xsky.plan.models import WorkflowAgent
from xsky.runs import AgentInput

READS = [("file_read", {"path": f"n{i}.txt"}) for i in range(3)]


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    server = FakeLLM()
    yield server
    server.close()


@pytest.fixture
def acts(tmp_path: Path, fake: FakeLLM) -> Iterator[AgentActivities]:
    env = settings_env(tmp_path, {"XSKY_MODEL": "fake-model", "OPENAI_BASE_URL": fake.base_url})
    made = AgentActivities(load_settings(env))
    made.store.objects = CountingStore(made.store.objects)
    yield made
    asyncio.run(made.close())


def agent_input(config: dict[str, Any] | None = None) -> AgentInput:
    agent = WorkflowAgent(id="a1", name="file", task="read the notes", config=config)
    return AgentInput(run_id="run-1", task_id="T-1", agent=agent)


def saves(acts: AgentActivities) -> int:
    """The conversation's saves: in its checkpoint, or, with its final answer, in the outcome
    kept (Checkpoints.fold: one write for both)."""
    store = acts.store.objects
    assert isinstance(store, CountingStore)
    return sum(
        1
        for name, key in store.log
        if name == "put" and ("checkpoint-" in key or key.endswith(".outcome.json"))
    )


def puts(acts: AgentActivities) -> list[str]:
    store = acts.store.objects
    assert isinstance(store, CountingStore)
    return [key for name, key in store.log if name in ("put", "put_if")]


def stored(acts: AgentActivities, inp: AgentInput) -> checkpoint.Checkpoint:
    cp = Checkpoints(acts.store, AgentKey.of(inp)).load()
    assert cp is not None
    return cp


def answers(cp: checkpoint.Checkpoint) -> list[str]:
    return [m["tool_call_id"] for m in cp.messages if m.get("role") == "tool"]


async def test_the_answers_of_reads_wait_for_the_next_save(acts: AgentActivities, fake: FakeLLM):
    inp = agent_input()
    seen: list[tuple[list[str], int]] = []  # what the store holds as the model is asked again

    def scripted(request: dict[str, Any], index: int) -> Reply:
        if turn_of(request) == 0:
            return calls(*READS)
        cp = stored(acts, inp)
        seen.append((answers(cp), len(cp.pending_calls)))
        return text("read them all")

    fake.responder = scripted
    outcome = await run(acts, inp)
    assert outcome.kind == "completed" and outcome.result == "read them all"
    # A worker lost during the second model call would leave the three reads pending: a retry
    # reads them again, and does not ask the model for them again.
    assert seen == [([], 3)]
    # saved as the calls were asked for, and with the answer: not once per read
    assert saves(acts) == 2
    assert len(answers(stored(acts, inp))) == 3


async def test_every_answer_is_saved_once_the_wait_is_up(
    acts: AgentActivities, fake: FakeLLM, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(checkpoint, "DEFERRED_SECONDS", 0.0)
    fake.responder = lambda req, i: calls(*READS) if turn_of(req) == 0 else text("done")
    outcome = await run(acts, agent_input())
    assert outcome.kind == "completed"
    assert saves(acts) == 2 + len(READS)


async def test_the_answer_of_a_call_that_may_not_run_again_is_saved_at_once(
    acts: AgentActivities, fake: FakeLLM
):
    # "idempotent": false — the agent's own calls that change something may not run again
    # unasked: its write is marked before it runs and its answer saved as it ends.
    inp = agent_input({"idempotent": False})
    held: list[tuple[list[str], str | None]] = []

    def scripted(request: dict[str, Any], index: int) -> Reply:
        if turn_of(request) == 0:
            return calls(("file_write", {"path": "out.txt", "content": "x"}), READS[0])
        cp = stored(acts, inp)
        held.append((answers(cp), cp.calling))
        return text("wrote it")

    fake.responder = scripted
    outcome = await run(acts, inp)
    assert outcome.kind == "completed"
    # the write's answer (and its mark cleared) was saved; the read's waited
    assert len(held) == 1 and len(held[0][0]) == 1 and held[0][1] is None
    assert saves(acts) == 3  # the calls asked for (the write marked), the write's answer, the end


async def test_an_attempt_that_fails_saves_what_waited(acts: AgentActivities, fake: FakeLLM):
    inp = agent_input()
    fake.responder = lambda req, i: (
        calls(*READS) if turn_of(req) == 0 else status(400, "this model cannot go on")
    )
    with pytest.raises(ApplicationError):
        await run(acts, inp)
    cp = stored(acts, inp)
    # a retry or the next dispatch goes on from the three answers, not the three reads
    assert len(answers(cp)) == 3 and cp.pending_calls == []


async def test_a_store_that_fails_the_last_save_leaves_the_attempts_own_error(
    acts: AgentActivities, fake: FakeLLM, monkeypatch: pytest.MonkeyPatch
):
    # An S3 store's errors are not OSErrors: whatever the store raises as the attempt ends,
    # the attempt's failure is the model's, not the store's.
    class StoreDown(Exception):
        pass

    def refused(self: Checkpoints) -> None:
        raise StoreDown("the store is down")

    monkeypatch.setattr(Checkpoints, "flush", refused)
    fake.responder = lambda req, i: (
        calls(*READS) if turn_of(req) == 0 else status(400, "this model cannot go on")
    )
    with pytest.raises(ApplicationError) as failed:
        await run(acts, agent_input())
    assert "StoreDown" not in str(failed.value) and "store is down" not in str(failed.value)
    assert "this model cannot go on" in str(failed.value)


async def test_a_retry_after_the_final_answer_was_saved_completes_with_it_unasked(
    acts: AgentActivities, fake: FakeLLM, monkeypatch: pytest.MonkeyPatch
):
    # A worker lost after the model's final answer was saved, before the attempt reported: the
    # retry of the same dispatch has the paid answer in its checkpoint — it completes with it.
    # Asked again, the model paid a second time and could answer otherwise than the first.
    from activities.agents import loop

    class Lost(BaseException):  # the worker's death: no handler of the attempt's catches it
        pass

    def lost(self: Any, cp: checkpoint.Checkpoint, content: str) -> Any:
        raise Lost

    inp = agent_input()
    fake.responder = lambda req, i: (
        calls(READS[0]) if turn_of(req) == 0 else text(f"the answer, asked {i + 1} times")
    )
    with monkeypatch.context() as m:
        m.setattr(loop.AgentLoop, "_completed", lost)
        with pytest.raises(Lost):
            await run(acts, inp)
    assert len(fake.requests) == 2
    outcome = await run(acts, inp, attempt=2)
    assert outcome.kind == "completed" and outcome.result == "the answer, asked 2 times"
    assert len(fake.requests) == 2  # not asked again
    assert outcome.iterations == 2


async def test_a_new_dispatch_of_a_completed_agent_asks_the_model_again(
    acts: AgentActivities, fake: FakeLLM
):
    # The shortcut above is the lost attempt's alone: a person's retry of a completed agent
    # (a new dispatch) goes on from its conversation and asks the model again.
    inp = agent_input()
    fake.responder = lambda req, i: text(f"answer {i + 1}")
    first = await run(acts, inp)
    assert first.result == "answer 1"
    second = inp.model_copy(update={"dispatch": 2})  # (dispatch 1 again would start afresh)
    again = await run(acts, second, activity_id="T-1-v1-d2")
    assert again.kind == "completed" and again.result == "answer 2"
    assert len(fake.requests) == 2


async def test_a_new_dispatch_that_saved_the_old_answer_last_asks_again_when_retried(
    acts: AgentActivities, fake: FakeLLM
):
    # The new dispatch's first reply was empty: taken back and saved (under the new dispatch),
    # the conversation ends with the first dispatch's answer again. Its retry asks the model —
    # it does not complete with the answer the person's retry was meant to replace.
    inp = agent_input()
    replies = ["answer 1", "", "answer 3"]
    fake.responder = lambda req, i: text(replies[i])
    assert (await run(acts, inp)).result == "answer 1"
    second = inp.model_copy(update={"dispatch": 2})
    with pytest.raises(ApplicationError, match="no answer"):
        await run(acts, second, activity_id="T-1-v1-d2")
    again = await run(acts, second, attempt=2, activity_id="T-1-v1-d2")
    assert again.kind == "completed" and again.result == "answer 3"
    assert len(fake.requests) == 3


async def test_the_final_answer_is_kept_in_the_outcome_write_not_saved_twice(
    acts: AgentActivities, fake: FakeLLM
):
    # Issue 37: the final answer was saved in the checkpoint, then kept again in the outcome
    # written right after — two writes of one answer. One now: the outcome carries the
    # conversation, and the checkpoint (saved as the read was asked for) names it.
    inp = agent_input()
    fake.responder = lambda req, i: calls(READS[0]) if turn_of(req) == 0 else text("answer 1")
    assert (await run(acts, inp)).result == "answer 1"
    written = puts(acts)
    assert len(written) == 2, written
    assert "checkpoint-" in written[0] and written[1].endswith(".outcome.json")
    # read back whole, final answer included: a later dispatch goes on from it
    cp = stored(acts, inp)
    assert cp.messages[-1] == {"role": "assistant", "content": "answer 1"}
    assert cp.answered == "v1-d1" and cp.iteration == 2
    # a person's retry (a new dispatch) continues that conversation, and keeps its own end
    second = inp.model_copy(update={"dispatch": 2})
    fake.responder = lambda req, i: text("answer 2")
    again = await run(acts, second, activity_id="T-1-v1-d2")
    assert again.result == "answer 2"
    assert {"role": "assistant", "content": "answer 1"} in fake.requests[-1]["messages"]
    cp = stored(acts, inp)
    assert cp.messages[-1]["content"] == "answer 2" and cp.answered == "v1-d2"
    assert cp.usage.input_tokens > 0


async def test_an_outcome_the_store_does_not_take_leaves_the_answer_for_the_retry(
    acts: AgentActivities, fake: FakeLLM, monkeypatch: pytest.MonkeyPatch
):
    # The outcome that would carry the final answer is refused: the answer is saved in the
    # checkpoint as the attempt ends, and the retry completes with it, the model unasked.
    from activities.agents.ledger import AttemptLedger

    def refused(self: AttemptLedger, *args: Any, **kwargs: Any) -> None:
        raise ApplicationError("the outcome could not be kept", type="StoreRefused")

    inp = agent_input()
    fake.responder = lambda req, i: calls(READS[0]) if turn_of(req) == 0 else text("paid once")
    with monkeypatch.context() as m:
        m.setattr(AttemptLedger, "complete", refused)
        with pytest.raises(ApplicationError, match="could not be kept"):
            await run(acts, inp)
    assert stored(acts, inp).answered == "v1-d1"
    outcome = await run(acts, inp, attempt=2)
    assert outcome.kind == "completed" and outcome.result == "paid once"
    assert len(fake.requests) == 2  # not asked again


async def test_a_worker_lost_once_the_answer_is_kept_has_its_retry_return_it(
    acts: AgentActivities, fake: FakeLLM, monkeypatch: pytest.MonkeyPatch
):
    # Lost right after the one write (before the attempt reported): the retry returns the kept
    # outcome — the model unasked, the result and its figures as reported the first time.
    from activities.agents import loop

    class Lost(BaseException):
        pass

    def lost(self: Any, cp: checkpoint.Checkpoint, content: str) -> Any:
        raise Lost

    inp = agent_input()
    fake.responder = lambda req, i: calls(READS[0]) if turn_of(req) == 0 else text("kept")
    with monkeypatch.context() as m:
        m.setattr(loop.AgentLoop, "_completed", lost)
        with pytest.raises(Lost):
            await run(acts, inp)
    outcome = await run(acts, inp, attempt=2)
    assert outcome.result == "kept" and outcome.iterations == 2 and outcome.attempt == 2
    assert outcome.usage is not None and outcome.usage.dispatch.input_tokens > 0
    assert len(fake.requests) == 2


def test_a_stale_attempts_late_outcome_does_not_land_over_the_kept_one(tmp_path: Path):
    # The final answer kept in the outcome is fenced as the checkpoint's save was: a stopped
    # attempt that wakes after its replacement kept its outcome (and conversation) is refused,
    # rather than replacing what a later dispatch goes on from; its own write sent twice is not.
    from activities.agents.ledger import AttemptLedger
    from xsky.runs import AgentOutcome

    ledger = AttemptLedger.at(tmp_path / "run" / "T-1-v1-d1.jsonl")
    newer = checkpoint.Checkpoint(messages=[{"role": "assistant", "content": "newer"}])
    stale = checkpoint.Checkpoint(messages=[{"role": "assistant", "content": "stale"}])
    mine = newer.model_dump_json().encode()
    ledger.complete(2, AgentOutcome(result="newer"), conversation=mine)
    ledger.complete(2, AgentOutcome(result="newer"), conversation=mine)  # (sent again)
    with pytest.raises(ApplicationError) as refused:
        ledger.complete(
            1, AgentOutcome(result="stale"), conversation=stale.model_dump_json().encode()
        )
    assert refused.value.type == "CheckpointMoved" and not refused.value.non_retryable
    kept = ledger.outcome()
    assert kept is not None and kept.result == "newer" and kept.attempt == 2


async def test_an_attempt_whose_outcome_another_kept_first_saves_no_conversation_after_it(
    acts: AgentActivities, fake: FakeLLM
):
    # review16: while this attempt's model gave its final answer, another attempt of the
    # dispatch (its retry, this one being stopped) kept its outcome, with its conversation,
    # straight from the checkpoint this one read (a fold moves no checkpoint version). This
    # attempt's fold is refused — and its conversation is not saved after all as it ends
    # (unfold, flush): landed over the checkpoint, it stood for the dispatch's conversation
    # where the outcome reported is the other's (before the fold, its save was refused).
    from activities.agents.ledger import AttemptLedger
    from xsky.runs import AgentOutcome

    inp = agent_input()
    ledger = AttemptLedger.of(acts.store.objects, AgentKey.of(inp))

    def responder(req: dict[str, Any], i: int) -> Reply:
        if turn_of(req) == 0:
            return calls(READS[0])
        ledger.complete(2, AgentOutcome(result="the other's"), conversation=b'{"messages":[]}')
        return text("this one's")

    fake.responder = responder
    with pytest.raises(ApplicationError) as refused:
        await run(acts, inp)
    assert refused.value.type == "CheckpointMoved"
    cp = stored(acts, inp)
    assert cp.answered is None
    assert all(m.get("content") != "this one's" for m in cp.messages)
    again = await run(acts, inp, attempt=2)
    assert again.result == "the other's" and len(fake.requests) == 2


async def test_a_retry_saves_its_final_answer_in_the_checkpoint_so_a_stopped_attempt_stops(
    acts: AgentActivities, fake: FakeLLM, monkeypatch: pytest.MonkeyPatch
):
    # review16: the attempt before a retry may be only stopped (paused past its heartbeat
    # timeout) and wake. Were the retry's final answer kept in the outcome alone (fold), the
    # checkpoint's version would not move, and the woken attempt's next save — the mark of a
    # call that must not run again, before it runs it — would land after its dispatch
    # completed. A retry saves its answer in the checkpoint: that save is refused.
    from activities.agents import loop
    from activities.agents.ledger import AttemptLedger

    class Lost(BaseException):
        pass

    inp = agent_input()
    fake.responder = lambda req, i: calls(READS[0]) if turn_of(req) == 0 else text("answer")
    chat, asked = loop.llm.chat, []

    async def lost_at_second(*args: Any, **kwargs: Any) -> Any:
        asked.append(1)
        if len(asked) == 2:
            raise Lost
        return await chat(*args, **kwargs)

    key = AgentKey.of(inp)
    stopped = Checkpoints(
        acts.store, key, kept_at=AttemptLedger.of(acts.store.objects, key).outcome_key
    )
    with monkeypatch.context() as m:
        m.setattr(loop.llm, "chat", lost_at_second)
        with pytest.raises(Lost):
            await run(acts, inp)
    first = stopped.load()  # (what the stopped attempt read or wrote last)
    assert first is not None and first.answered is None
    outcome = await run(acts, inp, attempt=2)
    assert outcome.result == "answer"
    raw = checkpoint.Checkpoint.model_validate_json(acts.store.objects.get(stopped._key))
    assert raw.answered == "v1-d1" and raw.messages[-1]["content"] == "answer"
    with pytest.raises(ApplicationError) as refused:  # the woken attempt's next save
        stopped.save(first)
    assert refused.value.type == "CheckpointMoved"
