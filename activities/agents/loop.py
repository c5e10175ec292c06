"""The LLM agent loop: role prompt + task, the role's tools, bounded iterations, checkpoints.

After every iteration (one model call and the tool calls it asked for) the conversation is
checkpointed to the artifact store, a heartbeat goes out and progress is reported to the
leader; a retried or restarted attempt resumes from the last checkpoint instead of asking
the model again. ``ask_user`` and tool calls that need approval end the attempt with a
``question`` / ``needs_approval`` outcome; the answer arrives with the next dispatch.
"""

from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING, Any, Literal

from temporalio import activity
from temporalio.client import WorkflowQueryFailedError
from temporalio.exceptions import ApplicationError

from activities import llm, metrics
from activities.agents import in_doubt
from activities.agents.attempt import Attempt
from activities.agents.checkpoint import Checkpoint
from activities.agents.spend import BudgetStop, Meter
from activities.agents.storage import patiently, stored
from activities.agents.transcripts import AgentLog, write_transcript
from activities.tools import NeedsHuman, ToolError, cap_text
from activities.tools.browsing import BrowserSession
from activities.tools.registry import IMPLEMENTATIONS, Session
from activities.tools.skills import SkillLibrary
from xsky.in_doubt import Doubt
from xsky.leader.stall import LoopDetector
from xsky.leader.state import DispatchNews, DispatchRequest, TaskRequest
from xsky.outcomes import model_answer
from xsky.plan import output_schema
from xsky.plan.models import RoleCapabilityModel, Step
from xsky.plan.steps import STEP_DONE, render_steps, step_done_tool, step_reached
from xsky.runs import AgentOutcome, RequestPayload
from xsky.security.tools import argument_problem, openai_tools

if TYPE_CHECKING:
    from activities.mcp.toolset import McpToolset

log = logging.getLogger("xsky.agent_loop")

DEFAULT_MAX_ITERATIONS = 20
TOOL_RESULT_CHARS = 30_000


def system_prompt(role: RoleCapabilityModel, run_goal: str | None, skills: SkillLibrary) -> str:
    parts = [role.system_prompt.strip()]
    bound = skills.listing(role.skill_names)
    if bound:
        parts.append(f"Skills you can read with read_skill:\n{bound}")
    if run_goal:
        parts.append(f"The goal of the whole run, which your task serves: {run_goal}")
    return "\n\n".join(p for p in parts if p)


def first_user_message(task: str, input_text: str | None, steps: list[Step] | None = None) -> str:
    text = f"Your task:\n{task}"
    if steps:  # its plan, and how it says where it is in it (step_done: the board shows it)
        text += "\n\n" + render_steps(steps)
        text += f"\n\nWhen you finish a step, call {STEP_DONE} with its number."
    if input_text:
        text += f"\n\nInput:\n{input_text}"
    return text


async def run_model(a: Attempt) -> AgentOutcome:
    """An LLM agent's attempt (``a.target`` is its model): the loop under heartbeats, its
    transcript kept once it ends (for the skill pipeline). A completed one carries its answer
    in ``result``."""
    role, target = a.role, a.target
    assert target is not None, "run_model runs an attempt that has a model (Attempt.target)"
    if role is None:
        raise ApplicationError(
            f"agent {a.key.agent_id}: no role named {a.name!r}",
            type="AgentConfigError",
            non_retryable=True,
        )
    loop = AgentLoop(a, role, target)
    async with a.beat.running():
        try:
            outcome = await loop.run()
        except ApplicationError as e:
            if e.non_retryable:
                await loop.keep_transcript("failed", e.message)
            raise
    if outcome.kind == "completed":
        await loop.keep_transcript("completed")
    outcome.started_at = a.started
    outcome.artifacts = a.ctx.artifacts
    return outcome


def observed(
    detector: LoopDetector, cp: Checkpoint, call: dict[str, Any], args: dict[str, Any]
) -> Literal["nudge", "stop"] | None:
    """The loop detector's word on ``call``, the checkpoint told where it stands. A call the
    attempt runs again as it resumes — after a question, an approval, a lost worker: the same
    call of the same model turn — is not one more repeat by the model: counted again, the
    third resume of one call told the model "you have made this same call 3 times in a row"
    (the MCP recovery test saw it under load)."""
    at = f"{cp.iteration}:{call['id']}"
    if at == cp.last_call_at:
        return None
    verdict = detector.observe(call["name"], args)
    cp.last_call, cp.repeats, cp.last_call_at = detector._last, detector.repeats, at
    return verdict


