"""Settings from the environment, with defaults that work on one machine.

Read when asked (never at import), so tests and tools can set the environment first.

| variable | default | meaning |
|---|---|---|
| TEMPORAL_ADDRESS | localhost:7233 | the Temporal frontend |
| TEMPORAL_NAMESPACE | default | namespace of every run |
| XSKY_TASK_QUEUE | xsky | leader workflows' queue; agents use ``<queue>-<kind>`` |
| XSKY_HOME | .xsky | local state: server DB, logs, runs, artifacts |
| XSKY_ARTIFACTS | $XSKY_HOME/artifacts | where results and screenshots are stored |
| XSKY_RUNS | $XSKY_HOME/runs | per-run workspaces (``<runs>/<workflow id>/workspace``) |
| XSKY_ARTIFACT_THRESHOLD | 8192 | results larger than this (bytes) travel as references |
| XSKY_UI_URL | http://localhost:8233 | the Temporal Web UI, for links |
| XSKY_MAX_PLAN_BYTES | 5242880 | largest workflow XML accepted |
| XSKY_SKILLS_HOME | ~/.xsky/skills-home | trajectories, atoms and the skill library |
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

@dataclass(frozen=True)
class Settings:
    address: str
    namespace: str
    task_queue: str
    home: Path
    artifacts: Path
    runs: Path
    artifact_threshold: int
    ui_url: str
    max_plan_bytes: int
    skills_home: Path

    @property
    def skills_queue(self) -> str:
        """The task queue of the skill pipeline (its workflows and activities)."""
        return f"{self.task_queue}-skills"

    def kind_queue(self, kind: str) -> str:
        """The task queue that serves agents of one kind (browser, file, llm, shell)."""
        return f"{self.task_queue}-{kind}"

    def ui_link(self, workflow_id: str) -> str:
        return f"{self.ui_url.rstrip('/')}/namespaces/{self.namespace}/workflows/{workflow_id}"


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a whole number; set it to e.g. {default}") from None
    if value <= 0:
        raise ValueError(f"{name}={raw!r} must be positive")
    return value


def load_settings() -> Settings:
    home = Path(os.environ.get("XSKY_HOME") or ".xsky")
    return Settings(
        address=os.environ.get("TEMPORAL_ADDRESS") or "localhost:7233",
        namespace=os.environ.get("TEMPORAL_NAMESPACE") or "default",
        task_queue=os.environ.get("XSKY_TASK_QUEUE") or "xsky",
        home=home,
        artifacts=Path(os.environ.get("XSKY_ARTIFACTS") or home / "artifacts"),
        runs=Path(os.environ.get("XSKY_RUNS") or home / "runs"),
        artifact_threshold=_int("XSKY_ARTIFACT_THRESHOLD", 8192),
        ui_url=os.environ.get("XSKY_UI_URL") or "http://localhost:8233",
        max_plan_bytes=_int("XSKY_MAX_PLAN_BYTES", 5 * 1024 * 1024),
        skills_home=Path(os.environ.get("XSKY_SKILLS_HOME") or Path.home() / ".xsky" / "skills-home").expanduser().absolute(),
    )


def server_ports(grpc_port: int) -> tuple[int, int, int, int]:
    """The ports a local Temporal dev server of ``grpc_port`` uses: gRPC, Web UI, HTTP API,
    metrics. ``xsky server`` starts it so; agents' egress refuses all four on this machine
    (each can signal or end workflows, or tell what runs)."""
    return grpc_port, grpc_port + 1000, grpc_port + 2000, grpc_port + 2001
