"""Budgets, as people write them and as the run counts them (pure).

A budget is a set of :class:`~xsky.plan.models.Limits` — tokens, model cost in USD, wall
time in minutes and the number of agents — written ``tokens=100000,usd=2.50,minutes=30,
agents=200`` on the command line, in ``<workflow budget="…">`` and in ``set_budget``; an
agent's own cap is ``<config>{"budget": {"tokens": N, "usd": X, "minutes": M}}``. A plan may
have been written by a model, so what it says only narrows what the person gave
(:func:`narrow`), never widens it.

What an agent used is a :class:`Usage`; the agent reports its conversation's running total
(:class:`UsageReport`), so the leader settles what it has not counted yet however often the
same total reaches it (a progress report, the outcome, a retry after a lost worker).
"""

from __future__ import annotations

import difflib
import json
import math
from datetime import datetime
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from xsky.plan.models import Limits
from xsky.wire import WireModel

KEYS = ("tokens", "usd", "minutes", "agents")
AGENT_KEYS = ("tokens", "usd", "minutes")  # an agent's own cap: agents is a run's limit
_EXAMPLE = {"tokens": "100000", "usd": "2.50", "minutes": "30", "agents": "200"}
EXAMPLE = "tokens=100000,usd=2.50,minutes=30,agents=200"
# Tokens reserved for an agent that has no cap of its own, before any dispatch of the run has
# shown more: a few model calls with a modest conversation (docs/budgets.md).
DEFAULT_RESERVE = 4096
# The least room a model call is made with: an answer shorter than this is likely cut.
MIN_ANSWER = 256
# The most a call with a share asks to be answered with: its max_tokens is the share's room,
# but never more than this — some servers refuse a max_tokens beyond their model's output
# limit, and sending none would leave the answer to that limit, which for some models is
# larger than the share (an answer of 64k tokens on a share of 20k).
ANSWER_CAP = 16384
# Before any dispatch has shown a price, an agent without a usd cap reserves this part of
# the run's usd limit.
USD_RESERVE_PART = 16

StopReason = Literal["tokens", "usd", "time"]


class BudgetError(ValueError):
    """A budget a person wrote that cannot be used; the message says what to write."""


def _number(key: str, raw: str, what: str) -> int | float:
    text = raw.strip().removeprefix("$").replace("_", "")
    try:
        value: int | float = int(text) if key in ("tokens", "agents") else float(text)
    except ValueError:
        kind = "a whole number" if key in ("tokens", "agents") else "a number"
        raise BudgetError(
            f"{what}: {key}={raw.strip()!r} is not {kind}; write e.g. {key}={_EXAMPLE[key]}"
        ) from None
    if value == math.inf:
        # (walk12: usd=1e400 and usd=inf, read as infinity, were said "must be more than 0")
        raise BudgetError(
            f"{what}: {key}={raw.strip()} is endless, more than a budget takes; "
            f"write e.g. {key}={_EXAMPLE[key]}"
        )
    if not math.isfinite(value) or value <= 0:
        raise BudgetError(
            f"{what}: {key} must be more than 0, not {raw.strip()}; write e.g. {key}={_EXAMPLE[key]}"
        )
    return value


def parse_limits(text: str, what: str = "budget", keys: tuple[str, ...] = KEYS) -> Limits:
    """``tokens=100000,usd=2.50`` as Limits; a :class:`BudgetError` sentence for anything else."""
    example = ",".join(f"{k}={_EXAMPLE[k]}" for k in keys)
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts:
        raise BudgetError(f"{what} is empty; write e.g. {example}")
    values: dict[str, str] = {}
    for part in parts:
        key, sep, raw = part.partition("=")
        key = key.strip().lower()
        if not sep:
            raise BudgetError(f"{what}: {part!r} is not KEY=VALUE; write e.g. {example}")
        if key in values:
            raise BudgetError(f"{what}: {key} is given twice; keep one")
        values[key] = raw
    return limits_from(values, what, keys)


