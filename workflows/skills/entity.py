"""One entity workflow per skill (``xsky-skill-<slug>``): its candidates, its edits, its canary.

Every change to a skill goes through here, one at a time, so concurrent atoms never race
on its ``.candidates.yml``:

- ``add_candidates`` (signal, from the library) appends atoms with their weightscores;
  ``remove_candidate`` / ``retire`` (updates, from the library's move and rename);
- when the pending candidates' cumulative weightscore reaches 10, SkillEditAgent runs —
  guarded as the seed says: never while a staging version exists, and on ``main`` only
  once ``main`` has at least one real UX score. Until the first version, the founding
  atom's own weight does not count (one atom never publishes a skill). A failed edit
  leaves the candidates in place with the reason, and waits for more weight before trying
  again; so does a *draft* (no model: the skill stays on ``baby``, nothing is published);
- ``record_scores`` (signal, from the atom pipeline) binds UX scores to (side, commit),
  one per trajectory and side; the canary rule (:mod:`xsky.skills.canary`) promotes or discards
  staging — or a person does, with ``decide`` — and a staging version with no decision
  after 14 days is discarded. Each is a git operation whose message cites the figures.
- the paired test (patch ``paired-test``): a version SkillEditAgent writes is tested with and
  without it on atoms held out of the edit (:mod:`xsky.skills.paired`) before anything else: a
  first version stays on ``baby`` until it beats no skill, a staging version that does not
  beat ``main`` is discarded, and the live canary never promotes a version without a paired
  test it passed (a person's ``skills promote`` still can: it is their explicit decision).

The Web UI's current details show the branch, cumulative weightscore, pending atoms,
canary counts and means. Long histories continue as new with the whole state.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta
from typing import Literal, TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

from workflows.failures import describe_failure
from workflows.patches import patched

with workflow.unsafe.imports_passed_through():
    from xsky.skills import canary
    from xsky.skills.canary_window import CanaryExported
    from xsky.skills.models import (
        EDIT_THRESHOLD,
        KEEP_CONSUMED,
        KEEP_EVENTS,
        AddCandidates,
        CanaryVerdict,
        Candidate,
        CandidatesFile,
        EditInput,
        EditResult,
        GitAction,
        GitResult,
        PairedInput,
        PublishFirst,
        RecordScores,
        RemoveCandidate,
        RetireRequest,
        Score,
        SkillEntityInput,
        SkillEntityState,
        SkillEvent,
        SkillView,
        edit_weight,
    )
    from xsky.skills.paired import PairedResult, kind_label, not_run

SHORT = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=6,
)
EDIT_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=2), maximum_interval=timedelta(minutes=2), maximum_attempts=5
)
HISTORY_LIMIT = 2000  # events before handing over to a fresh run
# or bytes of history (each state write carries the state; Temporal's limit is 50 MB)
HISTORY_BYTES = 8 * 1024 * 1024
R = TypeVar("R")  # what an agent step returns


@workflow.defn(name="SkillEntityWorkflow")
class SkillEntityWorkflow:
    def __init__(self) -> None:
        self.s = SkillEntityState(slug="")
        self.dirty = False
        self.verdict: CanaryVerdict | None = None
        self.retiring: str | None = None
        self.ready = False
        self.paired_gate = False  # set at the start of a run by the patch "paired-test"

    # -- messages ------------------------------------------------------------------------------

    @workflow.signal(
        description="Atoms for this skill, each with a weightscore 0-10 and a reason (from the library)."
    )
    async def add_candidates(self, req: AddCandidates) -> None:
        await workflow.wait_condition(lambda: self.ready)
        known = {c.atom_id for c in self.s.candidates}
        for c in req.candidates:
            if c.atom_id not in known:
                self.s.candidates.append(
                    c.model_copy(update={"added_at": c.added_at or self._now()})
                )
                known.add(c.atom_id)
                # the reason stays in its note file: it may quote the transcript
                founding = " (founding)" if c.founding else ""
                self._event("candidate", f"{c.atom_id} weight {c.weightscore}{founding}")
                self.dirty = True

    @workflow.signal(
        description="UX scores of trajectories that used this skill, bound to (side, commit)."
    )
    async def record_scores(self, req: RecordScores) -> None:
        await workflow.wait_condition(lambda: self.ready)
        for score in req.scores:
            current = self.s.staging_commit if score.side == "staging" else self.s.main_commit
            if current is None or score.commit != current:
                continue  # a score for a version no longer compared
            kept = [
                x
                for x in self.s.scores
                if not (
                    x.traj_id == score.traj_id and x.side == score.side and x.commit == score.commit
                )
            ]
            self.s.scores = kept + [score.model_copy(update={"at": score.at or self._now()})]
            self.dirty = True
        self._prune_scores()

    @workflow.signal(
        description="`skills export --canary` first showed this staging version then: its 14 days count from then."
    )
    async def canary_exported(self, req: CanaryExported) -> None:
        await workflow.wait_condition(lambda: self.ready)
        started = self.s.staging_started_at
        # Only ever later (a re-sent or stale signal cannot shorten the canary), and only for
        # the version under canary now; the exporter re-sends it at every run, so a restarted
        # entity, which reads the commit's time, hears it again.
        if req.staging_commit != self.s.staging_commit or started is None:
            return
        if datetime.fromisoformat(req.at) > datetime.fromisoformat(started):
            self.s.staging_started_at = req.at
            self._event("canary", f"exported under canary since {req.at[:19]}: 14 days from then")
            self.dirty = True

    @workflow.update(
        description="Take an atom out of the candidates (it moves to another skill); returns it, or null."
    )
    async def remove_candidate(self, req: RemoveCandidate) -> Candidate | None:
        await workflow.wait_condition(lambda: self.ready)
        found = next(
            (c for c in self.s.candidates if c.atom_id == req.atom_id and c.status == "pending"),
            None,
        )
        if found is not None:
            self.s.candidates = [c for c in self.s.candidates if c is not found]
            self._event("moved", f"{req.atom_id} moved to another skill")
            self.dirty = True
        return found

    @remove_candidate.validator
    def _check_remove_candidate(self, req: RemoveCandidate) -> None:
        """Refuses nothing a well-formed call asks (an atom not among the candidates is answered
        null), but a validator is where a call sent without its input is refused before it is
        accepted (workflows/missing_input.py; the SDK asks an interceptor only of updates with
        one): without it such a call failed the entity's workflow task after acceptance
        (review17). Validators run for new requests only, never on replay: no patch."""

    @workflow.update(
        description="End this entity: the baby skill was renamed; returns its candidates for the new name."
    )
    async def retire(self, req: RetireRequest) -> list[Candidate]:
        await workflow.wait_condition(lambda: self.ready)
        # (the validator lets a call through before the skill is read: checked again once it is)
        if self.s.state != "baby" and patched("skill-updates-wait-for-their-skill"):
            raise ApplicationError(_not_baby(self.s.slug, self.s.state))
        self.retiring = req.renamed_to
        return [c for c in self.s.candidates if c.status == "pending"]

    @retire.validator
    def _check_retire(self, req: RetireRequest) -> None:
        if self.ready and self.s.state != "baby":
            raise ApplicationError(_not_baby(self.s.slug, self.s.state))

    @workflow.update(
        description='A person\'s canary decision: {"verdict": "promote"|"discard", "by": "…", "reason": "…"}.'
    )
    async def decide(self, req: CanaryVerdict) -> str:
        # A verdict sent just after something started this entity (a scores signal) arrives
        # before the entity has read its skill from git: the validator lets it through, and it is
        # judged here once the skill is read — it was refused as "has no staging version" (with
        # no name) though git had one. Executions before the patch never accepted a verdict then.
        if not self.ready and patched("skill-updates-wait-for-their-skill"):
            await workflow.wait_condition(lambda: self.ready)
            if not self.s.staging_commit:
                raise ApplicationError(_no_staging(self.s.slug, req.verdict))
        self.verdict = req
        await workflow.wait_condition(lambda: self.verdict is None)
        return self.s.events[-1].text if self.s.events else "done"

    @decide.validator
    def _check_decide(self, req: CanaryVerdict) -> None:
        if self.ready and not self.s.staging_commit:
            raise ApplicationError(_no_staging(self.s.slug, req.verdict))

    @workflow.query(description="Branch, candidates, canary counts and means, the last events.")
    def view(self) -> SkillView:
        main, staging = self._canary_scores()
        return SkillView(
            slug=self.s.slug,
            state=self.s.state,
            main_commit=self.s.main_commit,
            staging_commit=self.s.staging_commit,
            pending_weight=self._pending_weight(),
            pending=[c for c in self.s.candidates if c.status == "pending"],
            consumed=sum(1 for c in self.s.candidates if c.status == "consumed"),
            canary={
                "n_main": len(main),
                "n_staging": len(staging),
                "mean_main": _mean(main),
                "mean_staging": _mean(staging),
            },
            decision=self._decision().message() if self.s.staging_commit else "no staging version",
            last_edit_error=self.s.last_edit_error,
            events=self.s.events[-20:],
            paired=self.s.paired,
        )

    # -- the loop --------------------------------------------------------------------------------

    @workflow.run
    async def run(self, inp: SkillEntityInput) -> str:
        self.beat = timedelta(seconds=inp.heartbeat_timeout)
        # executions begun before the paired test replay without it (no marker in their history)
        self.paired_gate = patched("paired-test")
        if inp.state is not None:
            self.s = inp.state
        else:
            self.s = await workflow.execute_activity(
                "load_skill_state",
                inp,
                result_type=SkillEntityState,
                start_to_close_timeout=timedelta(minutes=2),
                retry_policy=SHORT,
                summary=f"load {inp.slug}",
            )
        self.ready = True
        self._publish()
        while True:
            try:
                await workflow.wait_condition(
                    lambda: (
                        self.dirty
                        or self.verdict is not None
                        or self.retiring is not None
                        or self._edit_due()
                        or self._decision().verdict != "wait"
                    ),
                    timeout=self._until_expiry(),
                )
            except TimeoutError:
                pass  # the staging version's 14 days are up: the decision below discards it
            if self.dirty:
                await self._persist()
            if self.retiring is not None:
                self.s.state, self.s.retired_to = "retired", self.retiring
                self._event("renamed", f"renamed to {self.retiring}")
                await self._persist()
                await workflow.wait_condition(workflow.all_handlers_finished)
                return f"renamed to {self.retiring}"
            if self.verdict is not None:
                await self._canary(
                    self.verdict.verdict,
                    f"{self.verdict.verdict}d by {self.verdict.by}"
                    + (f": {self.verdict.reason}" if self.verdict.reason else ""),
                )
                self.verdict = None
            elif self.s.staging_commit and self._decision().verdict != "wait":
                decision = self._decision()
                await self._canary(decision.verdict, decision.message())
            if self._edit_due():
                await self._edit()
            info = workflow.info()
            if (
                info.get_current_history_length() > HISTORY_LIMIT
                or info.get_current_history_size() > HISTORY_BYTES
                or info.is_continue_as_new_suggested()
            ):
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(
                    SkillEntityInput(
                        slug=self.s.slug, state=self.s, heartbeat_timeout=inp.heartbeat_timeout
                    )
                )

    # -- edits -------------------------------------------------------------------------------------

    def _pending(self) -> list[Candidate]:
        return [c for c in self.s.candidates if c.status == "pending"]

    def _pending_weight(self) -> int:
        """The weight toward the next edit (without the founding atom's before the first)."""
        return edit_weight(self.s.candidates, self.s.state)

    def _edit_due(self) -> bool:
        if not self.ready or self.s.state == "retired" or self.s.staging_commit:
            return False
        weight = self._pending_weight()
        if weight < EDIT_THRESHOLD or (
            self.s.blocked_at_weight is not None and weight <= self.s.blocked_at_weight
        ):
            return False
        if self.s.state == "main" and not any(
            x.side == "main" and x.commit == self.s.main_commit for x in self.s.scores
        ):
            return False  # the seed's guard: main must have been used (a real UX score) before a new candidate
        return True

    async def _edit(self) -> None:
        batch = self._pending()
        ids = ",".join(sorted(c.atom_id for c in batch))
        edit_id = hashlib.sha256(f"{self.s.slug}:{self.s.main_commit}:{ids}".encode()).hexdigest()[
            :16
        ]
        branch: Literal["baby", "main"] = "baby" if self.s.state == "baby" else "main"
        try:
            result = await self._agent_step(
                "edit",
                f"SkillEditAgent on {branch}: {len(batch)} atoms, weight {self._pending_weight()}",
                "edit_skill",
                EditInput(
                    slug=self.s.slug,
                    branch=branch,
                    base_commit=self.s.main_commit,
                    candidates=batch,
                    edit_id=edit_id,
                    version=self.s.edits + 1,
                    paired=self.paired_gate,
                ),
                EditResult,
                f"SkillEditAgent · {self.s.slug}",
            )
        # retries exhausted (the model server down, a bug): like a refused edit
        except ActivityError as e:
            result = EditResult(ok=False, message=f"SkillEditAgent failed: {describe_failure(e)}")
        if result.ok and result.draft:
            # No model: a draft on baby at most; the candidates wait for the model's edit.
            self.s.blocked_at_weight = self._pending_weight()
            self.s.last_edit_error = None
            self._event("draft", result.message[:300])
        elif not result.ok:
            self.s.failed_edits += 1
            self.s.last_edit_error = result.message + ("".join(f"\n- {p}" for p in result.problems))
            self.s.blocked_at_weight = self._pending_weight()
            self._event(
                "edit failed",
                self.s.last_edit_error[:300] + " — the candidates stay; more weight retries",
            )
        elif self.paired_gate and result.branch == "baby":
            await self._first_version(batch, result)
        else:
            self._consume(batch, result.commit)
            if result.branch == "main":
                self.s.state, self.s.main_commit = "main", result.commit
                self._event(
                    "main",
                    f"first version on main {result.commit[:10] if result.commit else ''} ({result.by})",
                )
            else:
                self.s.staging_commit, self.s.staging_started_at = result.commit, self._now()
                self._event(
                    "staging",
                    f"candidate {result.commit[:10] if result.commit else ''} on staging, under canary ({result.by})",
                )
                if self.paired_gate:
                    await self._test_staging(result)
        self.dirty = True
        await self._persist()

    def _consume(self, batch: list[Candidate], commit: str | None) -> None:
        consumed = {c.atom_id for c in batch}
        for c in self.s.candidates:
            if c.atom_id in consumed:
                c.status, c.commit = "consumed", commit
        self._trim_consumed()
        self.s.edits += 1
        self.s.last_edit_error, self.s.blocked_at_weight = None, None

    async def _agent_step(
        self, kind: str, said: str, name: str, arg: object, result_type: type[R], summary: str
    ) -> R:
        """A model's long step (an edit, a paired test), said on the view first: up to 30
        minutes, heartbeating, retried as an edit is."""
        self._event(kind, said)
        self._publish()
        result: R = await workflow.execute_activity(
            name,
            arg,
            result_type=result_type,
            start_to_close_timeout=timedelta(minutes=30),
            heartbeat_timeout=self.beat,
            retry_policy=EDIT_RETRY,
            summary=summary,
        )
        return result

    # -- the paired test -----------------------------------------------------------------------

    async def _paired(self, result: EditResult, branch: Literal["baby", "staging"]) -> PairedResult:
        baseline = self.s.main_commit if branch == "staging" else None
        commit = result.commit or ""
        try:
            paired = await self._agent_step(
                "paired",
                f"paired test of {commit[:10]} against {baseline[:10] if baseline else 'no skill'}",
                "paired_test",
                PairedInput(
                    slug=self.s.slug,
                    branch=branch,
                    commit=commit,
                    baseline=baseline,
                    held_out=result.held_out,
                ),
                PairedResult,
                f"paired test · {self.s.slug}",
            )
        except ActivityError as e:  # never a reason to publish: said as a test that did not run
            paired = not_run(
                commit,
                f"main {baseline[:10]}" if baseline else "no skill",
                f"the paired test failed: {describe_failure(e)}",
            )
        self.s.paired = paired
        self._event("paired", paired.line()[:300])
        return paired

    async def _first_version(self, batch: list[Candidate], result: EditResult) -> None:
        """A first version is published (baby → main) only when it beats no skill."""
        paired = await self._paired(result, "baby")
        main: str | None = None
        if paired.passed:
            try:
                main = await workflow.execute_activity(
                    "publish_first",
                    PublishFirst(
                        slug=self.s.slug, commit=paired.record_commit or result.commit or ""
                    ),
                    result_type=str,
                    start_to_close_timeout=timedelta(minutes=2),
                    retry_policy=SHORT,
                    summary=f"publish · {self.s.slug}",
                )
            except ActivityError as e:
                self._event("publish failed", describe_failure(e))
        if main is None:
            self.s.blocked_at_weight = self._pending_weight()
            self.s.last_edit_error = f"not published: {paired.line()}"
            self._event(
                "not published", f"{paired.line()[:240]} — stays on baby; more weight retries"
            )
            return
        self._consume(batch, main)
        self.s.state, self.s.main_commit = "main", main
        self._event("main", f"first version on main {main[:10]} ({result.by}): beat no skill")

    async def _test_staging(self, result: EditResult) -> None:
        """A staging version that does not beat main is discarded before any canary."""
        paired = await self._paired(result, "staging")
        if paired.record_commit and paired.version == self.s.staging_commit:
            self.s.staging_commit = paired.record_commit
        if not paired.passed:
            await self._canary(
                "discard", f"it did not beat main in its paired test: {paired.line()}"
            )

    def _paired_passed(self) -> bool:
        p = self.s.paired
        return p is not None and p.passed and p.record_commit == self.s.staging_commit

    def _trim_consumed(self) -> None:
        consumed = [c for c in self.s.candidates if c.status == "consumed"]
        if len(consumed) > KEEP_CONSUMED:
            drop = {c.atom_id for c in consumed[: len(consumed) - KEEP_CONSUMED]}
            self.s.candidates = [c for c in self.s.candidates if c.atom_id not in drop]

    # -- the canary ----------------------------------------------------------------------------------

    def _canary_scores(self) -> tuple[list[float], list[float]]:
        main = [
            float(x.score)
            for x in self.s.scores
            if x.side == "main" and x.commit == self.s.main_commit
        ]
        staging = [
            float(x.score)
            for x in self.s.scores
            if x.side == "staging" and x.commit == self.s.staging_commit
        ]
        return main, staging

    def _live_scores(self) -> list[Score]:
        live = {("main", self.s.main_commit), ("staging", self.s.staging_commit)}
        return [x for x in self.s.scores if (x.side, x.commit) in live]

    def _decision(self) -> canary.Decision:
        if not self.ready or not self.s.staging_commit:
            return canary.Decision("wait", "no staging version")
        main, staging = self._canary_scores()
        started = (
            datetime.fromisoformat(self.s.staging_started_at) if self.s.staging_started_at else None
        )
        decision = canary.decide(main, staging, started, workflow.now())
        if self.paired_gate and decision.verdict == "promote" and not self._paired_passed():
            return canary.Decision(
                "wait",
                "the live canary would promote it, but it has no paired test it passed: it is "
                "not promoted (a person may still `skills promote` it)",
                decision.figures,
            )
        return decision

    def _until_expiry(self) -> timedelta | None:
        if not self.ready or not self.s.staging_commit or not self.s.staging_started_at:
            return None
        left = datetime.fromisoformat(self.s.staging_started_at) + canary.MAX_AGE - workflow.now()
        return max(left, timedelta(seconds=1))

    async def _canary(self, action: str, why: str) -> None:
        staging = self.s.staging_commit
        if staging is None:
            return
        main, stag = self._canary_scores()
        figures = f"main n={len(main)} mean={_fmt(_mean(main))}; staging n={len(stag)} mean={_fmt(_mean(stag))}"
        if self.paired_gate:  # every score says how it was made
            figures += f" (UX scores: {kind_label([x.by for x in self._live_scores()])})"
            if self.s.paired is not None:
                figures += f"; {self.s.paired.line()}"
        verb: Literal["promote", "discard"] = "promote" if action == "promote" else "discard"
        try:
            result: GitResult = await workflow.execute_activity(
                "canary_git",
                GitAction(
                    slug=self.s.slug,
                    action=verb,
                    staging_commit=staging,
                    message=f"{verb} staging {staging[:10]}: {why}\n\nFigures: {figures}",
                ),
                result_type=GitResult,
                start_to_close_timeout=timedelta(minutes=2),
                retry_policy=SHORT,
                summary=f"{verb} · {self.s.slug}",
            )
        except ActivityError as e:
            self._event(f"{verb} failed", f"{describe_failure(e)}; tried again at the next change")
            self._publish()
            return
        if verb == "promote":
            self.s.main_commit = result.main_commit
        self.s.staging_commit = self.s.staging_started_at = None
        self._prune_scores()
        self._event(verb, f"{why} [{figures}]")
        self.dirty = True
        await self._persist()

    # -- bookkeeping -----------------------------------------------------------------------------------

    async def _persist(self) -> None:
        self.dirty = False
        try:
            await workflow.execute_activity(
                "write_skill_state",
                CandidatesFile(state=self.s),
                start_to_close_timeout=timedelta(minutes=1),
                retry_policy=SHORT,
                summary=f"write .candidates.yml · {self.s.slug}",
            )
        # the state is safe in the workflow; the file catches up at the next change
        except ActivityError as e:
            self._event("write failed", describe_failure(e))
        self._publish()

    def _prune_scores(self) -> None:
        """Only scores of the versions being compared are kept (others can never count again)."""
        live = {self.s.main_commit, self.s.staging_commit} - {None}
        self.s.scores = [x for x in self.s.scores if x.commit in live][-2000:]

    def _publish(self) -> None:
        main, staging = self._canary_scores()
        pending = self._pending()
        lines = [
            f"**{self.s.slug}** · branch {self.s.state}"
            + (" + staging (canary)" if self.s.staging_commit else ""),
            f"cumulative weightscore {self._pending_weight()} / {EDIT_THRESHOLD} from {len(pending)} pending atoms",
            f"canary: main n={len(main)} mean {_fmt(_mean(main))} · staging n={len(staging)} mean {_fmt(_mean(staging))}",
        ]
        if self.paired_gate:
            lines[-1] += f" (UX scores: {kind_label([x.by for x in self._live_scores()])})"
            if self.s.paired is not None:
                lines.append(self.s.paired.line())
        if self.s.last_edit_error:
            lines.append(f"⚠ last edit failed: {self.s.last_edit_error[:200]}")
        lines += [f"- {e.at[:19]} {e.kind}: {e.text[:140]}" for e in self.s.events[-5:]]
        workflow.set_current_details("\n".join(lines))

    def _event(self, kind: str, text: str) -> None:
        self.s.events = (self.s.events + [SkillEvent(at=self._now(), kind=kind, text=text)])[
            -KEEP_EVENTS:
        ]

    @staticmethod
    def _now() -> str:
        return workflow.now().isoformat(timespec="seconds")


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 3) if values else None


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _no_staging(slug: str, verdict: str) -> str:
    return f"{slug} has no staging version to {verdict}"


def _not_baby(slug: str, state: str) -> str:
    return f"{slug} is published ({state}); only baby skills are renamed"
