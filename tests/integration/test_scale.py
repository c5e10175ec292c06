"""Plans larger than Temporal's payloads: state, plan input and results by reference, paged
queries — on a dev server whose continue-as-new threshold is tiny, so every mechanism runs."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from pathlib import Path

import pytest
from temporalio import activity

from activities.artifacts import ArtifactStore, read_blob
from activities.leader_store import LeaderStore
from client.outcome import run_outcome
from client.run import Run
from tests.integration.eventually import eventually
from tests.integration.helpers import ask, board_shows, noop, plan, query, wait_requests
from tests.integration.plan_by_reference import by_reference
from tests.integration.test_durability import own_server
from workflows.leader import LeaderWorkflow
from xsky.artifacts import STORED_PART_CHARS, BlobPart
from xsky.leader.state import AnswerRequest, PageRequest, PauseRequest, ResumeRequest
from xsky.plan.models import Workflow
from xsky.plan.xml import parse_workflow
from xsky.runs import AgentReport, RunInput, RunOptions

pytestmark = pytest.mark.integration

CAN_EVERY_30 = ("--dynamic-config-value", "limit.historyCount.suggestContinueAsNew=30")


def largest_payload(history_json: str) -> int:
    """The largest payload (data, base64) anywhere in a history."""
    largest = 0

    def walk(node: object) -> None:
        nonlocal largest
        if isinstance(node, dict):
            if isinstance(node.get("data"), str) and "metadata" in node:
                largest = max(largest, len(node["data"]) * 3 // 4)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(json.loads(history_json))
    return largest


async def test_a_continued_run_carries_its_state_by_reference_and_stays_steerable(
    tmp_path: Path, monkeypatch
):
    """With a 1 KiB inline limit every continue-as-new stores the state in parts: a pending
    question, a pause and the results all cross it, and every agent runs exactly once."""
    async with own_server(tmp_path, monkeypatch, "ref", CAN_EVERY_30) as (_, client, settings):
        chain = [noop(str(i), 0.1, depends=str(i - 1) if i > 2 else "") for i in range(2, 16)]
        wf = parse_workflow(plan(ask("1", "Ship it?"), *chain, name="by-ref"))
        handle = await client.start_workflow(
            LeaderWorkflow.run,
            RunInput(workflow=wf, options=RunOptions(inline_limit=1024)),
            id=f"xsky-ref-{uuid.uuid4().hex[:6]}",
            task_queue=settings.task_queue,
        )
        (req,) = await wait_requests(handle, 1, timeout=60)
        await eventually(lambda: board_shows(handle, {"15": "completed"}), timeout=90)
        runs = [e async for e in client.list_workflows(f"WorkflowId='{handle.id}'")]
        assert sum(e.status.name == "CONTINUED_AS_NEW" for e in runs) >= 2
        await handle.signal(LeaderWorkflow.pause, PauseRequest(reason="check"))
        await handle.signal(LeaderWorkflow.resume, ResumeRequest())
        await handle.execute_update(
            LeaderWorkflow.answer, AnswerRequest(request_id=req.id, text="ship")
        )
        result = await asyncio.wait_for(run_outcome(handle), 60)
        assert (
            result.status == "completed" and [a.attempts for a in result.agents] == [2] + [1] * 14
        )  # asked, answered
        store = ArtifactStore(settings.artifacts)
        state_parts = list((settings.artifacts).rglob("state-*.0"))
        assert state_parts, "the state should have gone to the artifact store"
        texts = [
            a.result if a.result is not None else store.read_text(a.result_ref)
            for a in result.agents
        ]
        assert texts == ["ship"] + [f"r{i}" for i in range(2, 16)]


@pytest.mark.timeout(600)  # its run may take 240 s
async def test_a_large_plan_goes_by_reference_and_its_board_results_and_plan_come_in_pages(
    tmp_path: Path, monkeypatch
):
    """A 260-agent fan-out started with its plan in the artifact store: the board, results
    and plan queries page; the result lists only what did not complete and refers to all."""
    async with own_server(tmp_path, monkeypatch, "big") as (_, client, settings):
        leaves = [noop(f"n{i:03d}", 0, depends="root") for i in range(258)]
        wf = parse_workflow(
            plan(
                noop("root"),
                *leaves,
                noop("sink", 0, depends=",".join(f"n{i:03d}" for i in range(258))),
                name="big",
            )
        )
        wid = f"xsky-big-{uuid.uuid4().hex[:6]}"
        inp = by_reference(
            RunInput(workflow=wf, options=RunOptions(max_parallel=50)), settings, wid, limit=10_000
        )
        assert (
            inp.workflow is None
            and inp.plan_ref is not None
            and len(inp.model_dump_json()) < 10_000
        )
        handle = await client.start_workflow(
            LeaderWorkflow.run, inp, id=wid, task_queue=settings.task_queue
        )
        result = await asyncio.wait_for(run_outcome(handle), 240)
        assert (
            result.status == "completed"
            and result.agents_total == 260
            and result.counts == {"completed": 260}
        )
        assert result.agents == [] and result.results_ref is not None
        reports = [
            AgentReport.model_validate_json(line)
            for line in read_blob(
                ArtifactStore(settings.artifacts), result.results_ref
            ).splitlines()
        ]
        assert len(reports) == 260 and {r.status for r in reports} == {"completed"}

        page = await query(handle, LeaderWorkflow.task_board, PageRequest(offset=250, limit=20))
        assert page.total == 260 and [t.id for t in page.tasks] == [
            f"T-n{i:03d}" for i in range(249, 258)
        ] + ["T-sink"]
        assert page.counts == {"completed": 260}
        results = await query(handle, LeaderWorkflow.results, PageRequest(offset=0, limit=5))
        assert results.total == 260 and [r.id for r in results.agents] == [
            "root",
            "n000",
            "n001",
            "n002",
            "n003",
        ]
        xml = await query(handle, LeaderWorkflow.plan, PageRequest(offset=100, limit=50))
        assert xml.startswith(
            '<!-- agents 101–150 of 260; the next page: query plan with {"offset": 150} -->'
        )
        history = await handle.fetch_history()
        assert (
            largest_payload(history.to_json()) < 256 * 1024
        )  # a blob part at most, whatever the plan's size

        # The run left its whole board in the store: `status` reads it there, not by asking a
        # worker to replay the run (no query is asked), and it pages as the query does.
        assert result.board_ref is not None
        run = Run(client, settings, handle)

        async def no_query(*_: object) -> None:
            raise AssertionError("the ended run's board was asked for, not read")

        monkeypatch.setattr(run, "_query", no_query)
        stored = await run.board(offset=250, limit=20)
        assert (stored.total, stored.counts) == (page.total, page.counts)
        assert [(t.id, t.status) for t in stored.tasks] == [(t.id, t.status) for t in page.tasks]
        assert (await run.board(status="completed", limit=5)).total == 260


async def test_a_state_too_large_for_the_history_goes_on_as_a_stored_input(
    tmp_path: Path, monkeypatch
):
    """A state over STATE_IN_HISTORY_MAX (2 MiB: 20 agents of 128 KB tasks) goes to the next
    execution as its input, which the worker's External Storage writes to the store: each
    continued history holds a claim where it held the state twice (written in parts, read in
    parts); the run is exact, and every execution replays from the store."""
    from client.connect import DATA_CONVERTER
    from tests.integration.histories import external_payloads, replayer

    async with own_server(
        tmp_path, monkeypatch, "big-state", CAN_EVERY_30, data_converter=DATA_CONVERTER
    ) as (_, client, settings):
        words = "x" * 128_000  # a long task: 20 of them make a state over 2.5 MB
        chain = [noop(str(i), 0, depends=str(i - 1) if i > 1 else "") for i in range(1, 21)]
        wf = padded(parse_workflow(plan(*chain, name="big-state")), words)
        handle = await client.start_workflow(
            LeaderWorkflow.run,
            RunInput(workflow=wf, options=RunOptions(inline_limit=1024)),
            id=f"xsky-big-state-{uuid.uuid4().hex[:6]}",
            task_queue=settings.task_queue,
        )
        result = await asyncio.wait_for(run_outcome(handle), 120)
        assert result.status == "completed" and result.counts == {"completed": 20}
        executions = [e async for e in client.list_workflows(f"WorkflowId='{handle.id}'")]
        assert len(executions) >= 2, "the run never continued as new"
        stored_states = 0
        for ex in executions:
            history = await client.get_workflow_handle(handle.id, run_id=ex.run_id).fetch_history()
            puts = [
                e
                for e in history.events
                if e.HasField("activity_task_scheduled_event_attributes")
                and e.activity_task_scheduled_event_attributes.activity_type.name == "leader_put"
                and b'"name":"state-'
                in e.activity_task_scheduled_event_attributes.input.payloads[0].data
            ]
            assert puts == [], "a state went through the history in parts"
            started = history.events[0].workflow_execution_started_event_attributes
            if started.continued_execution_run_id:
                assert external_payloads(history) >= 1  # its input: a claim, not the state
                stored_states += 1
            await replayer().replay_workflow(history)  # the claim read back from the store
        assert stored_states >= 1


def padded(wf: Workflow, words: str) -> Workflow:
    """``wf`` with ``words`` after every agent's task (a large state or board, on purpose)."""
    return wf.model_copy(
        update={"agents": [a.model_copy(update={"task": f"{a.task} {words}"}) for a in wf.agents]}
    )