# Words people write for a limit, and the limit they mean.
_SAID_AS = {
    "dollars": "usd",
    "dollar": "usd",
    "cost": "usd",
    "money": "usd",
    "spend": "usd",
    "time": "minutes",
    "min": "minutes",
    "mins": "minutes",
    "tok": "tokens",
    "toks": "tokens",
}


def limits_from(values: dict[str, Any], what: str, keys: tuple[str, ...] = KEYS) -> Limits:
    """Limits from ``{"tokens": 100000, "usd": "2.50"}`` (numbers or their text)."""
    checked: dict[str, int | float] = {}
    problems: list[str] = []  # every one, at once: "tokens=abc,dollars=3" has two
    for key, raw in values.items():
        if key not in keys:
            close = [s for s in [_SAID_AS.get(key)] if s in keys] or difflib.get_close_matches(
                key, keys, n=1
            )
            hint = f" (did you mean {close[0]}?)" if close else ""
            extra = " (agents is a limit of the whole run)" if key == "agents" else ""
            problems.append(
                f"{what}: unknown limit {key!r}{hint}{extra}; the limits are {', '.join(keys)}"
            )
            continue
        if isinstance(raw, float) and raw.is_integer():
            raw = int(raw)
        try:
            checked[key] = _number(key, str(raw), what)
        except BudgetError as e:
            problems.append(str(e))
    if problems:
        raise BudgetError("; ".join(problems))
    return Limits.model_validate(checked)


def limits_text(limits: Limits) -> str:
    """Limits as they are written (what :func:`parse_limits` reads back to the same)."""
    parts = []
    for key in KEYS:
        value = getattr(limits, key)
        if value is None:
            continue
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        parts.append(f"{key}={value!r}" if isinstance(value, float) else f"{key}={value}")
    return ",".join(parts)


def narrow(given: Limits | None, plan: Limits | None) -> Limits | None:
    """The smaller of each limit: what a plan says can only narrow what a person gave."""
    if plan is None:
        return given
    if given is None:
        return plan
    values = {}
    for key in KEYS:
        a, b = getattr(given, key), getattr(plan, key)
        values[key] = b if a is None else a if b is None else min(a, b)
    return Limits.model_validate(values)


def overlay(base: Limits | None, top: Limits) -> Limits:
    """``top``'s limits where it sets them, ``base``'s elsewhere (a person's set_budget)."""
    values = {k: getattr(top, k) if getattr(top, k) is not None else None for k in KEYS}
    if base is not None:
        values = {k: v if v is not None else getattr(base, k) for k, v in values.items()}
    return Limits.model_validate(values)


def with_plan(given: RunBudget | None, plan: Limits | None) -> RunBudget | None:
    """The budget of a run whose plan says ``plan``: the person's, narrowed by it."""
    if plan is None or not limits_text(plan):
        return given
    budget = given or RunBudget()
    return budget.model_copy(update={"run": narrow(budget.run, plan)})


def describe(key: str, used: float, limit: float | None = None) -> str:
    """``92,000 of 100,000 tokens``, ``$2.43 of $2.50``, ``31 of 30 minutes``."""
    if key == "usd":
        return f"${used:,.2f}" + (f" of ${limit:,.2f}" if limit is not None else "")
    unit = {"tokens": "tokens", "minutes": "minutes", "agents": "agents"}[key]
    shown = f"{used:,.0f}" if key != "minutes" else f"{used:,.1f}".removesuffix(".0")
    if limit is None:
        return f"{shown} {unit}"
    cap = f"{limit:,.0f}" if key != "minutes" else f"{limit:,.1f}".removesuffix(".0")
    return f"{shown} of {cap} {unit}"


# -- what was used -------------------------------------------------------------------------------


