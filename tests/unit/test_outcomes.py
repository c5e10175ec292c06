"""What counts as success, and whether trying again may help (xsky/outcomes.py): the rules
every tool and the agent activity apply, without a browser, a server or Temporal."""

from __future__ import annotations

import errno
from datetime import UTC, datetime

import pytest

from xsky.leader.tasks import TaskState, board_markdown, note_of, status_shown
from xsky.outcomes import (
    OFFLINE_LABEL,
    exit_verdict,
    failure_kind,
    http_status_retryable,
    model_answer,
    navigation_error_verdict,
    navigation_verdict,
    os_error_verdict,
)
from xsky.plan.agent_config import config_problems, deterministic_retries

URL = "http://127.0.0.1:8080/missing"


@pytest.mark.parametrize(
    ("status", "retryable"),
    [(400, False), (401, False), (403, False), (404, False), (410, False), (429, True),
     (500, True), (502, True), (503, True)],
)  # fmt: skip
def test_429_and_server_errors_may_pass_any_other_4xx_will_not(status, retryable):
    assert http_status_retryable(status) is retryable
    verdict = navigation_verdict(URL, status=status)
    assert verdict is not None and verdict.retryable is retryable
    assert verdict.message == f"browser_navigate {URL} answered HTTP {status}"


def test_a_page_worth_reading_is_no_failure():
    assert navigation_verdict(URL, status=200, final_url=URL) is None
    assert navigation_verdict(URL, status=304, final_url=URL) is None
    assert navigation_verdict(URL, status=None, final_url=URL) is None  # same-document navigation


def test_a_refusal_of_the_egress_proxy_is_not_retried_and_says_why():
    body = "refused by xsky's egress proxy: 127.0.0.1 is a loopback address\n"
    verdict = navigation_verdict(URL, status=403, egress="refused", body=body)
    assert verdict is not None and not verdict.retryable
    assert verdict.message == (
        f"browser_navigate {URL} was refused by xsky's egress proxy: 127.0.0.1 is a loopback address"
    )


def test_an_unreachable_host_may_pass_and_an_error_page_or_empty_document_is_a_failure():
    unreachable = navigation_verdict(
        URL, status=502, egress="unreachable", body="cannot connect to port 8080"
    )
    assert unreachable is not None and unreachable.retryable
    assert (
        unreachable.message
        == f"browser_navigate {URL} could not connect: cannot connect to port 8080"
    )
    error_page = navigation_verdict(URL, status=None, final_url="chrome-error://chromewebdata/")
    assert (
        error_page is not None
        and error_page.retryable
        and "network error page" in error_page.message
    )
    empty = navigation_verdict(URL, status=200, final_url=URL, empty=True)
    assert empty is not None and not empty.retryable and "empty document" in empty.message


@pytest.mark.parametrize(
    ("error", "retryable", "said"),
    [
        (
            f"net::ERR_CONNECTION_REFUSED at {URL}",
            True,
            "could not be opened: net::ERR_CONNECTION_REFUSED",
        ),
        (
            "Timeout 30000ms exceeded.\n=== logs ===",
            True,
            "could not be opened: Timeout 30000ms exceeded.",
        ),
        (f"net::ERR_EMPTY_RESPONSE at {URL}", True, "ERR_EMPTY_RESPONSE"),
        (f"net::ERR_BLOCKED_BY_CLIENT at {URL}", False, "the host is denied"),
        (f"net::ERR_NAME_NOT_RESOLVED at {URL}", False, "cannot be resolved"),
        (f"net::ERR_CERT_AUTHORITY_INVALID at {URL}", False, "ERR_CERT_AUTHORITY_INVALID"),
    ],
)
def test_a_navigation_the_browser_could_not_complete(error, retryable, said):
    verdict = navigation_error_verdict(URL, error)
    assert verdict.retryable is retryable and said in verdict.message
    assert verdict.message.startswith(f"browser_navigate {URL} ")
    assert "=== logs ===" not in verdict.message  # the first line only


def test_a_tunnel_the_egress_proxy_refused_is_not_retried():
    verdict = navigation_error_verdict(
        URL, "net::ERR_TUNNEL_CONNECTION_FAILED", denied="example.org:443: a deny rule"
    )
    assert (
        not verdict.retryable
        and "refused by xsky's egress proxy: example.org:443" in verdict.message
    )
    assert navigation_error_verdict(URL, "net::ERR_TUNNEL_CONNECTION_FAILED").retryable


