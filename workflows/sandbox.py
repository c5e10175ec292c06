"""The sandbox the workers run workflows in: the SDK's own, with three of its costs taken out.

The SDK's sandbox enters the workflow's isolated module world by ``exec`` of a short source
string: at every activation, and for a command's payload contexts (serialization, storage),
which it asks for every payload of a workflow task (an activity's input, its Web UI summary,
its result) in each of three passes over it. ``exec`` of a string compiles it again each time,
and each entry puts the sandbox's import hooks in place and takes them out: py-spy of 200-agent
fan-outs put those contexts at half the worker's workflow-side time outside the workflow's own
thread, 70 % of it compilation. And it imports the workflow's modules again into every run's
new sandbox, its import hook run at each import statement. So:

* the glue strings (one per workflow class and a few fixed ones) are compiled once;
* a command's contexts are read once per activation, from the workflow's instance directly —
  its answer only reads the run's info and its pending commands, and the SDK's own way (into
  the sandbox) is kept for where that instance is not at hand;
* the modules of workflows/ that the leader's class uses and that keep nothing of a run
  (:data:`PASSED_THROUGH`: its I/O, attempts, guards, patches, failures …) are passed through —
  imported once by the worker, as xsky/ already is — instead of into every run's sandbox
  (~5 ms of every run: a quarter of a one-agent run's replay). The workflow classes' own
  modules are still imported per run. The sandbox's restrictions (no wall clock, no I/O …) do
  not reach into passed-through modules as a run executes them; for these they are checked by
  the tests instead: tests/unit/test_workflow_sandbox.py replays recorded runs in the SDK's
  sandbox with every module of workflows/ imported into it, and checks that replaying runs
  leaves nothing in the passed-through modules.

The SDK offers no hook for the first two (``_Instance._run_code`` is private): where a release
no longer has it, ``workflow_runner`` gives the SDK's sandbox as it is (slower, the same
behaviour), and tests/unit/test_workflow_sandbox.py fails so that the change is seen. Nothing
else changes: the restrictions for the workflows' own modules and the isolation between runs are
the SDK's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from types import CodeType
from typing import Any

from temporalio.worker import WorkflowInstance, WorkflowInstanceDetails, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions
from temporalio.worker.workflow_sandbox import _runner as sdk_runner


@lru_cache(maxsize=64)
def compiled(source: str) -> CodeType:
    """The code of one of the sandbox's glue strings (compiled as ``exec`` would)."""
    return compile(source, "<string>", "exec")


# The SDK's instance class, where it still exists (see ``supported``).
_SdkInstance: Any = getattr(sdk_runner, "_Instance", object)


class _CompiledOnceInstance(_SdkInstance):
    def __init__(self, *args: Any) -> None:
        # (kind, command) -> the context the workflow's instance gave for it (see _context)
        self._contexts: dict[tuple[str, Any], Any] = {}
        super().__init__(*args)

    def _run_code(self, code: str, **extra_globals: Any) -> None:
        # exec() takes a code object as it takes a string.
        super()._run_code(compiled(code), **extra_globals)

    def activate(self, act: Any) -> Any:
        # A command's context is read from the workflow's pending commands, which change only
        # while its code runs: what was read before an activation is not used after it (and
        # the memory holds one activation's commands, not a run's).
        self._contexts.clear()
        try:
            return super().activate(act)
        finally:
            self._contexts.clear()

    def get_serialization_context(self, command_info: Any) -> Any:
        return self._context("serialization", command_info, super().get_serialization_context)

    def get_external_store_context(self, command_info: Any) -> Any:
        return self._context("store", command_info, super().get_external_store_context)

    def _context(self, kind: str, command_info: Any, enter: Callable[[Any], Any]) -> Any:
        """The context of ``command_info``, read once per activation.

        The SDK asks again for every payload of a command in each of its three passes over a
        workflow task (encode, external store, references), and each time entered the sandbox
        (its import hooks put in place and taken out) to ask the workflow's instance, whose
        answer only reads the run's info and its pending commands. That instance is asked
        directly (``enter``, the SDK's way, where it is not at hand)."""
        key = (kind, command_info)
        if key not in self._contexts:
            inner = getattr(self.globals_and_locals.get("__temporal_in_sandbox"), "instance", None)
            read = getattr(inner, _READERS[kind], None) or enter
            self._contexts[key] = read(command_info)
        return self._contexts[key]


# The workflow instance's methods that answer a command's contexts (the SDK's names).
_READERS = {"serialization": "get_serialization_context", "store": "get_external_store_context"}


@dataclass(frozen=True)
class CompiledOnceSandbox(SandboxedWorkflowRunner):
    """The SDK's sandbox, its glue compiled once and a command's contexts read once."""

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        instance: WorkflowInstance = _CompiledOnceInstance(
            det, self.runner_class, self.restrictions
        )
        return instance


def supported() -> bool:
    """Does the installed SDK still run its sandbox's glue through ``_Instance._run_code``?"""
    return _SdkInstance is not object and callable(getattr(_SdkInstance, "_run_code", None))


# Modules of workflows/ the leader's class imports that keep nothing of a run (module-level
# constants, functions and classes only): one copy per worker serves every run.
PASSED_THROUGH = (
    "workflows.details",
    "workflows.failures",
    "workflows.patches",
    "workflows.leader.attempts",
    "workflows.leader.blobs",
    "workflows.leader.guards",
    "workflows.leader.hosts",
    "workflows.leader.io",
    "workflows.leader.judgment",
    "workflows.leader.metrics",
    "workflows.leader.people",
)


def workflow_runner() -> WorkflowRunner:
    """The runner every xsky worker gives ``Worker(workflow_runner=...)``."""
    restrictions = SandboxRestrictions.default.with_passthrough_modules(*PASSED_THROUGH)
    if supported():
        return CompiledOnceSandbox(restrictions=restrictions)
    return SandboxedWorkflowRunner(restrictions=restrictions)
