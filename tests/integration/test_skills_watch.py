"""The transcript watcher on a real Temporal dev server: schedule ticks, exactly-once deltas,
crashes of the worker and of the server, measured skill use, and no secret anywhere."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import subprocess
import threading
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import Client, ScheduleBackfill, ScheduleOverlapPolicy
from temporalio.contrib.pydantic import pydantic_data_converter

from activities.agents.activity import AgentActivities
from activities.skills.scan import read_atoms
from activities.skills.store import SkillStore
from cli.devserver import DevServer, free_port
from client.skills import schedule_id
from client.skills import watch_schedule as _schedule
from tests.conftest import Env
from tests.fake_llm import FakeLLM, Reply, calls, text, turn_of
from tests.integration.eventually import eventually
from tests.integration.helpers import handled_end_of
from tests.integration.test_durability import stop_worker_process
from tests.skills_fixtures import (
    CC_MAIN,
    CC_TRAJ,
    CODEX_MAIN,
    CODEX_TRAJ,
    FIXTURES,
    Transcripts,
    all_files_text,
    leaks,
)
from worker import build_workers
from workflows.skills.watch import SkillsScanWorkflow
from xsky.config import load_settings
from xsky.skills.atoms import AtomTask
from xsky.skills.runs import ScanInput, SkillsScanInput, SkillsScanResult

pytestmark = pytest.mark.integration


async def start_pipeline(env: Env) -> None:
    workers = build_workers(
        env.client, env.settings, [], False, 1.0, AgentActivities(env.settings), skills=True
    )
    env.workers += workers
    env.tasks += [asyncio.create_task(w.run()) for w in workers]


async def scan_once(client: Client, queue: str, **kw: Any) -> SkillsScanResult:
    inp = SkillsScanInput(scan=ScanInput(settle_seconds=3600), **kw)
    return await client.execute_workflow(
        SkillsScanWorkflow.run,
        inp,
        id=f"xsky-skills-test-{uuid.uuid4().hex[:8]}",
        task_queue=queue,
        execution_timeout=timedelta(minutes=3),
    )


def snapshot(home: Path) -> dict[str, str]:
    """Every atom file's content, by path."""
    return {str(p.relative_to(home)): p.read_text() for p in home.rglob("atom_*.json")}


def check_chain(atoms: list[AtomTask]) -> None:
    """Numbered 1..n without gaps, linked both ways in order, tiling the view without overlap."""
    assert [int(a.atom_id.rsplit("_", 1)[1]) for a in atoms] == list(range(1, len(atoms) + 1))
    for prev, nxt in zip(atoms, atoms[1:], strict=False):
        assert prev.post_atom_id == nxt.atom_id and nxt.pre_atom_id == prev.atom_id
        assert prev.offset_end == nxt.offset_start, (
            prev.atom_id,
            prev.offset_end,
            nxt.offset_start,
        )
    assert atoms[0].pre_atom_id is None and atoms[-1].post_atom_id is None