class Usage(WireModel):
    """What model calls used: tokens in and out, their cost by the worker's prices, calls."""

    input_tokens: int = 0
    output_tokens: int = 0
    usd: float = 0.0
    calls: int = 0

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def plus(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            usd=self.usd + other.usd,
            calls=self.calls + other.calls,
        )

    def minus(self, other: Usage) -> Usage:
        """What this has beyond ``other`` (never below zero: a total only grows)."""
        return Usage(
            input_tokens=max(0, self.input_tokens - other.input_tokens),
            output_tokens=max(0, self.output_tokens - other.output_tokens),
            usd=max(0.0, self.usd - other.usd),
            calls=max(0, self.calls - other.calls),
        )

    def most(self, other: Usage) -> Usage:
        """The larger of each figure."""
        return Usage(
            input_tokens=max(self.input_tokens, other.input_tokens),
            output_tokens=max(self.output_tokens, other.output_tokens),
            usd=max(self.usd, other.usd),
            calls=max(self.calls, other.calls),
        )

    def empty(self) -> bool:
        return not (self.input_tokens or self.output_tokens or self.usd or self.calls)

    def text(self) -> str:
        """``1,234 tokens · $0.0123`` (the cost only when it is known)."""
        cost = f" · ${self.usd:,.4f}" if self.usd else ""
        return f"{self.tokens:,} tokens{cost}"


class UsageReport(WireModel):
    """What an agent's conversation has used so far, as its checkpoint counts it. ``total``
    only grows, so the leader settles ``total`` less what it has counted of ``conversation``
    (a new id whenever a conversation starts afresh); ``dispatch``: this dispatch's part."""

    conversation: str = ""
    total: Usage = Field(default_factory=Usage)
    dispatch: Usage = Field(default_factory=Usage)


class BudgetShare(WireModel):
    """What one dispatch of an agent may spend (``AgentInput.budget_share``): the agent checks
    it before every model call and stops cleanly when the next call would not fit."""

    tokens: int | None = None
    usd: float | None = None
    until: datetime | None = None  # no model call starts after this (the run's or its minutes)


class ShareSpent(Exception):
    """The next model call would not fit its share (``stopped``: which part ran out; ``need``:
    what the call needs at least)."""

    def __init__(self, stopped: StopReason, need: Usage | None = None):
        super().__init__(stopped)
        self.stopped = stopped
        self.need = need


def call_room(
    share: BudgetShare, spent: Usage, estimate: int, price: Price | None, now: datetime
) -> int | None:
    """The ``max_tokens`` a model call whose input is about ``estimate`` tokens is made with,
    after ``spent`` of ``share`` went on earlier calls: what is left of it, at most
    :data:`ANSWER_CAP` (None: the share limits neither tokens nor priced USD); raises
    :class:`ShareSpent` when the call would not fit at all. Every model call a run causes —
    its agents', its coordinator's, its planner's — passes this."""
    if share.until is not None and now >= share.until:
        raise ShareSpent("time")
    room: int | None = None
    if share.tokens is not None:
        left = share.tokens - spent.tokens
        if left < estimate + MIN_ANSWER:
            raise ShareSpent("tokens", Usage(input_tokens=estimate, output_tokens=MIN_ANSWER))
        room = left - estimate
    if share.usd is not None and price is not None:
        left_usd = share.usd - spent.usd
        need = cost(estimate, MIN_ANSWER, price)
        if left_usd < need:
            raise ShareSpent(
                "usd", Usage(input_tokens=estimate, output_tokens=MIN_ANSWER, usd=need)
            )
        if price.output > 0:
            by_usd = int((left_usd - cost(estimate, 0, price)) * 1e6 / price.output)
            room = by_usd if room is None else min(room, by_usd)
    return None if room is None else min(room, ANSWER_CAP)


class Price(WireModel):
    """USD per million tokens of one model (settings.json ``prices``)."""

    input: float = Field(ge=0, allow_inf_nan=False)
    output: float = Field(ge=0, allow_inf_nan=False)


def cost(input_tokens: int, output_tokens: int, price: Price) -> float:
    return (input_tokens * price.input + output_tokens * price.output) / 1_000_000