def test_a_non_zero_exit_is_deterministic_and_its_last_line_is_the_exit_status():
    bare = exit_verdict("exit 1", 1, "")
    assert not bare.retryable and bare.message == "the command exited with status 1: exit 1"
    said = exit_verdict("make deploy", 2, "boom\n")
    assert not said.retryable
    assert said.message.splitlines() == [
        "the command exited with status 2: make deploy",
        "boom",
        "(exit status 2)",
    ]


@pytest.mark.parametrize(
    ("code", "retryable", "said"),
    [(errno.EACCES, False, "permission denied"), (errno.EPERM, False, "permission denied"),
     (errno.ENOSPC, False, "No space"), (errno.EROFS, False, "Read-only"),
     (errno.EBUSY, True, "busy"), (errno.EIO, True, "Input/output")],
)  # fmt: skip
def test_file_system_errors_fail_and_only_passing_ones_are_retried(code, retryable, said):
    import os

    verdict = os_error_verdict("file_write notes.txt", OSError(code, os.strerror(code)))
    assert verdict.retryable is retryable
    assert verdict.message.startswith("file_write notes.txt: ") and said in verdict.message


def test_a_model_reply_is_an_answer_only_when_it_says_something_or_work_was_done():
    assert model_answer("done", []) == ("done", None)
    answer, none = model_answer("  \n", [])
    assert (
        answer is None
        and none == "the model gave no answer: its reply was empty and it called no tool"
    )
    assert model_answer(None, [])[0] is None
    after_tools, none = model_answer("", ["wrote 3 bytes", "exit code 0\n3"])
    assert none is None and after_tools == (
        "(the model ended without a final answer after 2 tool call(s); the last tool result follows)\n"
        "exit code 0\n3"
    )


def test_failure_kinds_tell_the_leader_a_deterministic_failure_from_a_spent_budget():
    assert failure_kind(True) == "deterministic"
    assert failure_kind(False) == "transient"
    assert failure_kind(True, exhausted=True) == "exhausted"


def test_only_an_agent_that_asks_for_retries_gets_them_for_a_deterministic_failure():
    """<config>{"retries": N}, 0 to 10; "retry" (Temporal's policy, for transient failures)
    does not repeat a deterministic one."""
    assert deterministic_retries({"tool": "shell", "command": "exit 1"}) == 0
    assert deterministic_retries({"retry": {"maximumAttempts": 5}}) == 0
    assert deterministic_retries({"retries": 2}) == 2
    for bad in (-1, 11, True, "2", 1.5):
        assert deterministic_retries({"retries": bad}) == 0
        assert config_problems({"retries": bad}) == [
            f"config retries must be a whole number from 0 to 10, not {bad!r}"
        ]


def test_an_offline_answer_is_labelled_on_the_board():
    now = datetime.now(UTC)

    def task(agent_id: str, provider: str | None) -> TaskState:
        return TaskState(
            id=f"T-{agent_id}", agent_id=agent_id, session_id="run", subject="s",
            description="summarise", assigned_agent="llm", stored="completed",
            provider=provider, last_progress="started",
        )  # fmt: skip

    offline, model, tool = task("1", "offline"), task("2", "gpt-x"), task("3", None)
    assert status_shown("completed", "offline") == "completed (offline)"
    assert status_shown("completed", "gpt-x") == "completed" == status_shown("completed", None)
    assert status_shown("failed", "offline") == "failed"
    assert note_of(offline, "completed", None) == OFFLINE_LABEL == "offline: extractive, no model"
    assert note_of(model, "completed", None) == "started" == note_of(tool, "completed", None)
    rows = board_markdown("run", [offline, model, tool], now).splitlines()
    assert "  + completed (offline)  " in rows[4] and "(offline)" not in rows[5]
    assert "- **T-1** offline: extractive, no model" in rows
    assert "(offline)" not in rows[5] and "(offline)" not in rows[6]


def test_a_completed_tasks_own_last_progress_is_not_its_note_and_the_leaders_note_is():
    def task(progress: str | None, agent_note: str | None) -> TaskState:
        return TaskState(
            id="T-1", agent_id="1", session_id="run", subject="s", description="d",
            assigned_agent="shell", stored="completed",
            last_progress=progress, agent_note=agent_note,
        )  # fmt: skip

    running = "bash running for 20s, 6 bytes of output"  # the attempt's own report: stale now
    assert note_of(task(running, running), "completed", None) == ""
    assert note_of(task(running, running), "in_progress", None) == running
    # the leader's own notes on completed tasks stay (a fork's carried tasks, advice)
    assert note_of(task("carried from run-1", None), "completed", None) == "carried from run-1"
    assert note_of(task("leader (advice): fine", running), "completed", None) == (
        "leader (advice): fine"
    )
