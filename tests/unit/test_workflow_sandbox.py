"""The workers' workflow sandbox (workflows/sandbox.py): the SDK's sandbox with its glue code
compiled once and a command's payload contexts read once per activation from the workflow's
instance, not through the sandbox — same answers, same restrictions."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from temporalio import workflow
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer
from temporalio.worker._workflow_instance import _WorkflowInstanceImpl
from temporalio.worker.workflow_sandbox import (
    RestrictedWorkflowAccessError,
    SandboxedWorkflowRunner,
)
from temporalio.worker.workflow_sandbox import _runner as sdk_runner

from client.connect import DATA_CONVERTER
from workflows import sandbox
from workflows.leader import LeaderWorkflow

HISTORIES = Path(__file__).resolve().parents[1] / "fixtures" / "histories"
# Recorded leader runs with activities, results and a continue-as-new between them.
RECORDED = ("fanout.json", "diamond.json", "large_plan.json", "continued.json")


def _replay(runner: Any, names: tuple[str, ...] = RECORDED) -> None:
    replayer = Replayer(
        workflows=[LeaderWorkflow], data_converter=DATA_CONVERTER, workflow_runner=runner
    )

    async def go() -> None:
        for name in names:
            text = (HISTORIES / name).read_text()
            await replayer.replay_workflow(WorkflowHistory.from_json(name, text))

    asyncio.run(go())


def test_the_installed_sdk_still_runs_its_sandbox_glue_through_run_code() -> None:
    # If this fails, a new SDK no longer has the private method the runner relies on: the
    # workers fall back to the SDK's own sandbox (correct, slower); look at workflows/sandbox.py.
    assert sandbox.supported()
    assert isinstance(sandbox.workflow_runner(), sandbox.CompiledOnceSandbox)


def test_recorded_runs_replay_with_each_glue_string_compiled_once() -> None:
    sandbox.compiled.cache_clear()
    _replay(sandbox.workflow_runner())
    info = sandbox.compiled.cache_info()
    # One string per workflow class to import it, and the SDK's fixed few (create, activate);
    # every activation after reuses a compiled one.
    assert info.misses <= 8, info
    assert info.hits >= 10 * info.misses, info


def test_a_commands_context_is_read_once_per_activation_without_entering_the_sandbox(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entered = 0  # the SDK's way: into the sandbox, its import hooks in place
    read = 0  # xsky's: the workflow's instance asked directly
    asked = 0  # what the SDK asked for
    differs: list[str] = []
    sdk_enter = sdk_runner._Instance.get_serialization_context
    sdk_read = _WorkflowInstanceImpl.get_serialization_context

    def entering(self: Any, command_info: Any) -> Any:
        nonlocal entered
        entered += 1
        return sdk_enter(self, command_info)

    def reading(self: Any, command_info: Any) -> Any:
        nonlocal read
        read += 1
        return sdk_read(self, command_info)

    remembered = sandbox._CompiledOnceInstance._context

    def checked(self: Any, kind: str, command_info: Any, enter: Any) -> Any:
        # Every answer is compared with the SDK's own, read through the sandbox.
        nonlocal asked, entered, read
        asked += kind == "serialization"
        answer = remembered(self, kind, command_info, enter)
        counts = entered, read
        sdks = enter(command_info)
        entered, read = counts  # the check's own reads are not the runner's
        if answer != sdks:
            differs.append(f"{kind} {command_info}: {answer!r} != {sdks!r}")
        return answer

    monkeypatch.setattr(sdk_runner._Instance, "get_serialization_context", entering)
    monkeypatch.setattr(_WorkflowInstanceImpl, "get_serialization_context", reading)
    monkeypatch.setattr(sandbox._CompiledOnceInstance, "_context", checked)
    _replay(sandbox.workflow_runner())
    assert not differs, differs[:3]
    assert entered == 0
    # The SDK asks for a payload's context in each of its passes over a workflow task; the
    # workflow's instance is asked once per command and activation.
    assert asked >= 3 * read > 0, (asked, read)


def test_the_sandboxs_restrictions_hold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "wall_clock_workflow.py").write_text(
        textwrap.dedent(
            """
            import datetime

            from temporalio import workflow

            STARTED = datetime.datetime.now()  # not allowed in a workflow's module

            @workflow.defn
            class WallClockWorkflow:
                @workflow.run
                async def run(self) -> str:
                    return STARTED.isoformat()
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    from wall_clock_workflow import WallClockWorkflow  # type: ignore[import-not-found]

    defn = workflow._Definition.must_from_class(WallClockWorkflow)
    errors = []
    for runner in (SandboxedWorkflowRunner(), sandbox.workflow_runner()):
        with pytest.raises(RestrictedWorkflowAccessError) as refused:
            runner.prepare_workflow(defn)
        errors.append(str(refused.value))
    assert errors[0] == errors[1]
    assert "Cannot access datetime.datetime.now" in errors[1]
    sys.modules.pop("wall_clock_workflow", None)


def test_recorded_runs_keep_to_the_restrictions_with_every_workflows_module_sandboxed() -> None:
    # The workers pass workflows/ modules of PASSED_THROUGH through, where the sandbox's
    # restrictions do not reach as a run executes them: the runs replay here in the SDK's own
    # sandbox, each of those modules imported into it, so a restricted call (the wall clock,
    # I/O …) on their paths fails this test.
    assert (
        not set(sandbox.PASSED_THROUGH) & SandboxedWorkflowRunner().restrictions.passthrough_modules
    )
    _replay(SandboxedWorkflowRunner())


def test_replaying_runs_leaves_nothing_in_the_passed_through_modules() -> None:
    # Passed-through modules are one copy for every run of the worker: a run that kept
    # something in one (a global rebound, a module-level table changed) would leak into others.
    modules = [sys.modules[name] for name in sandbox.PASSED_THROUGH]

    def globals_now() -> list[dict[str, tuple[int, str]]]:
        return [{k: (id(v), repr(v)) for k, v in vars(m).items()} for m in modules]

    before = globals_now()
    _replay(sandbox.workflow_runner())
    assert globals_now() == before
