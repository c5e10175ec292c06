"""``coordinate``: the leader's coordinator, a model consulted at a point of the run.

The leader's workflow never calls a model: it runs this activity, whose answer is recorded
in history, and applies it within the person's bounds (xsky/leader/coordinator/). Here
the consultation is sent to the model in JSON mode; a reply that cannot be read is shown its
problems once, then the consultation fails (the leader falls back to its mechanical rules).
With no model configured the answer is ``unavailable``, at once. What was said of a task is
appended to that agent's log as a ``leader`` event.
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities import llm
from activities.agents.transcripts import append_event
from activities.artifacts import open_store
from activities.beat import heartbeating
from activities.call_budget import CallBudget
from xsky.agent_log import transcript_key
from xsky.config import Settings
from xsky.leader.coordinator.prompts import (
    FIX,
    READINGS,
    STORED_RESULT_CHARS,
    SYSTEM,
    read_reply,
    user_message,
)
from xsky.leader.ledger import ConsultInput, ConsultOutcome, Evidence
from xsky.plan.budget import Price, ShareSpent, Usage, cost, estimate_tokens
from xsky.settings_files import SettingsError, price_table, worker_layers


class CoordinatorActivities:
    def __init__(self, settings: Settings):
        self.settings = settings
        self.store = open_store(settings)

    @activity.defn(name="coordinate")
    async def coordinate(self, inp: ConsultInput) -> ConsultOutcome:
        target = llm.target(inp.model or self.settings.coordinator_model, None, self.settings)
        if target is None:
            return ConsultOutcome(
                point=inp.point,
                verdict="unavailable",
                reason="no model is configured on this worker (set XSKY_MODEL or "
                "XSKY_COORDINATOR_MODEL, and OPENAI_BASE_URL)",
            )
        results = await asyncio.to_thread(self._stored_results, inp)
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": user_message(inp, results)},
        ]
        client = llm.client_for(target)
        price = await asyncio.to_thread(self._price, target.model)
        budget = CallBudget(inp.budget_share, price)
        problems = ""
        try:
            for reading in range(1, READINGS + 1):
                try:
                    max_tokens = budget.before(messages)
                except ShareSpent as spent:
                    return ConsultOutcome(
                        point=inp.point,
                        verdict="unchecked",
                        reason=f"its share of the run's budget has no room for reading {reading} "
                        f"({spent.stopped} spent)",
                        model=target.model,
                        usage=budget.spent,
                    )
                note = f"{inp.point}: reading {reading}"
                try:
                    async with heartbeating(partial(budget.details, note)):
                        response = await llm.chat(
                            client,
                            target,
                            messages,
                            temperature=0,
                            response_format={"type": "json_object"},
                            max_tokens=max_tokens,
                        )
                except ApplicationError as e:
                    raise budget.failure(e) from None
                budget.count(self._used(response, messages, price))
                text = response.choices[0].message.content or ""
                fields, problems = read_reply(inp.point, text)  # type: ignore[assignment]
                if fields is not None:
                    outcome = ConsultOutcome(
                        point=inp.point,
                        model=target.model,
                        usage=budget.spent,
                        **fields,
                    )
                    await asyncio.to_thread(self._log, inp, outcome)
                    return outcome
                messages += [
                    {"role": "assistant", "content": text},
                    {"role": "user", "content": FIX.format(problems=problems)},
                ]
        finally:
            await client.close()
        raise budget.failure(
            ApplicationError(
                f"the coordinator's reply could not be used after {READINGS} readings: {problems}",
                type="CoordinatorUnreadable",
                non_retryable=True,
            )
        )

    def _price(self, model: str) -> Price | None:
        """The model's price in the worker's own settings (None: unpriced, or unreadable)."""
        try:
            return price_table(worker_layers(self.settings)).get(model)
        except SettingsError:
            return None

    @staticmethod
    def _used(response: Any, messages: list[dict[str, Any]], price: Price | None) -> Usage:
        """One call's usage; a server that reports none is counted by estimate, never free."""
        usage = getattr(response, "usage", None)
        tokens_in = getattr(usage, "prompt_tokens", 0) or 0
        tokens_out = getattr(usage, "completion_tokens", 0) or 0
        if usage is None:
            tokens_in = estimate_tokens(messages, None)
            content = response.choices[0].message.content or ""
            tokens_out = estimate_tokens([{"r": content}], None)
        usd = cost(tokens_in, tokens_out, price) if price is not None else 0.0
        return Usage(input_tokens=tokens_in, output_tokens=tokens_out, usd=usd, calls=1)

    def _stored_results(self, inp: ConsultInput) -> dict[str, str]:
        """The beginnings of results that travel by reference, by task id."""
        evidence: list[Evidence] = [*inp.tasks, *inp.dependencies]
        if inp.task is not None:
            evidence.append(inp.task)
        found: dict[str, str] = {}
        for e in evidence:
            if e.result is None and e.result_ref is not None:
                try:
                    text = self.store.read_text(e.result_ref)
                except (OSError, ValueError) as err:
                    text = f"(the stored result could not be read: {err})"
                found[e.task_id] = text[:STORED_RESULT_CHARS]
        return found

    def _log(self, inp: ConsultInput, outcome: ConsultOutcome) -> None:
        """What the coordinator said of a task, in that agent's log."""
        if inp.task is None:
            return
        agent_id = inp.task.task_id.removeprefix("T-")
        append_event(
            self.store.objects,
            transcript_key(inp.run_id, agent_id),
            "leader",
            point=inp.point,
            verdict=outcome.verdict,
            reason=outcome.reason,
            detail=outcome.detail(),
            by="leader (proposed; the run's ledger says what was applied)",
            model=outcome.model,
        )

    def all(self) -> list[Any]:
        return [self.coordinate]
