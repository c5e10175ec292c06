"""One attempt, prepared once (activities/agents/attempt.py) and read by the direct call
(activities/agents/direct.py): without Temporal, from an AgentInput and the worker's settings."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from temporalio.exceptions import ApplicationError

from activities.agents.activity import store_result
from activities.agents.attempt import Attempt, prepare
from activities.agents.beat import Beat
from activities.agents.direct import direct_call, offline_llm
from activities.agents.key import AgentKey, checkpoint_name
from activities.agents.ledger import AttemptLedger
from activities.artifacts import ArtifactStore
from activities.browser import BrowserPool
from activities.storage.snapshots import workspace_key
from xsky.artifacts import marker
from xsky.config import load_settings
from xsky.plan.models import RoleCapabilityModel, WorkflowAgent
from xsky.runs import AgentInput, AgentOutcome, DecisionRecord


def attempt_of(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, inp: AgentInput, **kw: Any
) -> Attempt:
    monkeypatch.setenv("XSKY_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XSKY_PROJECT_DIR", str(tmp_path / "project"))
    (tmp_path / "user-settings.json").write_text('{"security": {"sandbox": "off"}}')
    settings = load_settings()
    store = ArtifactStore(settings.artifacts)
    beat = Beat(task_id=inp.task_id, dispatch=inp.dispatch, progress_interval=5.0)
    key = AgentKey.of(inp)
    return prepare(
        inp,
        key=key,
        ledger=AttemptLedger.of(store.objects, key),
        settings=settings,
        store=store,
        browsers=BrowserPool(),
        beat=beat,
        started=datetime.now(UTC),
        number=2,
        **kw,
    )


def agent_input(agent: WorkflowAgent, **kw) -> AgentInput:
    return AgentInput(run_id="run-1", task_id="T-1", agent=agent, plan_version=2, dispatch=3, **kw)


def test_an_attempt_is_prepared_once_into_a_frozen_context(tmp_path, monkeypatch):
    agent = WorkflowAgent(id="a1", name="shell", task="list", config={"tool": "file_list"})
    a = attempt_of(tmp_path, monkeypatch, agent_input(agent))
    assert (
        a.ctx.workspace.is_dir()
        and a.ctx.workspace == tmp_path / "home" / "runs" / "run-1" / "workspace"
    )
    assert (a.key.run_id, a.key.agent_id, a.key.file_prefix) == ("run-1", "a1", "v2-d3-")
    assert a.ctx.file_prefix == "v2-d3-" and a.ctx.unconfined and a.gate.unconfined
    assert a.tool == "file_list" and a.number == 2
    assert a.role is not None and a.role.name == "shell"  # the worker's built-in role
    assert a.ctx.readable == a.gate.readable and a.ctx.record == a.gate.network
    assert str((tmp_path / "home" / "artifacts").resolve()) in a.gate.protected
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.tool = "shell"  # type: ignore[misc]


@pytest.mark.parametrize("tool", ["noop", "gather", "llm"])
def test_an_agent_whose_call_touches_no_workspace_is_given_none(tmp_path, monkeypatch, tool):
    agent = WorkflowAgent(id="a1", name="llm", task="t", config={"tool": tool})
    a = attempt_of(tmp_path, monkeypatch, agent_input(agent))
    assert a.ctx.workspace == tmp_path / "home" / "runs" / "run-1" / "workspace"
    assert not a.ctx.workspace.exists() and a.ctx.confinement is None and a.snapshots is None


@pytest.mark.parametrize("tool", ["noop", "gather", "llm"])
def test_an_attempt_that_touches_no_workspace_looks_nothing_up_for_one(tmp_path, monkeypatch, tool):
    # Its gate decides no call with a path (none of these tools is gated), and it keeps no
    # conversation: neither the workspace's real path nor the checkpoint's name is worked out
    # (the two were a third of an instant no-op attempt's CPU) — both still are for the rest.
    real, linked = tmp_path / "real", tmp_path / "linked"
    real.mkdir()
    linked.symlink_to(real)
    agent = WorkflowAgent(id="a1", name="llm", task="t", config={"tool": tool})
    inp = agent_input(agent)
    a = attempt_of(linked, monkeypatch, inp)
    assert a.gate.workspace == str(linked / "home" / "runs" / "run-1" / "workspace")
    assert a.key.checkpoint is None  # not named while nothing asks for it
    assert a.checkpoints.name == checkpoint_name(inp) == a.key.checkpoint  # named when asked
    other = WorkflowAgent(id="a1", name="shell", task="t", config={"tool": "file_list"})
    b = attempt_of(linked, monkeypatch, agent_input(other))
    assert b.gate.workspace == str(real / "home" / "runs" / "run-1" / "workspace")


def test_what_lower_layers_need_is_resolved_once_into_the_attempt(tmp_path, monkeypatch):
    refused = DecisionRecord(
        at=datetime.now(UTC), tool="grant", arguments="T-1", effect="deny", reason="not given"
    )
    agent = WorkflowAgent(
        id="a1", name="shell", task="t", config={"tool": "shell", "command": "ls"}
    )
    a = attempt_of(
        tmp_path, monkeypatch, agent_input(agent), refused=[refused], workspace_host=True
    )
    # the grants its leader did not confirm open the permission log
    assert a.gate.decisions == [refused]
    # the dispatch's key reaches the sandbox; its one command's end is recorded beside its ledger
    assert a.ctx.confinement is not None
    assert a.ctx.confinement.extra_env == {"XSKY_ATTEMPT_KEY": a.key.idempotency_key}
    assert a.ctx.command_record is not None and a.ctx.command_record.name.endswith(".command.json")
    # a direct agent has no model; an attempt on its workspace's host snapshots that workspace
    assert a.target is None and a.snapshots is not None
    assert (a.snapshots.key, a.snapshots.folder) == (
        workspace_key("run-1", None, None),
        a.ctx.workspace,
    )
    # the skill library is the worker's, read as this run reads it
    assert (a.skills.folder, a.skills.run_id) == (tmp_path / "skills-home" / "skills", "run-1")
    assert a.checkpoints.name == a.key.conversation and a.key.dispatch_key == "v2-d3"
    elsewhere = attempt_of(tmp_path, monkeypatch, agent_input(agent))
    assert elsewhere.snapshots is None and elsewhere.gate.decisions == []


def test_an_agent_without_a_tool_gets_its_model_when_one_is_configured(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("XSKY_MODEL", "worker-model")
    thinker = WorkflowAgent(id="a1", name="verify", task="check it")
    a = attempt_of(tmp_path, monkeypatch, agent_input(thinker))
    assert a.tool is None and a.target is not None and a.target.model == "worker-model"
    chosen = WorkflowAgent(id="a1", name="verify", task="check it", config={"model": "m2"})
    assert attempt_of(tmp_path, monkeypatch, agent_input(chosen)).target.model == "m2"
    direct = WorkflowAgent(id="a1", name="shell", task="t", config={"tool": "noop"})
    assert attempt_of(tmp_path, monkeypatch, agent_input(direct)).target is None


def test_a_role_the_worker_does_not_know_gets_its_privileged_tools_from_a_person(
    tmp_path, monkeypatch
):
    role = RoleCapabilityModel(name="deployer", allowed_tools=["shell", "file_read"])
    agent = WorkflowAgent(id="a1", name="deployer", task="ship it")
    a = attempt_of(tmp_path, monkeypatch, agent_input(agent, role=role))
    assert a.role is not None and "shell" not in a.role.allowed_tools
    assert "shell" in a.gate.permissions.person_only_tools
    approved = attempt_of(tmp_path, monkeypatch, agent_input(agent, role=role, role_approved=True))
    assert approved.role is not None and "shell" in approved.role.allowed_tools
    assert "shell" not in approved.gate.permissions.person_only_tools


def test_the_leaders_markers_are_expanded_but_never_inside_a_shell_command(tmp_path, monkeypatch):
    store = ArtifactStore(tmp_path / "home" / "artifacts")
    ref = store.put_text("run-1", "a0", "v1-d1-result.txt", "the stored text")
    m = marker(ref)
    config = {"tool": "shell", "command": f"echo {m}", "values": {"x": m}}
    agent = WorkflowAgent(id="a1", name="shell", task=f"use {m}", input=m, config=config)
    a = attempt_of(tmp_path, monkeypatch, agent_input(agent, markers=[ref.uri]))
    assert a.task == "use the stored text" and a.input_text == "the stored text"
    assert a.config["values"] == {"x": "the stored text"} and a.config["command"] == f"echo {m}"
    missing = WorkflowAgent(id="a1", name="shell", task=m.replace("a0", "gone"))
    with pytest.raises(ApplicationError) as info:
        attempt_of(
            tmp_path, monkeypatch, agent_input(missing, markers=[ref.uri.replace("a0", "gone")])
        )
    assert info.value.type == "ArtifactMissing" and info.value.non_retryable


def test_a_direct_agent_calls_its_tool_or_the_offline_model(tmp_path, monkeypatch):
    def call(config, name="llm"):
        agent = WorkflowAgent(id="a1", name=name, task="sum it", input="1 2", config=config)
        return direct_call(attempt_of(tmp_path, monkeypatch, agent_input(agent)))

    assert call({"tool": "noop", "seconds": 0, "result": "x"})[::2] == (
        "noop",
        {"seconds": 0, "result": "x"},
    )
    assert call({"tool": "llm"})[::2] == ("llm", {"task": "sum it", "input": "1 2"})
    assert call(None) == ("llm", offline_llm, {"task": "sum it", "input": "1 2"})
    with pytest.raises(ApplicationError, match="has no tool in its <config> and no model") as info:
        call(None, name="shell")
    assert info.value.type == "AgentConfigError"
    assert '{"tool": "shell", "command": "…"}' in info.value.message
    # its kind's own example, as `validate` shows it (a file agent was shown a shell command)
    with pytest.raises(ApplicationError) as info:
        call(None, name="file")
    assert '{"tool": "file_read", "path": "…"}' in info.value.message
    # A role thinks with a model: without one it fails at once with the fix, never boilerplate.
    for role in ("verify", "doc", "architect"):
        with pytest.raises(ApplicationError) as info:
            call(None, name=role)
        assert info.value.type == "AgentConfigError" and info.value.non_retryable
        assert info.value.message.startswith(
            f"agent a1: role {role} needs a model: set XSKY_MODEL and OPENAI_BASE_URL (or OPENAI_API_KEY)"
        )
    assert call({"tool": "llm"}, name="verify")[0] == "llm"  # asked for offline by name: offline


def test_a_completed_result_is_stored_and_travels_inline_only_when_small(tmp_path, monkeypatch):
    agent = WorkflowAgent(id="a1", name="llm", task="t")
    a = attempt_of(tmp_path, monkeypatch, agent_input(agent, artifact_threshold=5))
    small = store_result(a, AgentOutcome(result="tiny"))
    large = store_result(a, AgentOutcome(result="much too long"))
    assert small.result == "tiny" and large.result is None
    assert large.result_ref is not None and a.store.read_text(large.result_ref.uri) == (
        "much too long"
    )
    assert large.result_ref.uri.endswith("/a1/v2-d3-result.txt")
