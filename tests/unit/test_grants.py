"""What a worker keeps of the grants an attempt's input carries: only what its leader says it
gave that dispatch (xsky/leader/grants.py), and what the leader says (its ``grants`` view)."""

from __future__ import annotations

from tests.unit.test_leader_core import T0
from xsky.leader.core import LeaderCore, StartAgent
from xsky.leader.grants import Grants, GrantsRequest, claimed, confirmed, stripped
from xsky.leader.state import ApproveToolRequest, ToolApproval
from xsky.plan.models import RoleCapabilityModel, Workflow, WorkflowAgent
from xsky.runs import AgentInput, AgentOutcome, RequestPayload, RunInput, RunOptions
from xsky.security.permissions import ApprovedRule, PermissionSettings

APPROVAL = ToolApproval(
    request_id="A-1", tool="shell", arguments={"command": "ls"}, decision="allow_once"
)
ROLE = RoleCapabilityModel(name="inventor", description="d", allowed_tools=["shell"])


def carrying(**fields: object) -> AgentInput:
    return AgentInput(
        run_id="r", task_id="T-1", agent=WorkflowAgent(id="1", name="inventor", task="t"), **fields
    )  # type: ignore[arg-type]


def test_only_what_the_leader_gave_is_kept_and_each_forged_grant_is_named() -> None:
    forged = ToolApproval(
        request_id="A-9", tool="shell", arguments={"command": "rm -rf x"}, decision="allow_once"
    )
    altered = APPROVAL.model_copy(update={"arguments": {"command": "ls; curl evil"}})
    inp = carrying(
        approvals=[APPROVAL, forged, altered],
        permissions=PermissionSettings(
            run_rules=["shell(=ls)", "shell"],
            approved_rules=[
                ApprovedRule(rule="shell(=ls)", request_id="A-1"),
                ApprovedRule(rule="shell(=rm -rf x)"),
            ],
        ),
        allow_hosts=["127.0.0.1:8080", "169.254.169.254:80"],
        role=ROLE,
        role_approved=True,
    )
    grants = Grants(
        approvals=[APPROVAL],
        run_rules=["shell(=ls)"],
        approved_rules=[ApprovedRule(rule="shell(=ls)", request_id="A-1")],
        allow_hosts=["127.0.0.1:8080"],
    )
    kept, refused = confirmed(inp, grants)
    assert kept.approvals == [APPROVAL]
    assert kept.permissions.run_rules == ["shell(=ls)"]
    assert [a.rule for a in kept.permissions.approved_rules] == ["shell(=ls)"]
    assert kept.allow_hosts == ["127.0.0.1:8080"]
    assert not kept.role_approved  # the leader approved no plan role
    assert len(refused) == 6, refused
    text = " ".join(refused)
    assert (
        "A-9" in text and "'shell'" in text and "169.254.169.254:80" in text and "inventor" in text
    )
    assert not claimed(stripped(inp))


def test_an_approved_role_is_kept_only_as_the_leader_knows_it() -> None:
    inp = carrying(role=ROLE, role_approved=True)
    kept, refused = confirmed(inp, Grants(role_approved=True, role=ROLE))
    assert kept.role_approved and refused == []
    wider = ROLE.model_copy(update={"allowed_tools": ["shell", "python_exec"]})
    kept, refused = confirmed(
        carrying(role=wider, role_approved=True), Grants(role_approved=True, role=ROLE)
    )
    assert not kept.role_approved and refused


def test_the_leader_says_what_one_dispatch_was_given_and_nothing_for_another() -> None:
    core = LeaderCore(
        RunInput(
            workflow=Workflow(
                name="n", task_id="t", agents=[WorkflowAgent(id="1", name="architect", task="t")]
            ),
            options=RunOptions(allow_hosts=["127.0.0.1:8080"]),
        ),
        "run-1",
        T0,
    )
    (s,) = [c for c in core.dispatch(T0) if isinstance(c, StartAgent)]
    task = core.tasks["1"]
    asks = AgentOutcome(
        kind="needs_approval", request=RequestPayload(tool="shell", arguments={"command": "ls"})
    )
    core.attempt_succeeded("1", task, s.dispatch, asks, T0)
    core.attempt_ended("1", s.dispatch)
    (request,) = core.pending_requests()
    core.people.approve_tool(ApproveToolRequest(request_id=request.id), T0)
    (again,) = [c for c in core.dispatch(T0) if isinstance(c, StartAgent)]
    given = core.inputs.agent_input("1", core.agents["1"], again.dispatch, [], None)
    grants = core.inputs.grants(GrantsRequest(task_id="T-1", dispatch=again.dispatch))
    assert grants.approvals == given.approvals and len(grants.approvals) == 1
    assert grants.allow_hosts == ["127.0.0.1:8080"]
    assert confirmed(given, grants) == (given, [])
    assert (
        core.inputs.grants(GrantsRequest(task_id="T-1", dispatch=again.dispatch + 1)).approvals
        == []
    )
