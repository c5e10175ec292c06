"""Where a permission rule came from decides what it may do, and every decision says where.

Rules given with a run's input were written by whoever started the run; approvals come from
people, each naming its request. Neither gives a role a tool it lacks, and neither (nor a
broad settings rule, nor the bypass mode) lets a role the worker does not know use a
privileged tool without a person. A plan approved because nobody reviewed it in time is not
a plan a person approved.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from activities.sandbox.gate import summarize
from xsky.leader.core import LeaderCore, StartAgent
from xsky.leader.state import ApprovePlanRequest, ApproveToolRequest, LeaderState
from xsky.plan.models import RoleCapabilityModel
from xsky.plan.xml import parse_workflow
from xsky.runs import AgentOutcome, RequestPayload, RunInput, RunOptions
from xsky.security.permissions import (
    MAX_COMMAND,
    ApprovedRule,
    PermissionLayer,
    PermissionSettings,
    approval_shaped,
    decide,
    trusted_settings,
)
from xsky.security.roles import BUILTIN_ROLES, person_only_tools, trusted_role

T0 = datetime(2026, 1, 1, tzinfo=UTC)
WS = "/work/ws"
ASKER = RoleCapabilityModel(name="asker", allowed_tools=["file_read"], requested_tools=["shell"])
INVENTED = RoleCapabilityModel(
    name="inventor",
    allowed_tools=["shell", "file_read", "file_write"],
    requested_tools=["http_get"],
)


def shell(command: str, role: RoleCapabilityModel, settings: PermissionSettings):
    return decide("shell", {"command": command}, role, settings, WS)


# -- labels ---------------------------------------------------------------------------------


def test_a_rule_from_the_runs_input_says_no_person_approved_it():
    decision = shell("make test", ASKER, PermissionSettings(run_rules=["shell(=make test)"]))
    assert decision.effect == "allow"
    assert "'shell(=make test)' from the run's input (no person approved it)" in decision.reason
    assert "approved by a person" not in decision.reason


def test_a_persons_approval_names_its_request():
    settings = PermissionSettings(
        approved_rules=[ApprovedRule(rule="shell(=make test)", request_id="A-3")]
    )
    decision = shell("make test", ASKER, settings)
    assert decision.effect == "allow"
    assert "from request A-3 for this run (approved by a person)" in decision.reason


def test_a_state_kept_by_an_older_version_keeps_its_approvals_as_a_persons():
    state = LeaderState.model_validate(
        {"plan": {"name": "w", "taskId": "w"}, "runRules": ["shell(=make test)"]}
    )
    assert state.briefs.approved_rules == [ApprovedRule(rule="shell(=make test)")]
    decision = shell(
        "make test", ASKER, PermissionSettings(approved_rules=state.briefs.approved_rules)
    )
    assert "from this run (approved by a person)" in decision.reason


# -- a rule of the run never gives a role a tool ------------------------------------------------


@pytest.mark.parametrize(
    "settings",
    [
        PermissionSettings(run_rules=["shell(=echo hi)"]),
        PermissionSettings(approved_rules=[ApprovedRule(rule="shell(=echo hi)", request_id="A-1")]),
    ],
    ids=["input", "approved"],
)
def test_a_rule_of_the_run_does_not_give_the_llm_role_the_shell(settings):
    decision = shell("echo hi", BUILTIN_ROLES["llm"], settings)
    assert decision.effect == "deny", decision.reason
    assert "role llm may not use shell" in decision.reason
    assert "approved by a person" not in decision.reason
    write = decide(
        "file_write",
        {"path": "out.txt", "content": "x"},
        BUILTIN_ROLES["llm"],
        settings.model_copy(update={"run_rules": ["file_write(=out.txt)"]}),
        WS,
    )
    assert write.effect == "deny" and "may not use file_write" in write.reason
    # For a role that may ask for the shell, the same rule answers the ask.
    assert shell("echo hi", ASKER, settings).effect == "allow"


# -- person-only tools of roles the worker does not know ---------------------------------------


def test_a_role_the_worker_does_not_know_has_its_privileged_tools_person_only():
    assert person_only_tools(INVENTED, None) == ["shell", "file_write", "http_get"]
    assert person_only_tools(BUILTIN_ROLES["shell"], BUILTIN_ROLES["shell"]) == []
    assert person_only_tools(None, None) == []


BROAD = PermissionLayer(scope="user", allow=["shell", "shell(make:*)", "file_write", "http_get"])


def restricted(mode: str = "default", **kw) -> PermissionSettings:
    return PermissionSettings(
        layers=[BROAD], mode=mode, person_only_tools=person_only_tools(INVENTED, None), **kw
    )


@pytest.mark.parametrize("mode", ["default", "accept_edits", "bypass"])
def test_broad_allow_rules_and_modes_do_not_let_an_invented_role_use_privileged_tools(mode):
    role = trusted_role(INVENTED, None)
    settings = restricted(mode, run_rules=["shell(=make test)"])
    for tool, args in [
        ("shell", {"command": "make test"}),
        ("file_write", {"path": "a.txt", "content": "x"}),
        ("http_get", {"url": "https://example.com/"}),
    ]:
        decision = decide(tool, args, role, settings, WS)
        assert decision.effect == "ask" and decision.hard, (tool, decision.reason)
        assert "needs a person's approval" in decision.reason
    # Reading is not privileged: the role's own list decides.
    assert decide("file_read", {"path": "a.txt"}, role, settings, WS).effect == "allow"


def test_only_a_persons_rule_allows_a_person_only_tool_and_deny_rules_still_deny():
    role = trusted_role(INVENTED, None)
    approved = [ApprovedRule(rule="shell(=make test)", request_id="A-2")]
    assert shell("make test", role, restricted(approved_rules=approved)).effect == "allow"
    assert shell("make lint", role, restricted(approved_rules=approved)).effect == "ask"
    denying = restricted(approved_rules=approved).model_copy(
        update={"layers": [BROAD, PermissionLayer(scope="project", deny=["shell(make:*)"])]}
    )
    assert shell("make test", role, denying).effect == "deny"


def test_plan_mode_still_refuses_a_person_only_tool():
    decision = shell("make test", trusted_role(INVENTED, None), restricted("plan"))
    assert decision.effect == "deny" and "read-only tools only" in decision.reason


# -- what a worker keeps of a run's input -------------------------------------------------------


def test_the_worker_keeps_the_two_kinds_apart_and_only_approval_shaped_ones():
    given = PermissionSettings(
        run_rules=["*", "shell*", "s?ell", "shell(=make test)", "http_get(domain:[::1]:8080)"],
        approved_rules=[
            ApprovedRule(rule="*", request_id="A-1"),
            ApprovedRule(rule="shell(=pytest -q)", request_id="A-2"),
        ],
        person_only_tools=["shell"],
    )
    kept = trusted_settings(PermissionSettings(), given)
    assert kept.run_rules == ["shell(=make test)", "http_get(domain:[::1]:8080)"]
    assert kept.approved_rules == [ApprovedRule(rule="shell(=pytest -q)", request_id="A-2")]
    assert kept.person_only_tools == ["shell"]  # a restriction is never dropped
    assert not approval_shaped("*") and not approval_shaped("file_*")


def test_a_wildcard_tool_in_the_runs_input_does_not_allow_a_requested_tool():
    settings = trusted_settings(PermissionSettings(), PermissionSettings(run_rules=["*"]))
    assert shell("rm -rf build", ASKER, settings).effect == "ask"


# -- the leader: what it sends, and what a review timeout approves ------------------------------


PLAN = """<workflow name="w" taskId="w">
  <role name="inventor" description="made up by the plan" tools="shell,file_read" />
  <agent name="inventor" id="1"><task>run it</task></agent>
