"""Budgets as people write them (flags, XML, <config>, settings) and as an agent meters them
(activities/agents/spend.py): parsing with one-sentence errors, narrowing, and the checks
before each model call."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from temporalio.exceptions import ApplicationError

from activities import llm
from activities.agents.checkpoint import Checkpoint
from activities.agents.spend import BudgetStop, Meter
from cli.budget_cmd import budget_of
from xsky.errors import PlanError, UsageError
from xsky.plan import dag
from xsky.plan.budget import (
    ANSWER_CAP,
    BudgetError,
    BudgetShare,
    Limits,
    Price,
    Usage,
    cost,
    estimate_tokens,
    limits_text,
    narrow,
    parse_limits,
    with_plan,
)
from xsky.plan.xml import parse_workflow, parse_workflow_source, workflow_to_xml
from xsky.settings_files import SettingsError, parse_settings, price_table

# -- writing limits --------------------------------------------------------------------------------


def test_limits_parse_from_the_flag_and_write_back_the_same():
    limits = parse_limits("tokens=100000, usd=$2.50 ,minutes=30,agents=200")
    assert limits == Limits(tokens=100000, usd=2.5, minutes=30, agents=200)
    assert parse_limits(limits_text(limits)) == limits
    assert limits_text(Limits(usd=0.1, minutes=1.5)) == "usd=0.1,minutes=1.5"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("tokns=5", "unknown limit 'tokns' (did you mean tokens?)"),
        ("tokens=0", "tokens must be more than 0, not 0"),
        ("usd=-1", "usd must be more than 0, not -1"),
        ("usd=lots", "usd='lots' is not a number; write e.g. usd=2.50"),
        ("tokens=1.5", "tokens='1.5' is not a whole number"),
        ("usd=nan", "usd must be more than 0, not nan"),
        # infinity, written out or as a number past a float's range (walk12: "must be more
        # than 0, not 1e400")
        ("usd=1e400", "usd=1e400 is endless, more than a budget takes; write e.g. usd=2.50"),
        ("minutes=inf", "minutes=inf is endless, more than a budget takes"),
        ("tokens", "'tokens' is not KEY=VALUE"),
        ("tokens=1,tokens=2", "tokens is given twice"),
        ("", "--budget is empty; write e.g. tokens=100000"),
        ("dollars=3", "unknown limit 'dollars' (did you mean usd?)"),
        # every problem at once, not the first alone
        ("tokens=abc,dollars=3", "tokens='abc' is not a whole number"),
        ("tokens=abc,dollars=3", "unknown limit 'dollars' (did you mean usd?)"),
    ],
)
def test_a_bad_budget_is_one_sentence_with_the_fix(text: str, says: str):
    with pytest.raises(BudgetError) as e:
        parse_limits(text, "--budget")
    assert says in str(e.value) and "\n" not in str(e.value)


def test_an_agents_cap_is_refused_for_one_agent():
    with pytest.raises(BudgetError, match="agents is a limit of the whole run"):
        parse_limits("agents=3", "--agent-budget", ("tokens", "usd", "minutes"))


def test_a_plan_only_narrows_what_the_person_gave():
    given = Limits(tokens=100_000, usd=2.5)
    plan = Limits(tokens=500_000, usd=1.0, minutes=10)
    assert narrow(given, plan) == Limits(tokens=100_000, usd=1.0, minutes=10)
    assert narrow(None, plan) == plan and narrow(given, None) == given
    budget = with_plan(None, Limits(tokens=5000))
    assert budget is not None and budget.run == Limits(tokens=5000)


def test_the_command_line_builds_the_run_budget():
    args = argparse.Namespace(
        budget="tokens=12000,agents=20",
        agent_budget="tokens=2000",
        role_budget=["verify:usd=0.5"],
        budget_reserve=1000,
    )
    budget = budget_of(args)
    assert budget is not None and budget.run == Limits(tokens=12000, agents=20)
    assert budget.per_agent == Limits(tokens=2000) and budget.per_role["verify"].usd == 0.5
    assert budget.reserve == 1000
    with pytest.raises(UsageError, match="ROLE:LIMITS"):
        budget_of(argparse.Namespace(budget=None, agent_budget=None, role_budget=["x"]))


# -- in a plan -------------------------------------------------------------------------------------

PLAN = """<workflow name="b" taskId="b" budget="{budget}">
  <agent name="llm" id="1"><task>t</task>{config}</agent>