class AgentLoop:
    """One attempt's conversation with the model, from the attempt's prepared context."""

    def __init__(self, a: Attempt, role: RoleCapabilityModel, target: llm.LLMTarget):
        self.a = a
        self.role = role
        self.target = target
        self.ctx = a.ctx
        self.beat = a.beat
        self.gate = a.gate
        self.checkpoints = a.checkpoints
        self.config = a.config
        self.browser = BrowserSession(a.ctx)
        self.tool_names = list(dict.fromkeys(role.allowed_tools + role.requested_tools))
        self.mcp: McpToolset | None = None  # the tools of MCP servers, once discovered
        self.log = AgentLog(a.log, a.key, a.number, role.name, target.model, a.gate.decisions)
        self.schema = output_schema.output_schema(a.config)
        # before any model call: a USD budget with an unpriced model fails here
        self.meter = Meter(a.share, a.prices, target.model, a.key.dispatch_key, a.settings_file)
        self._news = True  # the leader answers dispatch_news (one older than it does not)
        self.cp: Checkpoint | None = None
        # The call the checkpoint this attempt resumed from says may have been running.
        self.doubtful: str | None = None
        self.kept = False  # its outcome kept already, with its final answer (_fold)

    async def keep_transcript(self, status: str, error: str | None = None) -> None:
        """The finished conversation, for the skill pipeline (best effort: the run goes on
        without it): a completed one as the loop holds it (saved just before it returned), any
        other as it was last checkpointed."""
        a = self.a
        try:
            cp = self.cp if status == "completed" and self.cp is not None else await self._load()
        # (best effort: a store failing here must not take the place of the attempt's own end)
        except Exception as e:  # noqa: BLE001 - any store's error, or the wait's StorageError
            log.warning("could not read the transcript of %s: %s", a.key.task_id, e)
            return
        if cp is None:
            return
        try:
            write_transcript(
                a.transcripts,
                a.key,
                self.role,
                self.target.model,
                self.checkpoints.name.removesuffix(".json"),
                cp.messages,
                status,
                error,
                {"skills": a.skills.versions(self.role.skill_names)},
            )
        except OSError as e:
            logging.getLogger("xsky.agents").warning(
                "could not write the transcript of %s: %s", a.key.task_id, e
            )

    # -- the loop ----------------------------------------------------------------------------

    async def run(self) -> AgentOutcome:
        client = llm.client_for(self.target)
        try:
            outcome = await self._run(client)
            return outcome if self.kept else self._ended(outcome)
        except ApplicationError as e:
            self.log.outcome("failed", error=e.message)
            # Keep the permission decisions made before the failure for the run's audit log.
            raise ApplicationError(
                e.message,
                *e.details,
                self.gate.details(),
                type=e.type,
                non_retryable=e.non_retryable,
            ) from None
        finally:
            await self._flush_checkpoint()
            # Before the attempt reports (and its workspace is snapshotted): its stdio MCP
            # servers, and whatever they started, end with it.
            if self.mcp is not None:
                await self.mcp.release()
            await self.browser.close()
            await client.close()

    def _ended(self, outcome: AgentOutcome) -> AgentOutcome:
        """What the conversation used and the gate decided, in the outcome; its log line."""
        outcome.usage = self.meter.report(self.cp) if self.cp is not None else None
        outcome.decisions = self.gate.decisions
        request = outcome.request.question or outcome.request.tool if outcome.request else None
        self.log.outcome(
            outcome.kind,
            tokens=outcome.tokens,
            iterations=outcome.iterations,
            result=outcome.result,
            request=request,
        )
        return outcome

    async def _fold(self, cp: Checkpoint, answer: str) -> AgentOutcome:
        """The final answer kept with the attempt's outcome, in one write (issue 37: a model
        agent of three answers made four, its last answer saved twice — in its checkpoint, then
        in the outcome kept right after). At the very place its own save was: a retry of the
        dispatch finds the outcome and returns it, the model unasked; a later dispatch reads
        the conversation through the saved checkpoint, which names the outcome
        (Checkpoints.load). Should the outcome not be kept, the conversation is saved as the
        attempt ends (unfold, then the ``finally``'s flush): a retry completes with it."""
        assert self.a.keep is not None
        outcome = self._ended(
            AgentOutcome(
                result=answer, tokens=cp.tokens, iterations=cp.iteration, provider=self.target.model
            )
        )
        conversation = self.checkpoints.fold(cp)
        try:
            kept = await self.a.keep(outcome, conversation)
        except ApplicationError as e:
            # Another attempt of the dispatch kept its outcome first (its retry: this one was
            # stopped): the next attempt returns that one, and this conversation is not saved
            # after all — a fold moves no checkpoint version, so nothing would refuse it.
            if e.type != "CheckpointMoved":
                self.checkpoints.unfold(cp)
            raise
        except BaseException:
            self.checkpoints.unfold(cp)
            raise
        self.kept = True
        self._completed(cp, answer)  # (the board's figures; the answer is kept by now)
        return kept

    # The checkpoint's store calls go through a thread, heartbeating (activities/agents/storage.py):
    # made on the event loop, a slow or paused object store held up every attempt of the
    # worker — their heartbeats, its leader's workflow tasks — until the server took them all
    # for lost and their commands' watchdogs killed them (issue 37).
    async def _save(self, cp: Checkpoint) -> None:
        await stored(
            self.beat, self.a.store.where, "the checkpoint", lambda: self.checkpoints.save(cp)
        )

    async def _later(self, cp: Checkpoint) -> None:
        await stored(
            self.beat, self.a.store.where, "the checkpoint", lambda: self.checkpoints.later(cp)
        )

    async def _load(self) -> Checkpoint | None:
        return await stored(
            self.beat, self.a.store.where, "the checkpoint", self.checkpoints.load, verb="read"
        )

    async def _flush_checkpoint(self) -> None:
        """The answers that waited for a save, saved as the attempt ends (failed, stopped,
        cancelled: a paused agent resumes from here, and the failure's transcript shows them)."""
        try:
            await patiently(self.beat, self.a.store.where, "the checkpoint", self.checkpoints.flush)
        # Any store's error (S3's are not OSErrors): raised here, in the loop's ``finally``, it
        # would take the place of the attempt's own end — its real error, or its outcome — and
        # what waited are answers of calls that may run again.
        except Exception as e:  # noqa: BLE001
            log.warning("could not save the checkpoint of %s: %s", self.a.key.task_id, e)

    async def _run(self, client: Any) -> AgentOutcome:
        cp = await self._load() if self.a.resume else None
        if cp is None:
            cp = Checkpoint(
                messages=[
                    {
                        "role": "system",
                        "content": system_prompt(self.role, self.a.goal, self.a.skills),
                    },
                    {"role": "user", "content": self._first_message()},
                ]
            )
            for m in cp.messages:
                self.log.message(m)
        elif cp.steps_done and self.a.steps:
            total = len(self.a.steps)
            at = min(cp.steps_done + 1, total)
            self.beat.progress(f"resuming at step {at} of {total} from the checkpoint")
            self.log.event("resumed", iteration=cp.iteration, step=at)
        else:
            self.beat.progress(f"resuming at iteration {cp.iteration + 1} from the checkpoint")
            self.log.event("resumed", iteration=cp.iteration, pendingCalls=len(cp.pending_calls))
        if cp.iteration and cp.pending_calls and cp.pending_calls[0]["id"] == cp.calling:
            self.doubtful = cp.calling
        self.cp = cp
        answered = self._answered(cp) if self.a.resume else None
        self.meter.begin(cp)
        if answered is not None:
            self.log.event("resumed", iteration=cp.iteration, answered=True)
            return self._completed(cp, answered)
        detector = LoopDetector()
        detector._last, detector.repeats = cp.last_call, cp.repeats
        max_iterations = int(self.config.get("maxIterations") or DEFAULT_MAX_ITERATIONS)
        self.mcp = await self._mcp_tools()
        tools = openai_tools(self.tool_names) + (self.mcp.functions() if self.mcp else [])
        if self.a.steps:
            tools.append(step_done_tool(self.a.steps))

        if cp.pending_calls:  # answers or approvals arrived with this dispatch
            if self._mark(cp, cp.pending_calls, 0):  # (saved: the call is about to run)
                await self._save(cp)
            waiting = await self._run_calls(cp, cp.pending_calls, detector)
            if waiting is not None:
                return waiting

        while True:
            await self._take_nudges(cp)
            final_turn = cp.iteration >= max_iterations
            last = {
                "role": "user",
                "content": f"You have used all {max_iterations} steps. Give your final answer now, without tools.",
            }
            asking = [*cp.messages, last] if final_turn else cp.messages
            try:
                max_tokens = self.meter.before(cp, asking, None if final_turn else tools)
            except BudgetStop as stop:
                return await self._budget_stop(cp, stop)
            if final_turn:
                cp.messages.append(last)
                self.log.message(cp.messages[-1])
            asked = time.monotonic()
            response = await llm.chat(
                client,
                self.target,
                cp.messages,
                None if final_turn else tools,
                self.config.get("temperature"),
                # JSON mode: the schema itself is in the first message (see _first_message)
                {"type": "json_object"} if self.schema is not None else None,
                max_tokens,
            )
            self.log.llm(
                self.target.model, time.monotonic() - asked, getattr(response, "usage", None)
            )
            cp.tokens += getattr(getattr(response, "usage", None), "total_tokens", 0) or 0
            self.meter.count(cp, response, cp.messages)
            self.beat.usage = self.meter.report(cp)
            if (cut := self.meter.cut(response)) is not None:  # spent, not kept: a cut answer
                if final_turn:
                    cp.messages.pop()  # asked again, with the final-turn note, next dispatch
                return await self._budget_stop(cp, cut)
            message = response.choices[0].message
            cp.messages.append(llm.as_message(message))
            if message.content:
                self.log.message({"role": "assistant", "content": message.content})
            cp.iteration += 1
            calls = [
                {"id": c.id, "name": c.function.name, "arguments": c.function.arguments or "{}"}
                for c in (message.tool_calls or [])
            ]
            if not calls or final_turn:
                answer, none = _answer_of(message.content, cp)
                if answer is None:
                    # A retry asks again from the conversation before this reply (its tokens count).
                    del cp.messages[-2 if final_turn else -1 :]
                    cp.iteration -= 1
                    await self._save(cp)
                    raise ApplicationError(
                        f"{none} (model {self.target.model}, step {cp.iteration + 1})",
                        type="LLMNoAnswer",
                    )
                if self.schema is not None:
                    fitted = await self._fitted(cp, answer)
                    if fitted is None:
                        continue  # the model was shown what is wrong: it answers again
                    answer = fitted
                # Its page first: a retry after this save completes from it, pageless.
                await self.browser.keep()
                cp.answered = self.meter.dispatch_key
                if (
                    self.a.keep is not None
                    and self.mcp is None  # (their release comes before the outcome is kept)
                    # A retry saves its answer in the checkpoint (the fence's write): an
                    # attempt before it may be only stopped, and wake to save — a fold would
                    # not move the checkpoint's version, so that save, and the must-not-repeat
                    # call it marks, would land after the dispatch completed (review16).
                    and self.a.start.fresh
                    and self.checkpoints.foldable
                ):
                    return await self._fold(cp, answer)
                await self._save(cp)
                return self._completed(cp, answer)
            # Saved before any call runs: a crash now resumes with these calls, not a new question.
            cp.pending_calls = calls
            self._mark(cp, calls, 0)
            await self._save(cp)
            waiting = await self._run_calls(cp, calls, detector)
            self._after_iteration(cp, calls)
            if waiting is not None:
                return waiting

    async def _mcp_tools(self) -> McpToolset | None:
        """The agent's tools of MCP servers (those its role or the worker's rules name), from
        the run's record of each server's offer (discovered by the first attempt that needs it)."""
        if not self.a.mcp_servers:
            return None
        # The MCP SDK is imported by the first agent of a worker that has MCP servers.
        from activities.mcp.toolset import McpToolset, wanted

        names = wanted(self.role, self.gate, list(self.a.mcp_servers))
        if not names:
            return None
        toolset = await McpToolset.prepare(
            self.ctx, self.gate, self.a.mcp_pool, self.a.mcp_servers, names
        )
        toolset.expose()
        self.tool_names += [t for t in toolset.generic if t not in self.tool_names]
        return toolset

    def _first_message(self) -> str:
        text = first_user_message(self.a.task, self.a.input_text, self.a.steps)
        if self.schema is not None:
            text += "\n\n" + output_schema.instructions(self.schema)
        return text

    async def _fitted(self, cp: Checkpoint, answer: str) -> str | None:
        """The answer as compact JSON when it matches the agent's output schema; else None,
        with the errors sent back to the model (checkpointed, so a retried attempt goes on
        counting) — or, once OUTPUT_RETRIES corrections were used, a non-retryable failure
        that lists them: the same model on the same conversation would not do better."""
        assert self.schema is not None
        value, problems = output_schema.result_problems(self.schema, answer)
        if not problems:
            return json.dumps(value, ensure_ascii=False)
        tries = output_schema.corrections(cp.messages)
        self.log.event("output_mismatch", problems=problems, corrections=tries)
        if tries >= output_schema.OUTPUT_RETRIES:
            await self._save(cp)
            raise ApplicationError(
                output_schema.failure(problems, tries + 1),
                type="OutputSchemaMismatch",
                non_retryable=True,
            )
        cp.messages.append({"role": "user", "content": output_schema.correction(problems)})
        self.log.message(cp.messages[-1])
        await self._save(cp)
        self.beat.progress(f"answer did not match the output schema ({len(problems)} error(s))")
        return None

    def _after_iteration(self, cp: Checkpoint, calls: list[dict[str, Any]]) -> None:
        # (checkpointed already: the answer to the last call was, and nothing changed since)
        self.beat.iteration, self.beat.tokens = cp.iteration, cp.tokens
        names = [c["name"] for c in calls if c["name"] != STEP_DONE]
        if not names:
            return  # it only said a step was done: the board shows that line
        where = ""
        if self.a.steps:  # an agent with steps: the board says which it is at
            total = len(self.a.steps)
            where = f"step {min(cp.steps_done + 1, total)} of {total} · "
        self.beat.progress(f"{where}iteration {cp.iteration}: {', '.join(names)}")

    async def _budget_stop(self, cp: Checkpoint, stop: BudgetStop) -> AgentOutcome:
        """Stopped before a model call the share cannot cover: checkpointed, it goes on from
        here when it is dispatched again with a new share."""
        await self._save(cp)
        self.beat.progress(
            f"stopped: this dispatch's share of the budget ({stop.stopped}) is spent"
        )
        self.log.event("budget_stop", stopped=stop.stopped, spent=self.meter.report(cp).wire())
        return AgentOutcome(
            kind="budget",
            tokens=cp.tokens,
            iterations=cp.iteration,
            need=stop.need,
            stopped=stop.stopped,
        )

    def _answered(self, cp: Checkpoint) -> str | None:
        """The final answer an attempt of this same dispatch was given and saved before its
        worker was lost (as it reported): paid for, it is the answer — asked again, the model
        is paid twice and may answer otherwise. None when the checkpoint ends any other way,
        or when it is a new dispatch's (a person's retry goes on from the conversation)."""
        last = cp.messages[-1] if cp.messages else {}
        if (
            cp.answered != self.meter.dispatch_key
            or cp.pending_calls
            or last.get("role") != "assistant"
            or last.get("tool_calls")
        ):
            return None
        answer, _ = _answer_of(last.get("content"), cp)
        if answer is None or self.schema is None:
            return answer
        value, problems = output_schema.result_problems(self.schema, answer)
        return None if problems else json.dumps(value, ensure_ascii=False)

    def _completed(self, cp: Checkpoint, content: str) -> AgentOutcome:
        self.beat.iteration, self.beat.tokens = cp.iteration, cp.tokens
        return AgentOutcome(
            result=content, tokens=cp.tokens, iterations=cp.iteration, provider=self.target.model
        )

    async def _take_nudges(self, cp: Checkpoint) -> None:
        """Before each model call: the supervisor's nudges since the last, and the share of the
        budget this dispatch may spend now (a person may have lowered or set it since)."""
        nudges = list(self.a.nudges)
        workflow_id = activity.info().workflow_id
        try:
            if workflow_id is not None:  # always, for an attempt a leader scheduled
                handle = activity.client().get_workflow_handle(workflow_id)
                key = self.a.key
                if self._news:
                    try:
                        news = await handle.query(
                            "dispatch_news",
                            DispatchRequest(task_id=key.task_id, dispatch=key.dispatch),
                            result_type=DispatchNews,
                            rpc_timeout=self.a.query_timeout,
                        )
                    except WorkflowQueryFailedError as e:
                        if "expected but not found" not in str(e):
                            raise  # (busy, loading: asked again before the next call)
                        self._news = False  # a leader older than the query: nudges alone
                    else:
                        nudges = list(news.nudges)
                        if news.share_known:
                            self.meter.share = news.share
                if not self._news:
                    nudges = await handle.query(
                        "nudges", TaskRequest(task_id=key.task_id), rpc_timeout=self.a.query_timeout
                    )
        except Exception as e:  # noqa: BLE001 - the leader may be busy; the dispatch's copy will do
            log.debug("nudges query failed: %s", e)
        for message in nudges[cp.nudges_seen :]:
            cp.messages.append(
                {"role": "user", "content": f"Message from your supervisor: {message}"}
            )
            self.log.message(cp.messages[-1])
        cp.nudges_seen = max(cp.nudges_seen, len(nudges))
        self.beat.nudges_seen = cp.nudges_seen

    # -- tool calls ---------------------------------------------------------------------------

    async def _run_calls(
        self, cp: Checkpoint, calls: list[dict[str, Any]], detector: LoopDetector
    ) -> AgentOutcome | None:
        """Answer each call in order, checkpointing after each; stop at one that needs a person."""
        for index, call in enumerate(calls):
            self.log.tool_call(call["id"], call["name"], call["arguments"])
            started = time.monotonic()
            try:
                args = json.loads(call["arguments"]) if call["arguments"].strip() else {}
                if not isinstance(args, dict):
                    raise ValueError("arguments must be a JSON object")
            except ValueError as e:
                await self._answer(
                    cp,
                    calls,
                    index,
                    f"ERROR: the arguments are not a JSON object ({e}); call {call['name']} again with valid JSON",
                    started,
                )
                continue
            verdict = observed(detector, cp, call, args)
            if verdict == "stop":
                # Answer every open call so the saved conversation stays well-formed for a retry.
                for rest in range(index, len(calls)):
                    await self._answer(
                        cp,
                        calls,
                        rest,
                        f"STOPPED: {call['name']} was called {detector.repeats} times in a row with "
                        "the same arguments; this attempt was stopped. Change your approach.",
                    )
                raise ApplicationError(
                    f"stopped: {call['name']} was called {detector.repeats} times in a row with the same arguments "
                    f"({cap_text(call['arguments'], 200)[0]}); the agent is looping",
                    type="AgentLooping",
                    non_retryable=True,
                )
            try:
                decided = (
                    await self._in_doubt(cp, call, args) if call["id"] == self.doubtful else None
                )
                async with metrics.tool_span(call["name"]):
                    content = decided if decided is not None else await self._call(call, args)
            except NeedsHuman as need:
                self.log.decisions()
                if not need.choices:  # asked before it ran; a call in doubt stays marked
                    cp.calling = None
                cp.pending_calls = calls[index:]
                await self._save(cp)
                kind: Literal["question", "needs_approval"] = (
                    "question" if need.kind == "question" else "needs_approval"
                )
                return AgentOutcome(
                    kind=kind,
                    request=RequestPayload(
                        question=need.question,
                        tool=need.tool,
                        arguments=need.arguments,
                        rule=need.rule,
                        hard=need.hard,
                        choices=need.choices,
                    ),
                    tokens=cp.tokens,
                    iterations=cp.iteration,
                    provider=self.target.model,
                )
            if verdict == "nudge":
                content += (
                    f"\n\nNOTE: you have made this same call {detector.repeats} times in a row. It will not "
                    "give a different result; change your approach or finish."
                )
            # Lost with its worker, the answer of a call that may not run again unasked would
            # have a person asked about a call that ran: saved at once. Any other may wait.
            once = self.gate.tracked(call["name"]) and (
                self.gate.not_repeatable(call["name"], args, self.config) is not None
            )
            await self._answer(cp, calls, index, content, started, durable=once)
        return None

    async def _answer(
        self,
        cp: Checkpoint,
        calls: list[dict[str, Any]],
        index: int,
        content: str,
        started: float | None = None,
        durable: bool = False,
    ) -> None:
        """The result of one call: into the conversation, off the pending list, checkpointed —
        at once when ``durable`` or when the next call may change something (its mark must be
        saved before it runs); else with the next save (the call may simply run again)."""
        self._tool_message(cp, calls[index], content)
        self.log.tool_result(
            calls[index]["id"],
            calls[index]["name"],
            content,
            time.monotonic() - started if started else 0.0,
        )
        cp.pending_calls = calls[index + 1 :]
        if (self._mark(cp, calls, index + 1) and cp.calling is not None) or durable:
            await self._save(cp)
        else:
            await self._later(cp)

    def _mark(self, cp: Checkpoint, calls: list[dict[str, Any]], index: int) -> bool:
        """Name the call about to run in the checkpoint's next save, when it may change
        something: should the worker die during it, the next attempt knows it may have run.
        True when the mark changed."""
        call = calls[index] if index < len(calls) else None
        calling = call["id"] if call is not None and self.gate.tracked(call["name"]) else None
        if calling == cp.calling:
            return False
        cp.calling, cp.doubt_acted = calling, 0
        return True

    def _tool_message(self, cp: Checkpoint, call: dict[str, Any], content: str) -> None:
        cp.messages.append(
            {
                "role": "tool",
                "tool_call_id": call["id"],
                "content": cap_text(content, TOOL_RESULT_CHARS, "tool output")[0],
            }
        )

    async def _in_doubt(
        self, cp: Checkpoint, call: dict[str, Any], args: dict[str, Any]
    ) -> str | None:
        """The call this attempt resumed at may have run (its worker died during it): None to
        run it again (it may be repeated, or a person said again), or what the model is told
        in its place; raises NeedsHuman when a person must decide."""
        self.doubtful = None
        name = call["name"]
        why = self.gate.not_repeatable(name, args, self.config)
        doubt = Doubt(self.a.key.task_id, call["id"], name, args, why or "")
        if why is None:
            self.log.event("in_doubt", call=call["id"], tool=name, repeated=True)
            self.beat.progress(in_doubt.repeated_note(doubt))
            return None
        decided = doubt.decision(self.a.answers, cp.doubt_acted)
        if decided is None:
            raise in_doubt.ask(doubt, self.a.answers, self.log, self.beat.progress)
        cp.doubt_acted, choice, note = decided
        self.log.event("in_doubt_decided", call=call["id"], tool=name, choice=choice)
        if choice == "again":
            # Acted on (saved before it runs): should it be in doubt again, a person is asked anew.
            await self._save(cp)
            return None
        return in_doubt.told(choice, note)

    async def _call(self, call: dict[str, Any], args: dict[str, Any]) -> str:
        name = call["name"]
        if name == STEP_DONE and self.a.steps and self.cp is not None:
            # Where the agent is in its steps: kept in the checkpoint (saved with this answer),
            # shown on the board. Touches nothing, so no permission gate.
            self.cp.steps_done, shown, said = step_reached(self.a.steps, self.cp.steps_done, args)
            if shown:
                self.beat.progress(shown)
            return said
        if name == "ask_user":
            question = args.get("question")
            if not isinstance(question, str) or not question.strip():
                return "ERROR: ask_user needs a 'question' string"
            for answer in reversed(self.a.answers):
                if answer.question == question:
                    if answer.by == "leader":
                        return (
                            "The leader answered (from the run's goal and the results so far; a "
                            f"person may still correct it): {answer.answer}"
                        )
                    return f"The person answered: {answer.answer}"
            raise NeedsHuman("question", question=question)
        # raises NeedsHuman when a person must approve
        allowed, why = await self.gate.check(name, args)
        self.log.decisions()  # in the log when made, before the call runs (or is denied)
        if not allowed:
            return (
                f"DENIED: {why}. Do not retry this call; find another way or explain what you need."
            )
        try:
            return await self._execute(name, args)
        except ToolError as e:
            return f"ERROR: {e}"

    async def _execute(self, name: str, args: dict[str, Any]) -> str:
        if self.mcp is not None and name in self.mcp.tools:
            return await self.mcp.answer(name, args)
        impl = IMPLEMENTATIONS.get(name)
        if impl is None or name not in self.tool_names:
            return f"ERROR: unknown tool {name!r}; your tools are {', '.join(self.tool_names)}"
        problem = argument_problem(name, args)
        if problem is not None:
            return f"ERROR: the arguments of {name} do not fit its schema ({problem}); call it again with valid arguments"
        return await impl(Session(self.ctx, self.browser, self.role, self.a.skills, self.mcp), args)


def _answer_of(content: str | None, cp: Checkpoint) -> tuple[str | None, str | None]:
    """The answer a model's last reply ``content`` gives, with the conversation's tool results
    (xsky.outcomes.model_answer): as the loop reads it, and as a retry reads the saved one."""
    results = [str(m.get("content") or "") for m in cp.messages if m.get("role") == "tool"]
    return model_answer(content, results)
