"""Calls that may have run (their worker died during them): which may simply run again, the
request a person answers for one that may not, and what the leader accepts as its answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from activities.agents.ledger import AttemptLedger
from tests.unit.test_leader_core import T0
from xsky.in_doubt import Doubt, told
from xsky.leader.core import LeaderCore, Rejected
from xsky.leader.state import Answer, AnswerRequest, RetryTaskRequest, TaskRequest
from xsky.plan.models import Workflow, WorkflowAgent
from xsky.runs import AgentOutcome, RequestPayload, RunInput
from xsky.security.idempotence import changes_something, choice_of, not_repeatable
from xsky.security.mcp import tool_infos
from xsky.security.rules import parse_rule


@pytest.mark.parametrize(
    "command",
    [
        "curl -X POST https://api.example.com/refunds",
        "curl --request=PATCH https://x.example/a",
        "curl -sS -d amount=5 https://api.example.com/pay",
        "curl --json '{}' https://x.example",
        "make build && git push origin main",
        "git -C repo push",
        "npm publish --access public",
        "wget --post-data=a=1 https://x.example",
        "kubectl apply -f deploy.yaml",
    ],
)
def test_commands_that_send_or_publish_are_not_repeated_unasked(command: str) -> None:
    assert not_repeatable("shell", {"command": command}) is not None


@pytest.mark.parametrize(
    "command",
    [
        "curl -sS https://example.com/page",
        "curl -X GET https://example.com",
        "curl -I https://example.com",
        "git status && git log -3",
        "pytest -q",
        "echo hi > out.txt",
    ],
)
def test_commands_that_only_fetch_or_build_may_run_again(command: str) -> None:
    assert not_repeatable("shell", {"command": command}) is None


def test_a_settings_effects_rule_marks_a_command_an_effect_where_it_appears_in_a_compound() -> None:
    rule = parse_rule("shell(./deploy.sh:*)", "user settings (/home/u/.xsky/settings.json)")
    why = not_repeatable("shell", {"command": "make && ./deploy.sh prod"}, effects=[rule])
    assert why is not None and "shell(./deploy.sh:*)" in why and "user settings" in why
    assert not_repeatable("shell", {"command": "make"}, effects=[rule]) is None


def test_config_idempotent_false_covers_every_call_that_changes_something() -> None:
    config = {"idempotent": False}
    assert not_repeatable("file_write", {"path": "a", "content": "x"}, config=config)
    assert not_repeatable("file_read", {"path": "a"}, config=config) is None  # reads stay reads
    # a plan cannot say the opposite of what the call is
    assert not_repeatable("shell", {"command": "git push"}, config={"idempotent": True})


def test_mcp_tools_are_effects_unless_their_server_marks_them_read_only_or_idempotent() -> None:
    assert "idempotentHint" in (not_repeatable("mcp__pay__refund", {"id": 1}) or "")
    assert not_repeatable("mcp__pay__status", {"id": 1}, mcp_read_only=True) is None
    # idempotent: it changes something (tracked), and in doubt it simply runs again ...
    assert changes_something("mcp__kv__put")
    assert not_repeatable("mcp__kv__put", {"k": "a"}, mcp_idempotent=True) is None
    # ... unless the worker's rules or the agent's config say otherwise
    (rule,) = [parse_rule("mcp__kv__put", "settings")]
    assert not_repeatable("mcp__kv__put", {}, mcp_idempotent=True, effects=[rule]) is not None
    config = {"idempotent": False}
    assert not_repeatable("mcp__kv__put", {}, mcp_idempotent=True, config=config) is not None
    infos, _ = tool_infos(
        "kv",
        [
            {"name": "put", "annotations": {"idempotentHint": True}},
            {"name": "get", "annotations": {"readOnlyHint": True, "idempotentHint": True}},
            {"name": "add"},
        ],
    )
    assert [(i.tool, i.idempotent, i.read_only) for i in infos] == [
        ("put", True, False),
        ("get", False, True),  # read-only already says more
        ("add", False, False),
    ]
    assert not changes_something("mcp__pay__status", mcp_read_only=True)
    assert not changes_something("file_read") and changes_something("browser_click")
    assert not changes_something("no_such_tool")  # it runs nothing: the model is told so


def test_an_http_method_other_than_get_or_head_is_an_effect() -> None:
    assert not_repeatable("mcp__web__fetch", {"method": "DELETE"}, mcp_read_only=False)
    assert "POST" in (not_repeatable("browser_click", {"method": "post"}) or "")


def test_answers_are_one_of_three_words_done_may_say_what_the_call_returned() -> None:
    assert choice_of("again") == ("again", "")
    assert choice_of(" Done: 3 rows inserted") == ("done", "3 rows inserted")
    assert choice_of("yes please") == ("", "yes please")
    assert "do not call it again" in told("skip", "").lower() and "3 rows" in told("done", "3 rows")


def _doubt() -> Doubt:
    return Doubt("T-4", "call_7", "shell", {"command": "curl -X POST https://x/refund"}, "sends")


def test_each_doubt_about_a_call_is_its_own_question_and_old_answers_never_answer_a_new_one() -> (
    None
):
    d = _doubt()
    first = d.question(1)
    assert first.startswith("T-4: `curl -X POST https://x/refund` may have run")
    assert "[call call_7, #1]" in first and "again" in first and "skip" in first
    answers = [Answer(request_id="Q-1", question=first, answer="again")]
    assert d.asked(answers) == 1
    assert d.decision(answers, 0) == (1, "again", "")
    assert d.decision(answers, 1) is None  # acted on: a new doubt needs a new answer
    answers.append(Answer(request_id="Q-2", question=d.question(2), answer="done: refunded"))
    assert d.decision(answers, 1) == (2, "done", "refunded")
    other = Doubt("T-5", "call_7", "shell", {"command": "x"}, "")
    assert other.asked(answers) == 0  # another task's call of the same id


def test_a_ledger_says_a_marked_call_of_a_lost_attempt_may_have_run(tmp_path: Path) -> None:
    ledger = AttemptLedger.at(tmp_path / "T-1.jsonl")
    ledger.calling(1, "`curl -X POST x`")
    start = ledger.begin(2, 3.0)
    assert start.calling == "`curl -X POST x`"
    assert start.previous is not None and start.previous.startswith("worker lost")
    # a call that ended in an error the attempt wrote is not in doubt: it ended
    failed = AttemptLedger.at(tmp_path / "T-2.jsonl")
    failed.calling(1, "`curl -X POST x`")
    failed.record(1, "error", "curl: (22) 500")
    assert failed.begin(2, 3.0).calling is None


def _asked_core() -> tuple[LeaderCore, str]:
    core = LeaderCore(
        RunInput(
            workflow=Workflow(
                name="w", task_id="w", agents=[WorkflowAgent(id="4", name="shell", task="refund")]
            )
        ),
        "run-1",
        T0,
    )
    (start,) = core.dispatch(T0)
    d = _doubt()
    outcome = AgentOutcome(
        kind="question",
        request=RequestPayload(
            question=d.question(1),
            tool=d.tool,
            arguments=d.arguments,
            choices=["again", "skip", "done"],
        ),
    )
    core.attempt_succeeded("4", core.tasks["4"], start.dispatch, outcome, T0)  # type: ignore[union-attr]
    core.attempt_ended("4", start.dispatch)  # type: ignore[union-attr]
    (request,) = core.requests.listed()
    return core, request.id


def test_the_leader_takes_only_the_requests_choices_as_an_answer() -> None:
    core, qid = _asked_core()
    (request,) = core.requests.listed()
    assert request.choices == ["again", "skip", "done"] and request.tool == "shell"
    with pytest.raises(Rejected, match="takes one of: again, skip, done"):
        core.checks.answer(AnswerRequest(request_id=qid, text="sure, go ahead"))
    core.checks.answer(AnswerRequest(request_id=qid, text="done: refund 118 sent"))  # no raise
    core.people.answer(AnswerRequest(request_id=qid, text="done: refund 118 sent"), T0)
    (given,) = core.briefs.answers_for("T-4")
    assert given.answer == "done: refund 118 sent" and "[call call_7, #1]" in given.question


def test_the_log_says_a_call_was_in_doubt_and_what_was_done() -> None:
    from xsky.agent_log import render_event

    asked = render_event(
        {
            "type": "in_doubt",
            "at": "2026-12-05T16:00:00",
            "call": "c1",
            "tool": "shell",
            "asked": 1,
            "why": "sends data (curl)",
        }
    )
    assert "in doubt: shell [c1] may have run" in asked and "a person is asked (#1)" in asked
    again = render_event({"type": "in_doubt", "call": "x", "tool": "file_write", "repeated": True})
    assert "run again" in again
    decided = render_event(
        {"type": "in_doubt_decided", "call": "c1", "tool": "shell", "choice": "skip"}
    )
    assert decided.endswith("a person answered skip")


def test_a_persons_retry_starts_the_tasks_calls_afresh_without_its_old_doubt_answers() -> None:
    core, qid = _asked_core()
    core.people.answer(AnswerRequest(request_id=qid, text="skip"), T0)
    core.briefs.answer("T-4", Answer(request_id="Q-9", question="which region?", answer="eu"))
    # its next dispatch was cancelled before it ran; a person then runs the task again
    core.people.cancel(TaskRequest(task_id="T-4"), T0)
    core.checks.retry(RetryTaskRequest(task_id="T-4"))
    core.people.retry(RetryTaskRequest(task_id="T-4"), T0)
    # the skip was for the attempt that asked: the new start makes its call (a plain
    # answer a person gave the agent stays)
    assert [a.question for a in core.briefs.answers_for("T-4")] == ["which region?"]
