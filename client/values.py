"""What the API hands back: a run's status, events while following it, a run in a listing."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (a listing's rows need none of the leader's models)
    from xsky.leader.state import BoardPage


@dataclass(frozen=True)
class RunStatus:
    """Where a run stands: Temporal's status (running, completed, failed …), what the run is
    doing (running, paused, waiting …) and the first page of its board."""

    id: str
    status: str
    state: str
    board: BoardPage | None


@dataclass(frozen=True)
class ConnectionLost:
    """Yielded by :meth:`Run.follow` while the server cannot be reached; following goes on."""

    error: str


@dataclass(frozen=True)
class WorkerSilent:
    """Yielded by :meth:`Run.follow` when no worker has answered for a while (none is running,
    or all are busy or restarting), or — with ``task`` — when no worker has taken that task's
    agent attempt for ``seconds`` (no worker of its kind polls); following goes on."""

    seconds: float
    error: str
    task: str | None = None


@dataclass(frozen=True)
class RunSummary:
    """One row of :meth:`XSky.runs`."""

    id: str
    status: str
    xsky_status: str | None
    plan: str | None
    failed: int | None
    pending: int | None
    start: datetime | None
    close: datetime | None