</workflow>"""


def test_the_workflow_budget_attribute_round_trips():
    wf = parse_workflow(PLAN.format(budget="tokens=5000,usd=0.25", config=""))
    assert wf.budget == Limits(tokens=5000, usd=0.25)
    assert parse_workflow(workflow_to_xml(wf)) == wf


def test_a_bad_workflow_budget_is_reported_at_its_line_and_column():
    with pytest.raises(PlanError) as e:
        parse_workflow("\n" + PLAN.format(budget="tokens=lots", config=""))
    (problem,) = e.value.problems
    assert (problem.line, problem.column) == (2, 1)
    assert "<workflow budget>: tokens='lots' is not a whole number" in problem.message


@pytest.mark.parametrize(
    ("config", "says"),
    [
        ('{"budget": {"tokens": 0}}', "config budget tokens must be a whole number above 0"),
        ('{"budget": {"agents": 2}}', "unknown limit 'agents'"),
        ('{"budget": {"usd": "1"}}', "config budget usd must be a number above 0"),
        ('{"budget": 5}', "config budget must be an object"),
    ],
)
def test_a_bad_config_budget_is_found_where_the_plan_is_checked(config: str, says: str):
    parsed = parse_workflow_source(
        PLAN.replace(' budget="{budget}"', "").format(config=f"<config>{config}</config>")
    )
    with pytest.raises(PlanError) as e:
        dag.ensure_valid(parsed.workflow, ["llm"])
    assert any(says in p.message for p in e.value.problems), e.value.problems


# -- prices in settings ----------------------------------------------------------------------------


def test_prices_come_from_the_settings_with_their_errors_located():
    text = '{"prices": {"fake-model": {"input": 1.0, "output": 2.0}}}'
    settings = parse_settings(text, "s.json")
    layers = [SimpleNamespace(settings=settings)]
    assert price_table(layers) == {"fake-model": Price(input=1.0, output=2.0)}  # type: ignore[arg-type]
    with pytest.raises(SettingsError, match=r"s.json:1:\d+: prices.m.input"):
        parse_settings('{"prices": {"m": {"input": -1, "output": 1}}}', "s.json")


# -- the agent's meter -----------------------------------------------------------------------------


def response(prompt: int, completion: int, finish: str = "stop") -> SimpleNamespace:
    message = SimpleNamespace(content="ok", tool_calls=None)
    return SimpleNamespace(
        usage=SimpleNamespace(prompt_tokens=prompt, completion_tokens=completion),
        choices=[SimpleNamespace(message=message, finish_reason=finish)],
    )


MESSAGES = [{"role": "user", "content": "x" * 300}]


def test_the_meter_counts_calls_and_stops_before_one_the_share_cannot_cover():
    meter = Meter(BudgetShare(tokens=1000), {}, "m", "v1-d1")
    cp = Checkpoint(messages=list(MESSAGES))
    meter.begin(cp)
    estimate = estimate_tokens(MESSAGES, None)
    assert meter.before(cp, MESSAGES, None) == 1000 - estimate  # tight: max_tokens passed
    meter.count(cp, response(500, 200), MESSAGES)
    assert cp.usage == Usage(input_tokens=500, output_tokens=200, calls=1)
    with pytest.raises(BudgetStop) as stop:  # 300 left: not enough for the input and an answer
        meter.before(cp, MESSAGES, None)
    assert stop.value.stopped == "tokens" and stop.value.need is not None
    # the server counted 500 for what the estimate called ~100: the next estimate believes it
    assert stop.value.need.tokens == 500 + 256 and estimate < 500


def test_an_input_the_server_counts_above_its_estimate_raises_the_next_estimates():
    # Text that runs more tokens than bytes/3 (CJK characters of two tokens each): a share
    # that passed a call on the estimate alone would be overspent by what it undercounts.
    text = "预算" * 1500  # 9,000 bytes: estimated ~3,000 tokens; a tokenizer may count 6,000
    asking = [{"role": "user", "content": text}]
    meter = Meter(BudgetShare(tokens=16_000), {}, "m", "v1-d1")
    cp = Checkpoint(messages=list(asking))
    meter.begin(cp)
    first = estimate_tokens(asking, None)
    assert meter.before(cp, asking, None) == min(16_000 - first, ANSWER_CAP)
    meter.count(cp, response(2 * first, 100), asking)  # the server's count: twice the guess
    asking = [*asking, {"role": "assistant", "content": "好"}, {"role": "user", "content": text}]
    second = estimate_tokens(asking, None)
    spent = 2 * first + 100
    # Left: 16,000 - spent. On the guess alone the call fits (its room the rest); believed at
    # the server's rate, the input alone takes 2x the guess and the share cannot cover it.
    assert 16_000 - spent >= second + 256
    with pytest.raises(BudgetStop) as stop:
        meter.before(cp, asking, None)
    assert stop.value.need is not None and stop.value.need.input_tokens >= 2 * second
    # a retried attempt (a lost worker) resumes from the checkpoint: it knows the rate too
    retry = Meter(BudgetShare(tokens=16_000), {}, "m", "v1-d1")
    retry.begin(Checkpoint.model_validate_json(cp.model_dump_json()))
    with pytest.raises(BudgetStop):
        retry.before(cp, asking, None)
    # an estimate above the server's count is left as it is (it errs on the safe side)
    roomy = Meter(BudgetShare(tokens=20_000), {}, "m", "v1-d1")
    roomy.begin(cp2 := Checkpoint(messages=list(MESSAGES)))
    roomy.before(cp2, MESSAGES, None)
    roomy.count(cp2, response(10, 10), MESSAGES)
    assert roomy.before(cp2, MESSAGES, None) == min(
        20_000 - 20 - estimate_tokens(MESSAGES, None), ANSWER_CAP
    )


def test_a_retry_of_the_same_dispatch_goes_on_from_what_its_lost_attempt_used():
    cp = Checkpoint(messages=list(MESSAGES))
    first = Meter(BudgetShare(tokens=2000), {}, "m", "v1-d1")
    first.begin(cp)
    first.count(cp, response(900, 100), MESSAGES)
    retry = Meter(BudgetShare(tokens=2000), {}, "m", "v1-d1")
    retry.begin(cp)  # same dispatch: 1,000 of its 2,000 are gone
    assert retry.report(cp).dispatch.tokens == 1000
    nxt = Meter(BudgetShare(tokens=2000), {}, "m", "v1-d2")
    nxt.begin(cp)  # a new dispatch: its share is whole again, the total goes on
    assert nxt.report(cp).dispatch.tokens == 0 and nxt.report(cp).total.tokens == 1000
    assert nxt.before(cp, MESSAGES, None) is not None


def test_a_share_always_bounds_the_answer_and_only_a_cut_at_its_own_room_is_a_stop():
    cp = Checkpoint(messages=list(MESSAGES))
    unbudgeted = Meter(None, {}, "m", "k")
    assert unbudgeted.before(cp, MESSAGES, None) is None  # no share: the model's own limit
    # A roomy share still caps the answer: a model whose own limit is 64k tokens must not
    # spend 64k of a 20k share in one answer (it did: no max_tokens was sent at >= 16k room).
    for share in (BudgetShare(tokens=20_000), BudgetShare(tokens=10 * ANSWER_CAP)):
        roomy = Meter(share, {}, "m", "k")
        roomy.begin(cp)
        limit = roomy.before(cp, MESSAGES, None)
        assert limit == ANSWER_CAP
        assert estimate_tokens(MESSAGES, None) + limit <= (share.tokens or 0)
        # cut at the cap, with room to spare: the model's limit, not the share's — no stop
        assert roomy.cut(response(1, limit, "length")) is None
    price = {"m": Price(input=3.0, output=15.0)}
    usd = Meter(BudgetShare(usd=0.50), price, "m", "k")
    usd.begin(cp)
    limit = usd.before(cp, MESSAGES, None)
    assert limit is not None and cost(estimate_tokens(MESSAGES, None), limit, price["m"]) <= 0.50
    tight = Meter(BudgetShare(tokens=2000), {}, "m", "k")
    limit = tight.before(cp, MESSAGES, None)
    assert limit is not None
    cut = tight.cut(response(100, limit, "length"))
    assert cut is not None and cut.need is not None and cut.need.output_tokens == 2 * limit


def test_usd_is_priced_by_the_worker_and_bounds_the_answer():
    price = {"m": Price(input=1.0, output=10.0)}  # USD per million tokens
    meter = Meter(BudgetShare(usd=0.01), price, "m", "k")
    cp = Checkpoint(messages=list(MESSAGES))
    meter.begin(cp)
    limit = meter.before(cp, MESSAGES, None)
    estimate = estimate_tokens(MESSAGES, None)
    assert limit == int((0.01 - estimate * 1e-6) * 1e6 / 10.0)
    meter.count(cp, response(1000, 500), MESSAGES)
    assert cp.usage.usd == pytest.approx(0.001 + 0.005)


def test_a_usd_limit_with_an_unpriced_model_fails_before_any_call_with_the_fix():
    with pytest.raises(ApplicationError) as e:
        Meter(BudgetShare(usd=1.0), {}, "gpt-x", "k", "/home/me/.xsky/settings.json")
    assert e.value.non_retryable and e.value.type == "BudgetPriceMissing"
    assert "add prices.gpt-x to the worker's /home/me/.xsky/settings.json" in e.value.message


def test_time_is_up_stops_before_the_next_call():
    past = datetime.now(UTC) - timedelta(seconds=1)
    meter = Meter(BudgetShare(until=past), {}, "m", "k")
    cp = Checkpoint(messages=list(MESSAGES))
    with pytest.raises(BudgetStop) as stop:
        meter.before(cp, MESSAGES, None)
    assert stop.value.stopped == "time"


# How real servers refuse a max_tokens they will not take (quoted from their error bodies).
OPENAI_TOO_LARGE = (
    "Error code: 400 - {'error': {'message': 'max_tokens is too large: 16384. This model "
    "supports at most 4096 completion tokens, whereas you provided 16384.'}}"
)
OPENAI_RENAMED = (
    "Error code: 400 - {'error': {'message': \"Unsupported parameter: 'max_tokens' is not "
    "supported with this model. Use 'max_completion_tokens' instead.\"}}"
)
ANTHROPIC = (
    "Error code: 400 - {'error': {'message': 'max_tokens: 16384 > 8192, which is the maximum "
    "allowed number of output tokens for claude-3-5-haiku-20241022'}}"
)
VLLM = (
    "Error code: 400 - {'message': \"This model's maximum context length is 8192 tokens. "
    "However, you requested 16684 tokens (300 in the messages, 16384 in the completion). "
    'Please reduce the length of the messages or completion."}'
)


def test_a_refused_answer_limit_is_asked_again_as_the_server_says_never_higher():
    from activities.llm import answer_limit_fitted

    sent = {"model": "m", "messages": [], "max_tokens": ANSWER_CAP}
    assert answer_limit_fitted(OPENAI_TOO_LARGE, sent) == sent | {"max_tokens": 4096}
    assert answer_limit_fitted(ANTHROPIC, sent) == sent | {"max_tokens": 8192}
    assert answer_limit_fitted(VLLM, sent) == sent | {"max_tokens": 8192 - 300}
    renamed = answer_limit_fitted(OPENAI_RENAMED, sent)
    assert renamed == {"model": "m", "messages": [], "max_completion_tokens": ANSWER_CAP}
    # never raised above what the share set, and nothing else is asked again
    assert answer_limit_fitted(OPENAI_TOO_LARGE, sent | {"max_tokens": 1000}) is None
    assert answer_limit_fitted("Error code: 400 - model not found", sent) is None
    deepseek = "Invalid max_tokens value, the valid range of max_tokens is [1, 8192]"
    groq = "`max_tokens` must be less than or equal to `8192`, the maximum value for max_tokens"
    for said in (deepseek, groq):
        assert answer_limit_fitted(said, sent) == sent | {"max_tokens": 8192}
    # about the limit but no number read: asked without one
    assert answer_limit_fitted("Invalid value for max_tokens", sent) == {
        "model": "m",
        "messages": [],
    }
    assert answer_limit_fitted(OPENAI_TOO_LARGE, {"model": "m", "messages": []}) is None


async def test_a_server_that_refuses_the_shares_max_tokens_answers_when_asked_as_it_says(
    fake_llm,
):
    """Refused as sent, a call is asked once more as the server says — and the server's lesson
    is kept for its later calls, which are not refused first."""
    from tests.fake_llm import Reply, status, text

    hi = [{"role": "user", "content": "hi"}]

    def renamed(request: dict, index: int) -> Reply:
        if "max_completion_tokens" in request:  # a reasoning model's name for it
            return text(f"answered within {request['max_completion_tokens']}")
        return status(
            400,
            "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
        )

    def lower(request: dict, index: int) -> Reply:
        if request.get("max_tokens", 0) > 4096:
            return status(
                400,
                "max_tokens is too large: 16384. This model supports at most 4096 "
                "completion tokens, whereas you provided 16384.",
            )
        return text(f"answered within {request.get('max_tokens')}")

    def unnumbered(request: dict, index: int) -> Reply:
        if "max_tokens" in request:
            return status(400, "Invalid value for max_tokens")
        return text("answered without a limit")

    def context(request: dict, index: int) -> Reply:
        if request.get("max_tokens", 0) > 7892:
            return status(
                400,
                "This model's maximum context length is 8192 tokens. However, you requested "
                "16684 tokens (300 in the messages, 16384 in the completion).",
            )
        return text(f"answered within {request.get('max_tokens')}")

    llm._LEARNED.clear()
    for model, responder, answer, learns in (
        # fitted to this prompt's length: not the model's limit for a longer or shorter one
        ("vllm-8k", context, "answered within 7892", False),
        ("o-mini", renamed, "answered within 16384", True),
        ("small-4k", lower, "answered within 4096", True),
        # asked without a limit this time, but not remembered: later calls stay bounded
        ("odd-server", unnumbered, "answered without a limit", False),
    ):
        fake_llm.responder = responder
        target = llm.LLMTarget(model, fake_llm.base_url)
        client = llm.client_for(target)
        try:
            before = len(fake_llm.requests)
            reply = await llm.chat(client, target, hi, max_tokens=16384)
            assert reply.choices[0].message.content == answer
            assert len(fake_llm.requests) == before + 2  # refused once, then answered
            reply = await llm.chat(client, target, hi, max_tokens=16384)
            assert reply.choices[0].message.content == answer
            # learned: asked right at once; else refused first again
            assert len(fake_llm.requests) == before + (3 if learns else 4)
        finally:
            await client.close()
    # a refusal about something else fails as before, once
    fake_llm.responder = lambda r, i: status(400, "model not found")
    target = llm.LLMTarget("missing", fake_llm.base_url)
    client = llm.client_for(target)
    try:
        before = len(fake_llm.requests)
        with pytest.raises(ApplicationError) as e:
            await llm.chat(client, target, hi, max_tokens=100)
        assert e.value.non_retryable and len(fake_llm.requests) == before + 1
    finally:
        await client.close()
        llm._LEARNED.clear()


def test_an_answer_cut_below_the_shares_room_is_the_servers_limit_not_a_budget_stop():
    cp = Checkpoint(messages=list(MESSAGES))
    tight = Meter(BudgetShare(tokens=10_000), {}, "m", "k")
    tight.begin(cp)
    limit = tight.before(cp, MESSAGES, None)
    assert limit is not None and limit < ANSWER_CAP
    assert tight.cut(response(100, limit - 500, "length")) is None  # the server's own cap
    assert tight.cut(response(100, limit, "length")) is not None  # the share's room


@pytest.mark.parametrize("skew", [timedelta(hours=1), timedelta(hours=-1)])
def test_a_shares_time_is_checked_on_the_servers_clock_not_the_workers(monkeypatch, skew):
    """chaos15: ``until`` is the leader's (server) time; a worker whose wall clock jumped an
    hour refused every call one second into a 30-minute budget (or called on an hour past it)."""
    from activities import server_clock
    from activities.agents import spend

    started = datetime.now(UTC)  # the server gave the attempt out now
    info = SimpleNamespace(started_time=started, workflow_id="w", activity_id=str(skew), attempt=1)
    monkeypatch.setattr(server_clock.activity, "info", lambda: info)
    real = spend.datetime

    class Skewed(real):  # this worker's wall clock
        @classmethod
        def now(cls, tz=None):
            return real.now(tz) + skew

    monkeypatch.setattr(spend, "datetime", Skewed)
    cp = Checkpoint(messages=list(MESSAGES))
    inside = Meter(BudgetShare(tokens=1000, until=started + timedelta(minutes=30)), {}, "m", "d")
    inside.begin(cp)
    assert inside.before(cp, MESSAGES, None) is not None  # 1 s into 30 minutes: allowed
    past = Meter(BudgetShare(tokens=1000, until=started - timedelta(seconds=1)), {}, "m", "d")
    past.begin(cp)
    with pytest.raises(BudgetStop) as stop:  # past the share's end: refused
        past.before(cp, MESSAGES, None)
    assert stop.value.stopped == "time"
