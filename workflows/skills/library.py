"""The library entity workflow (``xsky-skills-library``): where each new atom goes, one at a time.

New atoms arrive by the ``cluster`` signal (signal-with-start from the atom pipeline,
after a delta's commit). For each, TaskClusterAgent decides — add to a skill's
candidates, a new baby skill, a rename, a move, or skip — and an activity applies the
decision (folders, git, and signals to the skills' entity workflows) and records it.
Catalogue-changing decisions are thereby serialised: two atoms cannot create the same
skill twice or race a rename. Recent decisions are queryable; long runs continue as new
with the queue.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

from workflows.failures import describe_failure

with workflow.unsafe.imports_passed_through():
    from xsky.skills.clustering import ClusterDecision
    from xsky.skills.models import (
        ApplyDecision,
        AtomRef,
        ClusterOutcome,
        ClusterRequest,
        LibraryInput,
    )

KEEP_RECENT = 100
KEEP_SEEN = 5000
PER_RUN = 300  # atoms handled before continuing as new
RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=6,
)


@workflow.defn(name="SkillLibraryWorkflow")
class SkillLibraryWorkflow:
    def __init__(self) -> None:
        self.queue: list[AtomRef] = []
        self.seen: list[str] = []
        self.recent: list[ClusterDecision] = []
        self.totals: dict[str, int] = {}

    @workflow.signal(
        description='New atoms to place in the library: {"atoms": [{"trajId": …, "atomId": …}]}.'
    )
    def cluster(self, req: ClusterRequest) -> None:
        queued = {a.atom_id for a in self.queue}
        for atom in req.atoms:
            if atom.atom_id not in queued and atom.atom_id not in self.seen:
                self.queue.append(atom)
                queued.add(atom.atom_id)

    @workflow.query(description="The most recent decisions (newest last).")
    def decisions(self) -> list[ClusterDecision]:
        return self.recent

    @workflow.query(description="Atoms waiting to be clustered, and counts of decisions by action.")
    def backlog(self) -> dict[str, int]:
        return {"queued": len(self.queue), **self.totals}

    @workflow.run
    async def run(self, inp: LibraryInput) -> None:
        self.seen, self.recent, self.totals = list(inp.seen), list(inp.recent), dict(inp.totals)
        self.cluster(ClusterRequest(atoms=inp.queue))
        handled = 0
        while True:
            await workflow.wait_condition(lambda: bool(self.queue))
            atom = self.queue.pop(0)
            try:
                outcome: ClusterOutcome = await workflow.execute_activity(
                    "cluster_atom",
                    atom,
                    result_type=ClusterOutcome,
                    start_to_close_timeout=timedelta(minutes=10),
                    heartbeat_timeout=timedelta(seconds=inp.heartbeat_timeout),
                    retry_policy=RETRY,
                    summary=f"TaskClusterAgent · {atom.atom_id}",
                )
            # e.g. the model refused the key: this atom is skipped, the library goes on
            except ActivityError as e:
                outcome = ClusterOutcome(
                    decisions=[
                        ClusterDecision(
                            action="skip",
                            atom_id=atom.atom_id,
                            traj_id=atom.traj_id,
                            reason=f"TaskClusterAgent failed: {describe_failure(e)}",
                        )
                    ]
                )
            for decision in outcome.decisions:
                try:
                    await workflow.execute_activity(
                        "apply_decision",
                        ApplyDecision(decision=decision, heartbeat_timeout=inp.heartbeat_timeout),
                        start_to_close_timeout=timedelta(minutes=5),
                        retry_policy=RETRY,
                        summary=f"{decision.action} · {decision.skill or ''} · {decision.atom_id}",
                    )
                except ActivityError as e:
                    decision = decision.model_copy(
                        update={"reason": f"{decision.reason} — NOT APPLIED: {describe_failure(e)}"}
                    )
                    self.totals["failed"] = self.totals.get("failed", 0) + 1
                self.recent = (self.recent + [decision])[-KEEP_RECENT:]
                self.totals[decision.action] = self.totals.get(decision.action, 0) + 1
            self.seen = (self.seen + [atom.atom_id])[-KEEP_SEEN:]
            handled += 1
            workflow.set_current_details(self._details())
            if handled >= PER_RUN or workflow.info().is_continue_as_new_suggested():
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(
                    LibraryInput(
                        queue=self.queue,
                        heartbeat_timeout=inp.heartbeat_timeout,
                        seen=self.seen,
                        recent=self.recent,
                        totals=self.totals,
                    )
                )

    def _details(self) -> str:
        counts = " · ".join(f"{k} {v}" for k, v in sorted(self.totals.items()))
        lines = [f"**skill library** · {len(self.queue)} atoms queued · {counts}"]
        lines += [
            f"- {d.action} {d.skill or ''} ← {d.atom_id} (w {d.weightscore}, {d.by}): {d.reason[:100]}"
            for d in self.recent[-8:]
        ]
        return "\n".join(lines)