def _decoded(node: Any) -> Any:
    """A history's JSON with every payload's base64 ``data`` decoded to its text: what a
    person sees in the Web UI, and what a leak check must read (base64 hides it)."""
    if isinstance(node, dict):
        if isinstance(node.get("data"), str) and isinstance(node.get("metadata"), dict):
            try:
                text = base64.b64decode(node["data"]).decode("utf-8", errors="replace")
            except ValueError:
                text = node["data"]
            return {**node, "data": text}
        return {k: _decoded(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_decoded(v) for v in node]
    return node


async def histories_text(client: Client, queue: str) -> dict[str, str]:
    out: dict[str, str] = {}
    async for wf in client.list_workflows(f"TaskQueue = '{queue}'"):
        history = await client.get_workflow_handle(wf.id, run_id=wf.run_id).fetch_history()
        decoded = _decoded(json.loads(history.to_json()))
        out[f"history {wf.id}"] = json.dumps(decoded, ensure_ascii=False)
    return out


def intents_in(histories: dict[str, str], atoms: list[Any]) -> list[str]:
    """(history, intent) for every atom intent (redacted or not) found in a workflow history."""
    return [
        f"{where}: {a.intent[:40]}"
        for a in atoms
        if len(a.intent) >= 20
        for where, text in histories.items()
        if a.intent in text or a.intent[:60] in text
    ]


async def test_the_schedule_ingests_new_bytes_within_a_tick_and_does_nothing_when_nothing_changed(
    env: Env, transcripts: Transcripts
):
    await start_pipeline(env)
    sid = schedule_id(env.settings)
    handle = await env.client.create_schedule(sid, _schedule(env.settings, timedelta(seconds=2)))
    try:
        home = transcripts.home
        await eventually(lambda: _cursors_done(home, transcripts), 60)  # the first ingestion
        first = snapshot(home)
        ticks = (await handle.describe()).info.num_actions
        await eventually(_ticks_past(handle, ticks + 2), 30)
        assert snapshot(home) == first, "a tick with nothing appended must change nothing"

        before = {a.atom_id for a in read_atoms(home, CC_TRAJ)}
        transcripts.append(CC_MAIN)
        appended_at = (await handle.describe()).info.num_actions

        def atoms_from_the_appended_bytes() -> None:
            assert len(read_atoms(home, CC_TRAJ)) > len(before)

        await eventually(atoms_from_the_appended_bytes, 30)
        assert (await handle.describe()).info.num_actions <= appended_at + 2, (
            "the append must be ingested by the next tick"
        )
        atoms = read_atoms(home, CC_TRAJ)
        check_chain(atoms)
        new = [a for a in atoms if a.atom_id not in before]
        assert any(
            "CI" in a.intent or "GitHub Actions" in a.intent or "workflow" in a.intent.lower()
            for a in new
        ), [a.intent for a in new]
        histories = await histories_text(env.client, env.settings.skills_queue)
        # decoded: the references the workflows pass (a trajectory id) read as text
        assert any(CC_TRAJ in text for text in histories.values()), "payloads not decoded"
        assert leaks(all_files_text(home) | histories) == []
        # no transcript-derived text in any history, even redacted: workflows pass references
        assert intents_in(histories, atoms) == []
    finally:
        await handle.delete()


def _cursors_done(home: Path, t: Transcripts) -> None:
    """Assert that the six transcripts are known, each read to its end."""
    store = SkillStore(home)
    try:
        behind = {f.path: (f.cursor, os.path.getsize(f.path)) for f in store.files().values()}
    finally:
        store.close()
    assert len(behind) == 6 and all(c == size for c, size in behind.values()), behind


def _ticks_past(handle: Any, n: int) -> Any:
    async def check() -> None:
        ticks = (await handle.describe()).info.num_actions
        assert ticks >= n, f"{ticks} ticks, wanted {n}"

    return check


async def test_the_same_delta_delivered_by_overlapping_ticks_and_a_replayed_schedule_is_written_once(
    env: Env, transcripts: Transcripts
):
    await start_pipeline(env)
    queue = env.settings.skills_queue
    results = await asyncio.gather(*(scan_once(env.client, queue) for _ in range(3)))
    home = transcripts.home
    assert sum(r.committed for r in results) == 6, [r.model_dump() for r in results]
    assert sum(r.failed for r in results) == 0
    assert sum(r.deltas for r in results) - 6 == sum(
        r.duplicate + r.stale for r in results
    )  # the rest were refused
    first = snapshot(home)
    for traj in (CC_TRAJ, CODEX_TRAJ):
        check_chain(read_atoms(home, traj))

    # A replayed schedule: the schedule fires for a past hour, all ticks at once.
    sid = schedule_id(env.settings)
    handle = await env.client.create_schedule(sid, _schedule(env.settings, timedelta(minutes=20)))
    try:
        end = datetime.now(UTC)
        await handle.backfill(
            ScheduleBackfill(
                start_at=end - timedelta(hours=1),
                end_at=end,
                overlap=ScheduleOverlapPolicy.ALLOW_ALL,
            )
        )
        await eventually(_ticks_past(handle, 3), 30)  # the backfilled ticks
        await eventually(_no_scans_running(env.client, queue), 60)  # and their end
    finally:
        await handle.delete()
    assert snapshot(home) == first

    # Overlapping ticks that see *different* ranges of one file: only one commits the bytes.
    cut = _line_end(CODEX_MAIN, 3)
    transcripts.append(CODEX_MAIN, cut=cut)
    a = await env.client.start_workflow(
        SkillsScanWorkflow.run,
        SkillsScanInput(scan=ScanInput(settle_seconds=3600)),
        id=f"xsky-skills-test-{uuid.uuid4().hex[:8]}",
        task_queue=queue,
        execution_timeout=timedelta(minutes=3),
    )
    # The first tick has found its delta (the file up to the cut) before the file grows.
    await eventually(lambda: handled_end_of(a, activity_type="scan_transcripts"), 60)
    with open(transcripts.root / CODEX_MAIN, "ab") as fh:
        fh.write((FIXTURES / CODEX_MAIN.replace(".jsonl", ".append.jsonl")).read_bytes()[cut:])
    await asyncio.gather(a.result(), scan_once(env.client, queue))
    await scan_once(env.client, queue)  # whatever is left
    atoms = read_atoms(home, CODEX_TRAJ)
    check_chain(atoms)
    store = SkillStore(home)
    try:
        row = store.file_of(CODEX_TRAJ)
        assert row is not None and row.cursor == os.path.getsize(transcripts.root / CODEX_MAIN)
    finally:
        store.close()
    view = (home / "codex_sessions" / f"{CODEX_TRAJ}.md").read_text()
    assert view.count("add a rollback for that migration") == 1, (
        "the appended prompt must be in the view exactly once"
    )


def _line_end(rel: str, lines: int) -> int:
    data = (FIXTURES / rel.replace(".jsonl", ".append.jsonl")).read_bytes()
    at = 0
    for _ in range(lines):
        at = data.index(b"\n", at) + 1
    return at


def _no_scans_running(client: Client, queue: str) -> Any:
    async def check() -> None:
        running = [
            w.id
            async for w in client.list_workflows(
                f"TaskQueue = '{queue}' AND ExecutionStatus = 'Running' AND WorkflowType IN ('SkillsScanWorkflow', 'SkillDeltaWorkflow')"
            )
        ]
        assert not running, f"still running: {running}"

    return check


def submitting_responder(hold: threading.Event | None) -> Any:
    """A TaskAgent model: submits an atom at every boundary (claiming a skill it did not use), then stops."""

    def respond(request: dict[str, Any], index: int) -> Reply:
        if hold is not None and not hold.is_set():
            hold.wait(120)
        if turn_of(request) > 0:
            return text("done")
        prompt = request["messages"][1]["content"]
        marks = (
            prompt.split("Boundaries you may start atoms at: ", 1)[1].split("\n", 1)[0].split(", ")
        )
        return calls(
            *[
                (
                    "submit_atom",
                    {
                        "boundary": m,
                        "intent": f"model intent {m}",
                        "summary": "model summary",
                        "tags": ["Model Tag"],
                        "ux_score": 8,
                        "used_skills": ["claimed-skill"],
                    },
                )
                for m in marks
            ]
        )

    return respond


def start_skills_worker(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    from tests.integration.test_durability import start_worker_process

    return start_worker_process(env, log, "--no-leader", "--kinds", "file")


async def test_a_worker_killed_mid_delta_and_a_server_restart_lose_and_duplicate_no_atom(
    tmp_path: Path, transcripts: Transcripts, monkeypatch: pytest.MonkeyPatch
):
    fake = FakeLLM()
    hold = threading.Event()
    fake.responder = submitting_responder(hold)
    server = DevServer(
        db_path=tmp_path / "crash.db",
        port=free_port(),
        headless=True,
        log_path=tmp_path / "server.log",
    )
    server.start(timeout=90)
    queue = f"k{uuid.uuid4().hex[:6]}"
    monkeypatch.setenv("XSKY_TASK_QUEUE", queue)
    monkeypatch.setenv("TEMPORAL_ADDRESS", server.address)
    monkeypatch.setenv("XSKY_HOME", str(tmp_path / "xsky"))
    environ = dict(
        os.environ,
        OPENAI_BASE_URL=fake.base_url,
        OPENAI_API_KEY="sk-test-never-in-history-7c1f",
        XSKY_MODEL="fake-model",
        PYTHONUNBUFFERED="1",
    )
    settings = load_settings()
    worker = start_skills_worker(environ, tmp_path / "w1.log")
    try:
        client = await Client.connect(server.address, data_converter=pydantic_data_converter)
        wid = f"xsky-skills-crash-{uuid.uuid4().hex[:6]}"
        await client.start_workflow(
            SkillsScanWorkflow.run,
            SkillsScanInput(scan=ScanInput(settle_seconds=3600), heartbeat_timeout=3),
            id=wid,
            task_queue=settings.skills_queue,
        )

        def asking() -> None:
            assert len(fake.requests) >= 3, f"{len(fake.requests)} TaskAgent requests"

        await eventually(asking, 60)
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
        server.stop(kill=True)
        hold.set()
        server.start(timeout=90)
        worker = start_skills_worker(environ, tmp_path / "w2.log")
        client = await Client.connect(server.address, data_converter=pydantic_data_converter)
        result: SkillsScanResult = await asyncio.wait_for(
            client.get_workflow_handle_for(SkillsScanWorkflow.run, wid).result(), 120
        )
        assert result.committed == 6 and result.failed == 0, result.model_dump()
        home = transcripts.home
        for traj in (CC_TRAJ, CODEX_TRAJ):
            atoms = read_atoms(home, traj)
            check_chain(atoms)
            assert all(a.provenance.split_by == "model" for a in atoms)
        cc = read_atoms(home, CC_TRAJ)
        # used_skills is measured: the Skill tool call in the transcript, not the model's claim.
        assert (
            cc[0].used_skills == ["pytest-runner"] and cc[0].provenance.used_skills_by == "measured"
        )
        assert any(
            a.used_skills == ["claimed-skill"] and a.provenance.used_skills_by == "self-reported"
            for a in cc[1:]
        )
        codex = read_atoms(home, CODEX_TRAJ)
        assert codex[0].used_skills == ["sql-migrate"]
        sent = "\n".join(json.dumps(r) for r in fake.requests)
        assert (
            leaks(
                {"model requests": sent}
                | all_files_text(home)
                | await histories_text(client, settings.skills_queue)
            )
            == []
        )
    finally:
        stop_worker_process(worker)
        server.stop(kill=True)  # its database is thrown away: no graceful stop (~3 s)
        fake.close()


async def test_our_own_agents_conversations_feed_the_pipeline(
    env: Env, transcripts: Transcripts, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
):
    from tests.integration.helpers import plan

    settings_file = Path(os.environ["XSKY_PROJECT_DIR"]) / ".xsky" / "settings.json"
    settings_file.write_text(
        json.dumps(
            {"skills": {"sources": [{"kind": "xsky", "path": str(env.home / "transcripts")}]}}
        )
    )

    def responder(req: dict[str, Any], i: int) -> Reply:
        return (
            calls(("file_list", {"path": "."}))
            if turn_of(req) == 0
            else text("The workspace is empty; nothing to clean.")
        )

    fake_llm.responder = responder
    await env.start_worker(kinds=["llm"])
    await start_pipeline(env)
    result = await env.run(
        plan(
            '<agent name="explore" id="1"><task>list the workspace and say what to clean</task></agent>'
        )
    )
    assert result.status == "completed"
    (transcript,) = (env.home / "transcripts").rglob("*.jsonl")
    lines = [json.loads(x) for x in transcript.read_text().splitlines()]
    assert (
        lines[0]["type"] == "session"
        and lines[0]["role"] == "explore"
        and lines[-1]["status"] == "completed"
    )

    monkeypatch.delenv("XSKY_MODEL")  # the TaskAgent splits offline; the agent above used the model
    scanned = await scan_once(env.client, env.settings.skills_queue)
    assert scanned.committed == 1
    store = SkillStore(transcripts.home)
    try:
        (traj,) = [t.traj_id for t in store.trajs()]
    finally:
        store.close()
    assert traj.startswith("traj_xsky_explore_")
    (atom,) = read_atoms(transcripts.home, traj)
    assert (
        "list the workspace" in atom.intent
        and atom.ux_score == 10
        and atom.provenance.ux_score_by == "heuristic"
    )


async def test_a_long_scan_continues_as_new_carrying_its_counts(env: Env, transcripts: Transcripts):
    await start_pipeline(env)
    inp = SkillsScanInput(scan=ScanInput(settle_seconds=3600, limit=1), rounds_per_run=2)
    handle = await env.client.start_workflow(
        SkillsScanWorkflow.run,
        inp,
        id=f"xsky-skills-can-{uuid.uuid4().hex[:6]}",
        task_queue=env.settings.skills_queue,
    )
    result = await asyncio.wait_for(handle.result(), 120)
    assert result.committed == 6 and result.deltas == 6 and result.rounds >= 6, result.model_dump()
    runs = [w async for w in env.client.list_workflows(f"WorkflowId = '{handle.id}'")]
    assert sum(1 for w in runs if w.status is not None and w.status.name == "CONTINUED_AS_NEW") >= 2