</workflow>"""


def approval_asked(core: LeaderCore, command: str) -> str:
    """Dispatch agent 1 and have it ask for ``command``; the id of the approval request."""
    (start,) = core.dispatch(T0)
    assert isinstance(start, StartAgent)
    outcome = AgentOutcome(
        kind="needs_approval",
        request=RequestPayload(tool="shell", arguments={"command": command}, rule="asked"),
    )
    core.attempt_succeeded("1", core.tasks["1"], start.dispatch, outcome, T0)
    core.attempt_ended("1", start.dispatch)
    (request,) = core.pending_requests()
    return request.id


def agent_input(core: LeaderCore):
    (start,) = core.dispatch(T0)
    rendered, markers = core.inputs.render("1")
    return core.inputs.agent_input("1", rendered, start.dispatch, markers, None)


def test_the_leader_sends_the_inputs_rules_and_the_peoples_approvals_apart():
    given = PermissionSettings(
        run_rules=["shell(=make test)"],
        approved_rules=[ApprovedRule(rule="shell(=forged)", request_id="A-99")],
    )
    core = LeaderCore(RunInput(workflow=parse_workflow(PLAN), permissions=given), "run-1", T0)
    request_id = approval_asked(core, "pytest -q")
    core.checks.approve_tool(ApproveToolRequest(request_id=request_id, decision="allow_run"))
    core.people.approve_tool(ApproveToolRequest(request_id=request_id, decision="allow_run"), T0)
    sent = agent_input(core).permissions
    # Approvals in a run's input were written by whoever started it: input rules, not a person's.
    assert sent.run_rules == ["shell(=make test)", "shell(=forged)"]
    assert sent.approved_rules == [ApprovedRule(rule="shell(=pytest -q)", request_id=request_id)]
    wire = json.loads(sent.model_dump_json())
    assert wire["approvedRules"] == [{"rule": "shell(=pytest -q)", "requestId": request_id}]


def test_an_attempt_is_given_the_rules_people_approved_before_it_was_sent_and_no_later_ones():
    given = PermissionSettings(run_rules=["shell(=make test)"])
    core = LeaderCore(RunInput(workflow=parse_workflow(PLAN), permissions=given), "run-1", T0)
    (start,) = core.dispatch(T0)
    rendered, markers = core.inputs.render("1")
    first = core.inputs.agent_input("1", rendered, start.dispatch, markers, None)
    again = core.inputs.agent_input("1", rendered, start.dispatch, markers, None)
    assert again.permissions == first.permissions
    outcome = AgentOutcome(
        kind="needs_approval",
        request=RequestPayload(tool="shell", arguments={"command": "pytest -q"}, rule="asked"),
    )
    core.attempt_succeeded("1", core.tasks["1"], start.dispatch, outcome, T0)
    core.attempt_ended("1", start.dispatch)
    (request,) = core.pending_requests()
    answer = ApproveToolRequest(request_id=request.id, decision="allow_run")
    core.checks.approve_tool(answer)
    core.people.approve_tool(answer, T0)
    second = agent_input(core).permissions
    assert second.approved_rules == [ApprovedRule(rule="shell(=pytest -q)", request_id=request.id)]
    assert first.permissions.approved_rules == []  # what was sent stays as it was sent
    assert first.permissions.run_rules == second.run_rules == ["shell(=make test)"]


def test_only_a_person_approving_the_plan_gives_invented_roles_their_tools():
    options = RunOptions(review=True, review_timeout=5, review_timeout_action="approve")
    timed_out = LeaderCore(RunInput(workflow=parse_workflow(PLAN), options=options), "run-1", T0)
    assert timed_out.review_timed_out(T0) is True  # the plan runs …
    role = agent_input(timed_out).role
    assert role is not None  # … but its role asks for each use of the shell
    assert "shell" not in role.allowed_tools and "shell" in role.requested_tools

    approved = LeaderCore(RunInput(workflow=parse_workflow(PLAN), options=options), "run-1", T0)
    approved.checks.approve_plan(ApprovePlanRequest(version=1))
    approved.people.approve_plan(ApprovePlanRequest(version=1), T0)
    role = agent_input(approved).role
    assert role is not None and "shell" in role.allowed_tools


# -- the permission log --------------------------------------------------------------------------


def test_the_permission_log_keeps_a_command_as_long_as_the_checker_reads():
    command = "echo " + "x" * (MAX_COMMAND - 5)
    assert json.loads(summarize({"command": command, "timeout": 5})) == {
        "command": command,
        "timeout": 5,
    }
    content = "y" * (MAX_COMMAND + 10)
    shown = json.loads(summarize({"path": "a.txt", "content": content}))
    assert shown["path"] == "a.txt"
    assert shown["content"] == "y" * MAX_COMMAND + "… (10 more characters)"
