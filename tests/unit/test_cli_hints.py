"""The API's errors speak the API; the CLI says its own commands instead (cli/hints.py)."""

from __future__ import annotations

from cli.hints import cli_message
from xsky.errors import NoWorkerError, RefusedError, RunEndedError, RunNotFoundError, UsageError


def test_the_api_message_names_the_api_and_the_cli_message_names_the_command():
    e = RunNotFoundError(
        "no run with id r1", "XSky.runs() lists the recent ones", topic="not-found", subject="r1"
    )
    assert str(e) == "no run with id r1; XSky.runs() lists the recent ones"
    assert cli_message(e) == "no run with id r1; `starter.py list` shows the recent ones"
    ended = RunEndedError(
        "r1 has already ended (completed)",
        "Run.result() says how it ended",
        topic="ended",
        subject="r1",
    )
    assert cli_message(ended).endswith("`starter.py result r1` shows how it ended")
    assert "starter.py" not in str(ended)


def test_missing_workers_are_told_with_the_kinds_the_plan_needs():
    e = NoWorkerError(
        "no worker runs shell agents",
        "start one with `python worker.py --kinds shell --no-leader`; nothing was started",
        topic="worker-kinds",
        subject="shell",
    )
    assert "starter.py" not in str(e)
    assert cli_message(e) == (
        "no worker runs shell agents; start one with `python worker.py --kinds shell --no-leader` "
        "(or `starter.py up`); nothing was started"
    )


def test_unknown_plan_names_are_the_flags_that_gave_them():
    e = UsageError(
        "variable tpoic: the plan has no such name (its names: topic); nothing was started",
        topic="unknown-variable",
        subject="tpoic",
    )
    assert (
        cli_message(e)
        == "--var tpoic: the plan has no such name (its names: topic); nothing was started"
    )


def test_a_refusal_names_the_commands_for_the_run():
    e = RefusedError(
        "refused: A-3 asks to approve a tool call; decide it with the approve_tool update (request A-3)",
        topic="refused",
        subject="run-7",
    )
    assert cli_message(e).endswith("decide it with `starter.py approve run-7 A-3`")
    plan = RefusedError(
        "refused: the plan is still being made; look at it (the plan query) once it is there",
        topic="refused",
        subject="run-7",
    )
    assert "(`starter.py plan run-7`)" in cli_message(plan)


def test_an_error_without_a_topic_is_said_as_it_is():
    assert cli_message(UsageError("bad input; fix it")) == "bad input; fix it"


def test_a_running_run_is_waited_for_with_a_command_that_exists():
    from xsky.errors import XSkyError

    e = XSkyError(
        "r1 is still running",
        "wait for it, or watch it with Run.follow()",
        topic="running",
        subject="r1",
    )
    assert cli_message(e) == (
        "r1 is still running; wait for it with `starter.py result r1 --wait`, or watch it with "
        "`starter.py status r1`"
    )


def test_a_bad_plan_is_an_xsky_error_as_the_python_api_promises():
    from xsky.errors import Problem, WorkflowValidationError, WorkflowXMLError, XSkyError

    for kind in (WorkflowXMLError, WorkflowValidationError):
        e = kind([Problem("agent 4 depends on unknown agent '5'", line=16, column=3)])
        assert isinstance(e, XSkyError)
        assert e.fact == str(e) == "<plan>:16:3: agent 4 depends on unknown agent '5'"


def test_the_requests_table_answers_a_budget_stop_with_the_limit_it_names():
    from types import SimpleNamespace

    from cli.steer_cmd import _SPENT_KEY
    from xsky.leader.budget import Budget

    for key in ("agents", "usd", "tokens", "minutes"):
        said = Budget._raise_it(SimpleNamespace(run_id="r"), "2 of 2 used", key)  # type: ignore[arg-type]
        spent = _SPENT_KEY.search(said)
        assert spent is not None and spent.group(1) == key


def test_no_skills_worker_with_an_object_store_names_the_skills_worker_not_up():
    # With XSKY_STORE only `worker.py --skills` serves the pipeline: `up`'s worker does not,
    # so telling a person to run `up` (which they ran) sent them in a circle.
    from client.skills import Skills
    from xsky.config import load_settings

    local = Skills(load_settings({"XSKY_HOME": "/nonexistent"})).no_worker()
    assert "starter.py up" in cli_message(local)
    stored = Skills(
        load_settings({"XSKY_HOME": "/nonexistent", "XSKY_STORE": "s3://bucket/prefix"})
    ).no_worker()
    said = cli_message(stored)
    assert "no worker is serving the skill pipeline" in said
    assert "python worker.py --skills" in said and "`starter.py up` does not" in said
    assert "--skills" in str(stored)  # the API's own words say it too
