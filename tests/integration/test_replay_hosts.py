"""Replay of a run whose workspace's host was lost (patch workspace-hosts): recorded by
tests/integration/test_multi_host.py's kill test (``XSKY_RECORD_HISTORIES=1``), where workers
share an S3 store and no disk — the workspace claimed by a host, an attempt that host never
took, ``host_alive`` finding it gone, the workspace claimed again and the agent run on the other
host. test_replay.py replays every fixture; this says what this one holds."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory

from tests.integration.histories import FIXTURES, replayer
from tests.integration.test_multi_host import scheduled

pytestmark = pytest.mark.integration

FIXTURE = FIXTURES / "workspace_hosts_lost.json"


@pytest.mark.skipif(not FIXTURE.exists(), reason="recorded by test_multi_host.py")
async def test_a_lost_workspace_host_and_the_new_claim_replay(tmp_path: Path):
    history = WorkflowHistory.from_json("xsky-hosts", FIXTURE.read_text())
    kinds = scheduled(history)
    assert "host_alive" in kinds and "claim_workspace" in kinds, kinds
    queues = {
        e.activity_task_scheduled_event_attributes.task_queue.name
        for e in history.events
        if e.activity_task_scheduled_event_attributes.activity_type.name == "run_agent"
    }
    assert sum("-host-" in q for q in queues) >= 1, queues
    await replayer().replay_workflow(history)