class SlowStore(LeaderStore):
    """The leader's store with a second per part written: a wide window to signal into."""

    @activity.defn(name="leader_put")
    async def put(self, part: BlobPart) -> None:
        await asyncio.sleep(1.0)
        await super().put(part)


async def test_a_pause_that_arrives_while_the_state_is_written_reaches_the_next_execution(
    tmp_path: Path, monkeypatch
):
    """The state is written in parts before continue-as-new; a signal handled meanwhile
    changes it after its snapshot. Each part here takes a second, and the pause is sent in
    the middle: the next execution must start paused (not lose the pause), then resume."""
    monkeypatch.setattr("worker.LeaderStore", SlowStore)
    async with own_server(tmp_path, monkeypatch, "sig", CAN_EVERY_30) as (_, client, settings):
        chain = [noop(str(i), 0.1, depends=str(i - 1) if i > 1 else "") for i in range(1, 25)]
        wf = parse_workflow(plan(*chain, name="signals"))
        handle = await client.start_workflow(
            LeaderWorkflow.run,
            RunInput(workflow=wf, options=RunOptions(inline_limit=1024)),
            id=f"xsky-sig-{uuid.uuid4().hex[:6]}",
            task_queue=settings.task_queue,
        )
        deadline = time.monotonic() + 60
        while not any(
            p.activity_type.name == "leader_put"
            for p in (await handle.describe()).raw_description.pending_activities
        ):
            assert time.monotonic() < deadline, "the run never wrote its state"
            await asyncio.sleep(0.05)
        writing = (await handle.describe()).run_id
        await handle.signal(LeaderWorkflow.pause, PauseRequest(reason="while writing"))
        while (await handle.describe()).run_id == writing:
            assert time.monotonic() < deadline, "the run did not continue as new"
            await asyncio.sleep(0.1)
        page = await query(handle, LeaderWorkflow.task_board, PageRequest(limit=1))
        assert page.state == "paused", page.notes
        await handle.signal(LeaderWorkflow.resume, ResumeRequest())
        result = await asyncio.wait_for(run_outcome(handle), 120)
        store = ArtifactStore(settings.artifacts)
        texts = [
            a.result if a.result is not None else store.read_text(a.result_ref)
            for a in result.agents
        ]
        assert result.status == "completed" and texts == [f"r{i}" for i in range(1, 25)]


