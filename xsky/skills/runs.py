"""Inputs and outputs of the skill pipeline's workflows and activities (one model each).

Only paths, byte ranges, ids and counts travel through Temporal: transcript text never
enters workflow history (it is redacted on disk and referenced by the delta's key).
"""

from __future__ import annotations

from pydantic import Field

from xsky.wire import WireModel as Wire


class DeltaRef(Wire):
    """Bytes ``[start, end)`` of one raw transcript, not yet turned into atoms."""

    path: str
    kind: str
    traj_id: str
    start: int
    end: int
    subagent: bool = False
    home_id: str = ""  # the skills home's identity: delta ids are unique per home, not per server

    @property
    def key(self) -> str:
        return f"{self.traj_id}-{self.start}-{self.end}"

    def label(self) -> str:
        return f"delta · {self.traj_id} · bytes {self.start}–{self.end}"


class ScanInput(Wire):
    limit: int = Field(
        200,
        ge=1,
        le=5000,
        description="deltas handed out per scan (the rest wait for the next round)",
    )
    max_delta_bytes: int = Field(
        4 * 1024 * 1024, ge=1024, description="largest delta; a bigger append is taken in parts"
    )
    settle_seconds: float = Field(
        120.0, ge=0, description="a last line without a newline is taken once the file is this old"
    )


class ScanResult(Wire):
    deltas: list[DeltaRef] = Field(default_factory=list)
    remaining: int = 0  # deltas found beyond the limit
    files: int = 0
    changed: int = 0
    new_files: int = 0
    waiting: int = 0  # files whose only new bytes are a partial last line
    gone: int = 0
    moved: int = 0
    seconds: float = 0.0
    problems: list[str] = Field(default_factory=list)  # sources that could not be read, with why


class DeltaInput(Wire):
    delta: DeltaRef
    heartbeat_timeout: float = Field(
        60.0, gt=0, description="seconds without a heartbeat before a step is retried elsewhere"
    )


class LaneSummary(Wire):
    traj_id: str
    md_start: int
    md_chars: int
    units: int
    prompts: int


class RenderResult(Wire):
    """What one delta's render staged. The record counts are this delta's: every record type
    it held (``type`` or ``type/subtype``), read by a rule (``interpreted``) or kept unread
    (``opaque``); the file's running totals are in its parse state (``skills status``)."""

    key: str
    lanes: list[LaneSummary] = Field(default_factory=list)
    opaque: dict[str, int] = Field(default_factory=dict)
    unreadable: int = 0
    interpreted: dict[str, int] = Field(default_factory=dict)


class SplitResult(Wire):
    key: str
    split_by: str
    new_atoms: int = 0
    updated_atoms: int = 0
    windows: int = 0
    model_calls: int = 0
    note: str = ""


class CommitResult(Wire):
    committed: bool
    reason: str = ""
    atoms: list[str] = Field(default_factory=list)  # ids written (new and updated)
    new: list[str] = Field(default_factory=list)  # of which new
    cursor: int = 0


class DeltaResult(Wire):
    key: str
    status: str  # committed | stale | empty
    atoms: list[str] = Field(default_factory=list)
    split_by: str = ""
    note: str = ""


class SkillsScanResult(Wire):
    rounds: int = 0
    deltas: int = 0
    committed: int = 0
    stale: int = 0
    empty: int = 0
    duplicate: int = 0  # already being processed (or done) under the same id by another tick
    failed: int = 0
    atoms: int = 0
    problems: list[str] = Field(default_factory=list)


class SkillsScanInput(Wire):
    """The one input of the scan workflow (a schedule tick or ``skills scan --once``)."""

    scan: ScanInput = Field(default_factory=ScanInput)
    concurrency: int = Field(8, ge=1, le=100, description="delta workflows running at once")
    heartbeat_timeout: float = Field(
        60.0, gt=0, description="seconds a delta step may go silent (a dead worker) before a retry"
    )
    max_rounds: int = Field(
        50, ge=1, description="scan rounds in one tick at most (the next tick goes on)"
    )
    rounds_per_run: int = Field(
        10,
        ge=1,
        description="rounds before continuing as new (a round of 200 deltas is ~800 events)",
    )
    rounds_done: int = 0
    totals: SkillsScanResult | None = None  # carried across continue-as-new
