"""The sandbox the workers run workflows in: the SDK's own, with its glue code compiled once.

The SDK's sandbox enters the workflow's isolated module world by ``exec`` of a short source
string — for every activation, and for the serialization context of every payload a workflow
task carries (each activity's input, its Web UI summary, its result). ``exec`` of a string
compiles it again each time: ~60 µs, some 600 times for a 200-agent fan-out's payloads. py-spy of
those fan-outs put 70 % of ``get_serialization_context``'s time in that compilation, and the
serialization contexts at half the worker's workflow-side time outside the workflow's own
thread. The strings are the SDK's own and few (one per workflow class and four fixed ones), so
each is compiled once and its code object run after. Nothing else changes: the restrictions,
the per-run import of the workflow's modules, the isolation between runs are the SDK's.

The SDK offers no hook for this: ``_Instance._run_code`` is private. Where an SDK release no
longer has it, ``workflow_runner`` gives the SDK's sandbox as it is (slower, never wrong), and
tests/unit/test_workflow_sandbox.py fails so that the change is seen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from types import CodeType
from typing import Any

from temporalio.worker import WorkflowInstance, WorkflowInstanceDetails, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner
from temporalio.worker.workflow_sandbox import _runner as sdk_runner


@lru_cache(maxsize=64)
def compiled(source: str) -> CodeType:
    """The code of one of the sandbox's glue strings (compiled as ``exec`` would)."""
    return compile(source, "<string>", "exec")


# The SDK's instance class, where it still exists (see ``supported``).
_SdkInstance: Any = getattr(sdk_runner, "_Instance", object)


class _CompiledOnceInstance(_SdkInstance):
    def __init__(self, *args: Any) -> None:
        # (kind, command) -> the context the sandboxed instance gave for it (see get_context)
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
    """The SDK's sandbox whose glue strings are compiled once per worker process."""

    def create_instance(self, det: WorkflowInstanceDetails) -> WorkflowInstance:
        instance: WorkflowInstance = _CompiledOnceInstance(
            det, self.runner_class, self.restrictions
        )
        return instance


def supported() -> bool:
    """Does the installed SDK still run its sandbox's glue through ``_Instance._run_code``?"""
    return _SdkInstance is not object and callable(getattr(_SdkInstance, "_run_code", None))


def workflow_runner() -> WorkflowRunner:
    """The runner every xsky worker gives ``Worker(workflow_runner=...)``."""
    return CompiledOnceSandbox() if supported() else SandboxedWorkflowRunner()
