"""What the server knows of a run when no worker answers its board query in time: its search
attributes (what it is doing, who it waits for, what failed) and its agents' attempts in
flight — read from the server alone, so ``starter.py status`` has an answer under any load."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from temporalio.api.enums.v1 import PendingActivityState
from temporalio.client import Client
from temporalio.converter import DataConverter

from client.once import describe_once


@dataclass
class ServerView:
    """A run as the server alone sees it."""

    search: dict[str, Any] = field(default_factory=dict)  # XskyStatus, XskyPending, XskyFailed…
    running: list[str] = field(default_factory=list)  # "T-3 (attempt 2)", agents in flight

    def lines(self) -> list[str]:
        said = [f"{name}: {value}" for name, value in sorted(self.search.items())]
        if self.running:
            said.append("agents in flight: " + ", ".join(self.running[:20]))
        return said or ["(the server holds nothing more on it)"]

    def wire(self) -> dict[str, Any]:
        return {"searchAttributes": self.search, "inFlight": self.running}


async def server_view(client: Client, workflow_id: str) -> ServerView:
    described = await describe_once(client, workflow_id)
    search: dict[str, Any] = {}
    indexed = described.workflow_execution_info.search_attributes.indexed_fields
    for name, payload in indexed.items():
        if name.startswith("Xsky"):
            search[name] = DataConverter.default.payload_converter.from_payload(payload)
    running = [
        f"{a.activity_id.rsplit('-v', 1)[0]} (attempt {a.attempt}"
        + (
            ", waiting for a worker)"
            if a.state == PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED
            else ")"
        )
        for a in described.pending_activities
        if a.activity_type.name == "run_agent"
    ]
    return ServerView(search, running)