class ChangingStore(LeaderStore):
    """A store that keeps something other than what it is given for a run's state."""

    @activity.defn(name="leader_put")
    async def put(self, part: BlobPart) -> None:
        if part.ref.name.startswith("state-"):
            part = part.model_copy(update={"text": part.text + " "})
        await super().put(part)


async def test_a_state_the_store_does_not_hold_as_written_is_not_handed_on_and_the_run_goes_on(
    tmp_path: Path, monkeypatch
):
    """The reference handed to the next execution is what ``leader_seal`` read back: when the
    store holds other text than was written, the run does not continue as new on it (the next
    execution would fail on a digest mismatch) but goes on where it is, and completes."""
    monkeypatch.setattr("worker.LeaderStore", ChangingStore)
    async with own_server(tmp_path, monkeypatch, "seal", CAN_EVERY_30) as (_, client, settings):
        chain = [noop(str(i), 0, depends=str(i - 1) if i > 1 else "") for i in range(1, 31)]
        wf = parse_workflow(plan(*chain, name="sealed"))
        handle = await client.start_workflow(
            LeaderWorkflow.run,
            RunInput(workflow=wf, options=RunOptions(inline_limit=1024)),
            id=f"xsky-seal-{uuid.uuid4().hex[:6]}",
            task_queue=settings.task_queue,
        )
        result = await asyncio.wait_for(run_outcome(handle), 120)
        texts = [a.result for a in result.agents]
        assert result.status == "completed" and texts == [f"r{i}" for i in range(1, 31)]
        runs = [e async for e in client.list_workflows(f"WorkflowId='{handle.id}'")]
        assert len(runs) == 1, "a run continued as new on a state the store did not hold"
        history = await handle.fetch_history()
        sealed = [
            e
            for e in history.events
            if e.activity_task_scheduled_event_attributes.activity_type.name == "leader_seal"
        ]
        assert sealed, "the state was never sealed"


