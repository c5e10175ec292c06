"""The skill pipeline's watcher, as Temporal workflows.

``SkillsScanWorkflow`` is what the ``xsky-skills-watch`` Schedule starts every 30 s
(overlap: skip) and what ``skills scan --once`` starts by hand: a scan activity finds the
deltas (new files, appended bytes), and each delta becomes a ``SkillDeltaWorkflow`` child
whose id is derived from the trajectory and byte range. Two ticks that find the same
delta start the same id, and Temporal refuses the second (a running or completed id is
never started again; only a failed one is retried), so a delta is processed once however
ticks overlap; the commit step's compare-and-swap covers deltas that overlap without
being equal. A round that leaves deltas behind scans again; long runs continue as new.

``SkillDeltaWorkflow``: render (parse + redact + stage the view) → split (TaskAgent) →
commit (view, index, atoms, cursor — atomically). Each step is an activity with a
timeout and bounded retries; a worker killed mid-way resumes at the step it was on.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import ChildWorkflowError, WorkflowAlreadyStartedError
from temporalio.workflow import ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from xsky.skills.models import AtomRef, RouteInput, traj_of
    from xsky.skills.runs import (
        CommitResult,
        DeltaInput,
        DeltaRef,
        DeltaResult,
        RenderResult,
        ScanResult,
        SkillsScanInput,
        SkillsScanResult,
        SplitResult,
    )

DELTA_ID_PREFIX = "xsky-skills-delta-"
STEP_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=6,
)


def delta_workflow_id(delta: DeltaRef) -> str:
    return (
        f"{DELTA_ID_PREFIX}{delta.home_id}-{delta.key}"
        if delta.home_id
        else DELTA_ID_PREFIX + delta.key
    )


@workflow.defn(name="SkillDeltaWorkflow")
class SkillDeltaWorkflow:
    """One delta of one transcript → atoms, exactly once."""

    def __init__(self) -> None:
        self.step = "starting"

    @workflow.query(description="Which step the delta is at: render, split, commit, done.")
    def progress(self) -> str:
        return self.step

    @workflow.run
    async def run(self, inp: DeltaInput) -> DeltaResult:
        d = inp.delta
        self._at("render", f"{d.label()}\n\nparsing and redacting `{d.path}`")
        beat = timedelta(seconds=inp.heartbeat_timeout)
        rendered: RenderResult = await workflow.execute_activity(
            "render_delta",
            inp,
            result_type=RenderResult,
            start_to_close_timeout=timedelta(minutes=10),
            heartbeat_timeout=beat,
            retry_policy=STEP_RETRY,
            summary=f"render · {d.traj_id}",
        )
        split: SplitResult | None = None
        if rendered.lanes:
            units = sum(lane.units for lane in rendered.lanes)
            self._at(
                "split",
                f"{d.label()}\n\nTaskAgent: {units} events in {len(rendered.lanes)} trajectory view(s)",
            )
            split = await workflow.execute_activity(
                "split_delta",
                inp,
                result_type=SplitResult,
                start_to_close_timeout=timedelta(minutes=30),
                heartbeat_timeout=beat,
                retry_policy=STEP_RETRY,
                summary=f"TaskAgent · {d.traj_id}",
            )
        self._at("commit", f"{d.label()}\n\nwriting atoms, view and cursor")
        commit: CommitResult = await workflow.execute_activity(
            "commit_delta",
            inp,
            result_type=CommitResult,
            start_to_close_timeout=timedelta(minutes=5),
            heartbeat_timeout=beat,
            retry_policy=STEP_RETRY,
            summary=f"commit · {d.traj_id}",
        )
        if commit.committed and (commit.atoms or commit.new):
            # New atoms go to the skill library; atoms that used a library skill score it.
            await workflow.execute_activity(
                "route_atoms",
                RouteInput(
                    path=d.path,
                    kind=d.kind,
                    heartbeat_timeout=inp.heartbeat_timeout,
                    new_atoms=[AtomRef(traj_id=traj_of(a), atom_id=a) for a in commit.new],
                    scored_atoms=[AtomRef(traj_id=traj_of(a), atom_id=a) for a in commit.atoms],
                ),
                start_to_close_timeout=timedelta(minutes=2),
                retry_policy=STEP_RETRY,
                summary=f"route atoms · {d.traj_id}",
            )
        status = "committed" if commit.committed else "stale"
        if commit.committed and not rendered.lanes:
            status = "empty"
        self._at(
            "done",
            f"{d.label()}\n\n{status}: {len(commit.atoms)} atom file(s) written"
            + (f" ({commit.reason})" if commit.reason else ""),
        )
        return DeltaResult(
            key=d.key,
            status=status,
            atoms=commit.atoms,
            split_by=split.split_by if split else "",
            note=commit.reason or (split.note if split else ""),
        )

    def _at(self, step: str, details: str) -> None:
        self.step = step
        workflow.set_current_details(details)


@workflow.defn(name="SkillsScanWorkflow")
class SkillsScanWorkflow:
    """One watcher tick: scan, then a child workflow per delta (bounded concurrency)."""

    def __init__(self) -> None:
        self.totals = SkillsScanResult()
        self.heartbeat_timeout = 60.0

    @workflow.query(
        description="Counts so far: deltas, committed, stale, duplicate, failed, atoms."
    )
    def counts(self) -> SkillsScanResult:
        return self.totals

    @workflow.run
    async def run(self, inp: SkillsScanInput) -> SkillsScanResult:
        self.totals = inp.totals.model_copy() if inp.totals else SkillsScanResult()
        self.heartbeat_timeout = inp.heartbeat_timeout
        rounds = inp.rounds_done
        while True:
            scan: ScanResult = await workflow.execute_activity(
                "scan_transcripts",
                inp.scan,
                result_type=ScanResult,
                start_to_close_timeout=timedelta(minutes=5),
                retry_policy=RetryPolicy(maximum_attempts=3),
                summary="scan transcripts",
            )
            rounds += 1
            self.totals.rounds = rounds
            self.totals.problems = list(dict.fromkeys(self.totals.problems + scan.problems))[:20]
            workflow.set_current_details(self._details(scan))
            await self._process(scan.deltas, inp.concurrency)
            if scan.remaining == 0 or rounds >= inp.max_rounds:
                break
            if (
                workflow.info().is_continue_as_new_suggested()
                or rounds - inp.rounds_done >= inp.rounds_per_run
            ):
                workflow.continue_as_new(
                    inp.model_copy(update={"rounds_done": rounds, "totals": self.totals})
                )
        workflow.set_current_details(self._details(None))
        return self.totals

    async def _process(self, deltas: list[DeltaRef], concurrency: int) -> None:
        pending: list[asyncio.Task[None]] = []  # a list, not a set: iteration order must replay
        for delta in deltas:
            while len(pending) >= concurrency:
                await workflow.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                pending = [t for t in pending if not t.done()]
            pending.append(asyncio.create_task(self._one(delta)))
        if pending:
            await workflow.wait(pending)

    async def _one(self, delta: DeltaRef) -> None:
        self.totals.deltas += 1
        try:
            handle = await workflow.start_child_workflow(
                SkillDeltaWorkflow.run,
                DeltaInput(delta=delta, heartbeat_timeout=self.heartbeat_timeout),
                id=delta_workflow_id(delta),
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
                parent_close_policy=ParentClosePolicy.ABANDON,
                static_summary=delta.label(),
                execution_timeout=timedelta(hours=2),
            )
        except WorkflowAlreadyStartedError:
            self.totals.duplicate += 1  # another tick has (or had) this exact delta
            return
        try:
            result = await handle
        except ChildWorkflowError as e:
            self.totals.failed += 1
            cause = (
                e.cause.message if e.cause is not None and hasattr(e.cause, "message") else str(e)
            )
            self.totals.problems = (self.totals.problems + [f"{delta.label()}: {cause}"])[-20:]
            return
        if result.status == "committed":
            self.totals.committed += 1
        elif result.status == "stale":
            self.totals.stale += 1
        else:
            self.totals.empty += 1
        self.totals.atoms += len(result.atoms)

    def _details(self, scan: ScanResult | None) -> str:
        t = self.totals
        lines = [
            f"**skills scan** · round {t.rounds}",
            f"deltas {t.deltas} · committed {t.committed} · atoms {t.atoms} · duplicate {t.duplicate} · "
            f"stale {t.stale} · failed {t.failed}",
        ]
        if scan is not None:
            lines.append(
                f"last scan: {scan.files} files, {scan.changed} changed, {scan.new_files} new, "
                f"{scan.waiting} waiting on a partial line, {scan.remaining} left for the next round"
            )
        lines += [f"- ⚠ {p}" for p in t.problems[:5]]
        return "\n".join(lines)