def estimate_tokens(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> int:
    """A conservative guess of a request's input tokens before it is sent: a token for every
    3 bytes of its JSON (English runs about 4 characters a token; a CJK character is 3 bytes
    and about one token), and 4 for each message's framing."""
    size = len(json.dumps(messages, ensure_ascii=False).encode("utf-8"))
    if tools:
        size += len(json.dumps(tools, ensure_ascii=False).encode("utf-8"))
    return -(-size // 3) + 4 * len(messages)


# About what one consultation of the leader's coordinator about a result takes (it reads the
# task, its result and its dependencies' beginnings, and answers in a short JSON object).
CHECK_TOKENS = 2000


def checks_warning(budget: RunBudget | None, model_agents: int) -> str | None:
    """Why a run's budget leaves its leader too little to check its model agents' results and
    its goal (None: it leaves enough, or it sets no token limit). Said when the run starts and
    on its board, so a small budget never turns the checks off unseen."""
    if budget is None or budget.run.tokens is None or model_agents <= 0:
        return None
    per_agent = (
        budget.per_agent.tokens
        if budget.per_agent is not None and budget.per_agent.tokens is not None
        else budget.reserve_tokens()
    )
    need = model_agents * (int(per_agent) + CHECK_TOKENS) + CHECK_TOKENS
    if budget.run.tokens >= need:
        return None
    return (
        f"the budget of {budget.run.tokens:,} tokens leaves too little for the leader to check "
        f"its agents' work: {model_agents} model agent(s) reserve about {int(per_agent):,} tokens "
        f"each, and the coordinator's check of each result (and of the goal) about {CHECK_TOKENS:,} "
        f"more — {need:,} in all; a check the budget has no room for is skipped, and its task "
        f'says "not checked (budget)". Give --budget tokens={need} or more, or --coordinator off '
        "to spend nothing on checks"
    )


# -- a run's budget --------------------------------------------------------------------------------


class RunBudget(WireModel):
    """A run's budget (``RunOptions.budget``): the run's limits, a cap for every agent, caps
    by role, and the tokens reserved for an agent that has no cap of its own."""

    run: Limits = Field(default_factory=Limits)
    per_agent: Limits | None = None
    per_role: dict[str, Limits] = Field(default_factory=dict)
    # A person's raise of one task's cap (set_budget with a task): over what the plan said.
    per_task: dict[str, Limits] = Field(default_factory=dict)
    reserve: int | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _agent_caps(self) -> RunBudget:
        caps = [self.per_agent, *self.per_role.values(), *self.per_task.values()]
        if any(c is not None and c.agents is not None for c in caps):
            raise ValueError("agents is a limit of the whole run, not of one agent or role")
        return self

    def reserve_tokens(self) -> int:
        return self.reserve or DEFAULT_RESERVE


class TaskSpend(WireModel):
    """One task's spend, kept in its row (continue-as-new carries it)."""

    usage: Usage = Field(default_factory=Usage)  # settled
    # conversation id → its total as last counted
    seen: dict[str, Usage] = Field(default_factory=dict)
    # charged for dispatches that ended without saying what they used (each at most its share)
    unconfirmed: Usage = Field(default_factory=Usage)
    unconfirmed_in: str | None = None  # the conversation that will say what they used
    need: Usage | None = None  # its next model call needs at least this (a budget stop said)
    stopped: StopReason | None = None  # why its last dispatch stopped on its share
    share: BudgetShare | None = None  # the share of its last dispatch
    started_at: datetime | None = None  # its first dispatch (its own minutes run from here)


class Spend(WireModel):
    """A run's spend (continue-as-new carries it)."""

    total: Usage = Field(default_factory=Usage)  # settled, tasks and sources together
    # settled usage not tied to a dispatch: the planner's, a coordinator's ("leader")
    sources: dict[str, Usage] = Field(default_factory=dict)
    unconfirmed: Usage = Field(default_factory=Usage)  # the tasks' unconfirmed, together
    largest: Usage = Field(default_factory=Usage)  # the most one model dispatch has used
    price: float = 0.0  # the highest USD per token a dispatch has shown
    started: int = 0  # distinct tasks ever dispatched


# -- an agent's <config>{"budget": …} --------------------------------------------------------------


def config_budget(config: dict[str, Any] | None) -> Limits | None:
    """The cap an agent's ``<config>`` gives it (None: none, or not valid — config_problems
    reports a bad one where the plan is read)."""
    value = (config or {}).get("budget")
    if not isinstance(value, dict) or budget_problems(value):
        return None
    return Limits.model_validate(value)


def budget_problems(value: Any) -> list[str]:
    """What is wrong with an agent's ``<config>`` budget (empty when fine)."""
    example = '{"budget": {"tokens": 20000, "usd": 0.5, "minutes": 10}}'
    if not isinstance(value, dict) or not value:
        return [f"config budget must be an object such as {example}"]
    unknown = [k for k in value if k not in AGENT_KEYS]
    if unknown:
        close = difflib.get_close_matches(str(unknown[0]), AGENT_KEYS, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        return [
            f"config budget: unknown limit {unknown[0]!r}{hint}; an agent's limits are "
            f"{', '.join(AGENT_KEYS)}"
        ]
    problems = []
    for key, v in value.items():
        number = isinstance(v, int | float) and not isinstance(v, bool)
        whole = key != "tokens" or isinstance(v, int)
        if not number or not whole or not math.isfinite(v) or v <= 0:
            kind = "a whole number" if key == "tokens" else "a number"
            problems.append(f"config budget {key} must be {kind} above 0, not {v!r}")
    if not problems:
        try:
            Limits.model_validate(value)
        except ValidationError as e:
            problems.append(f"config budget is not valid ({e.errors()[0]['msg']})")
    return problems


class BudgetView(WireModel):
    """A run's spend against its limits, as the board, ``status`` and the result show it."""

    limits: Limits | None = None  # the run's limits in force (None: no budget)
    spent: Usage = Field(default_factory=Usage)  # settled
    unconfirmed: Usage = Field(default_factory=Usage)  # charged for attempts that did not say
    reserved_tokens: int = 0  # held for running agents
    reserved_usd: float = 0.0
    minutes: float = 0.0  # since the run started
    agents: int = 0  # distinct tasks dispatched
    sources: dict[str, Usage] = Field(default_factory=dict)  # usage not tied to a task
    paused: str | None = None  # why dispatch waits for the budget (the E-n's words)

    def summary(self) -> str:
        """``budget: 12,000 of 12,000 tokens · $0.03 of $2.50 · …`` (spend alone without one)."""
        used = self.spent.plus(self.unconfirmed)
        limits = self.limits or Limits()
        parts = [describe("tokens", used.tokens, limits.tokens)]
        if used.usd or limits.usd is not None:
            parts.append(describe("usd", used.usd, limits.usd))
        if limits.minutes is not None:
            parts.append(describe("minutes", self.minutes, limits.minutes))
        if limits.agents is not None:
            parts.append(describe("agents", self.agents, limits.agents))
        notes = []
        if self.reserved_tokens or self.reserved_usd:
            held = f"{self.reserved_tokens:,} tokens" + (
                f" · ${self.reserved_usd:,.2f}" if self.reserved_usd else ""
            )
            notes.append(f"{held} reserved for running agents")
        if not self.unconfirmed.empty():
            notes.append(
                f"{self.unconfirmed.tokens:,} tokens of it charged for attempts that ended "
                "without saying what they used"
            )
        for source, usage in sorted(self.sources.items()):
            notes.append(f"{source}: {usage.text()}")
        head = ("budget: " if self.limits is not None else "spent: ") + " · ".join(parts)
        return head + (f" ({'; '.join(notes)})" if notes else "")