async def test_a_large_runs_results_and_board_at_its_end_go_through_the_history_as_claims(
    tmp_path: Path, monkeypatch
):
    """Where the worker has External Storage, a large run's results and whole board are stored
    at its end in parts over the storage's threshold: the last execution's history holds
    claims, not the text (in parts just under it, they filled most of that history); what is
    stored reads back whole, and the history replays from the store."""
    from client.connect import DATA_CONVERTER
    from tests.integration.histories import external_payloads, replayer

    async with own_server(tmp_path, monkeypatch, "final-claims", data_converter=DATA_CONVERTER) as (
        _,
        client,
        settings,
    ):
        words = "y" * 2_000  # 210 tasks of 2 KB: a board over 400 KB
        agents = [noop(str(i), result="r" * 2_000) for i in range(1, 211)]
        wf = padded(parse_workflow(plan(*agents, name="final-claims")), words)
        handle = await client.start_workflow(
            LeaderWorkflow.run,
            RunInput(workflow=wf, options=RunOptions(max_parallel=210)),
            id=f"xsky-final-claims-{uuid.uuid4().hex[:6]}",
            task_queue=settings.task_queue,
        )
        result = await asyncio.wait_for(run_outcome(handle), 120)
        assert result.status == "completed" and result.counts == {"completed": 210}
        assert result.results_ref is not None and result.board_ref is not None
        for ref in (result.results_ref, result.board_ref):  # parts of a million characters
            assert ref.parts == -(-ref.size // STORED_PART_CHARS), ref
        store = ArtifactStore(settings.artifacts)
        reports = read_blob(store, result.results_ref).splitlines()
        assert len(reports) == 210 and all('"status":"completed"' in line for line in reports)
        assert read_blob(store, result.board_ref).count(words) == 210
        history = await handle.fetch_history()
        puts = [
            e.activity_task_scheduled_event_attributes.input.payloads[0]
            for e in history.events
            if e.HasField("activity_task_scheduled_event_attributes")
            and e.activity_task_scheduled_event_attributes.activity_type.name == "leader_put"
            and (
                b"store results" in e.user_metadata.summary.data
                or b"store board" in e.user_metadata.summary.data
            )
        ]
        assert len(puts) == result.results_ref.parts + result.board_ref.parts
        # The board (over 1 MB) went as claims; the results (132 KB, under the threshold) inline.
        # In parts of 200,000 characters all 1.2 MB stood in the history.
        assert sum(len(p.data) for p in puts) < 200_000, [len(p.data) for p in puts]
        assert external_payloads(history) >= result.board_ref.parts
        await replayer().replay_workflow(history)
