"""Recorded workflow histories: the replayer, recording, and which code each was recorded with.

``record(name, history)`` (a no-op unless ``XSKY_RECORD_HISTORIES`` is set) writes
``tests/fixtures/histories/<name>.json`` and, in ``recorded.json`` beside it, the fixture's
workflow type and the digest of every watched module as it was when the history was
recorded. ``stale_modules()`` is the coverage rule built on that (docs/development.md, "Replay histories"): a
watched module whose current code matches no history that exercises it.

A module's digest is of its syntax tree with every docstring (any bare string statement)
removed, so comments, docstrings and formatting do not count; everything else does.
"""

from __future__ import annotations

import ast
import fcntl
import functools
import hashlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle, WorkflowHistory
from temporalio.worker import Replayer

from client.connect import DATA_CONVERTER
from tests.conftest import ROOT
from workflows.leader import LeaderWorkflow
from workflows.sandbox import workflow_runner
from workflows.skills.entity import SkillEntityWorkflow
from workflows.skills.library import SkillLibraryWorkflow
from workflows.skills.watch import SkillDeltaWorkflow, SkillsScanWorkflow
from xsky.wire import build_models

FIXTURES = ROOT / "tests" / "fixtures" / "histories"
RECORDED = FIXTURES / "recorded.json"
RERECORD = (
    "XSKY_RECORD_HISTORIES=1 .venv/bin/python -m pytest "
    "tests/integration/test_replay.py tests/integration/test_replay_verdicts.py "
    "tests/integration/test_replay_budget.py tests/integration/test_replay_coordinator.py "
    "tests/integration/test_replay_skills.py tests/integration/test_replay_mcp.py "
    "tests/integration/test_replay_faults.py"
)
# The code a workflow runs deterministically on replay: the workflows, and the leader's core
# (LeaderWorkflow is a shell around xsky/leader/core.py: most of its decisions are there).
WATCHED = ("workflows", "xsky/leader")


def replayer() -> Replayer:
    build_models()  # as a worker does before it serves: no replayed task builds a model
    return Replayer(
        workflows=[
            LeaderWorkflow,
            SkillsScanWorkflow,
            SkillDeltaWorkflow,
            SkillLibraryWorkflow,
            SkillEntityWorkflow,
        ],
        # xsky's own converter: a payload over 256 KiB is a reference to the store (External
        # Storage), read back from the store this process's settings name
        data_converter=DATA_CONVERTER,
        workflow_runner=workflow_runner(),  # the workers' sandbox (workflows/sandbox.py)
    )


def external_payloads(history: WorkflowHistory) -> int:
    """How many payloads of ``history`` are references to the store (External Storage)."""
    return history.to_json().count('"externalPayloads"')


def recording() -> bool:
    return bool(os.environ.get("XSKY_RECORD_HISTORIES"))


def fixture_files() -> list[Path]:
    return sorted(p for p in FIXTURES.glob("*.json") if p != RECORDED)


def workflow_type(history: WorkflowHistory) -> str:
    return history.events[0].workflow_execution_started_event_attributes.workflow_type.name


# -- reading histories -----------------------------------------------------------------------------


def events(history: WorkflowHistory, kind: int) -> list[Any]:
    return [e for e in history.events if e.event_type == kind]


def agents_scheduled(history: WorkflowHistory) -> list[str]:
    """The activity ids of every run_agent attempt scheduled (T-<id>-v<plan>-d<dispatch>)."""
    return [
        e.activity_task_scheduled_event_attributes.activity_id
        for e in events(history, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
        if e.activity_task_scheduled_event_attributes.activity_type.name == "run_agent"
    ]


async def idle_history(handle: WorkflowHandle[Any, Any], what: str) -> WorkflowHistory:
    """The history of a workflow that never ends by itself, once it waits for its next message:
    its last event a completed workflow task, no activity pending."""
    from tests.integration.eventually import eventually

    async def idle() -> WorkflowHistory:
        desc = await handle.describe()
        history = await handle.fetch_history()
        last = history.events[-1].event_type
        assert last == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, f"{what}: not idle yet"
        assert not desc.raw_description.pending_activities, f"{what}: an activity is pending"
        return history

    return await eventually(idle, timeout=60)


# -- what the code was -----------------------------------------------------------------------------


def code_digest(source: str) -> str:
    """sha256 of the module's ``ast.dump`` without docstrings (nor any other bare string)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if not isinstance(body, list) or not body or not isinstance(body[0], ast.stmt):
                continue
            kept = [
                s
                for s in body
                if not (
                    isinstance(s, ast.Expr)
                    and isinstance(s.value, ast.Constant)
                    and isinstance(s.value.value, str)
                )
            ]
            setattr(node, field, kept or [ast.Pass()])
    return hashlib.sha256(ast.dump(tree).encode()).hexdigest()


def watched_modules() -> list[Path]:
    return sorted(p for top in WATCHED for p in (ROOT / top).rglob("*.py"))


def rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def current_digests() -> dict[str, str]:
    return {rel(p): code_digest(p.read_text()) for p in watched_modules()}


@functools.cache
def _tree(path: Path) -> ast.Module:
    """A module's syntax tree, to read (code_digest parses its own: it changes the tree)."""
    return ast.parse(path.read_text())


def _imports(path: Path) -> set[str]:
    """The watched modules ``path`` imports (at any depth of its code), as relative paths."""
    names: set[str] = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    found = set()
    for name in names:
        parts = name.split(".")
        # The module, and the packages Python imports on the way to it.
        paths = [ROOT.joinpath(*parts[:i], "__init__.py") for i in range(1, len(parts) + 1)]
        paths.append(ROOT.joinpath(*parts).with_suffix(".py"))
        found |= {
            rel(p)
            for p in paths
            if p.is_file() and rel(p).startswith(tuple(f"{w}/" for w in WATCHED))
        }
    return found


def workflow_modules() -> dict[str, str]:
    """Workflow type → the watched module that defines it (``@workflow.defn(name=...)``)."""
    types = {}
    for path in watched_modules():
        for node in ast.walk(_tree(path)):
            if not isinstance(node, ast.ClassDef):
                continue
            for deco in node.decorator_list:
                if isinstance(deco, ast.Call) and ast.unparse(deco.func) == "workflow.defn":
                    named = [ast.literal_eval(k.value) for k in deco.keywords if k.arg == "name"]
                    types[named[0] if named else node.name] = rel(path)
    return types


def exercised_by(workflow_type: str, types: dict[str, str] | None = None) -> set[str]:
    """The watched modules a workflow of this type runs: its own and what they import."""
    start = Path((types or workflow_modules())[workflow_type])
    packages = [(start.parents[i] / "__init__.py").as_posix() for i in range(len(start.parts) - 1)]
    seen: set[str] = set()
    todo = [start.as_posix(), *packages]
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo += sorted(_imports(ROOT / module))
    return seen


# -- recording -------------------------------------------------------------------------------------


@contextmanager
def _locked() -> Iterator[None]:
    """recorded.json is read and written by one test at a time (xdist runs tests in two processes)."""
    fd = os.open(FIXTURES, os.O_RDONLY)  # the folder itself: no lock file left behind
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def read_recorded() -> dict[str, dict[str, Any]]:
    """Fixture name → {"workflowType": …, "modules": {path: digest}}."""
    if not RECORDED.is_file():
        return {}
    fixtures: dict[str, dict[str, Any]] = json.loads(RECORDED.read_text())["fixtures"]
    return fixtures


async def record(name: str, history: WorkflowHistory) -> None:
    """Replay ``history`` (raises on non-determinism); when recording, keep it as ``name``."""
    await replayer().replay_workflow(history)
    if not recording():
        return
    # A fixture must replay from a fresh clone, where the store that held them is gone.
    assert not external_payloads(history), f"{name}: a fixture may not refer to the store"
    (FIXTURES / f"{name}.json").write_text(history.to_json())
    with _locked():
        fixtures = read_recorded()
        fixtures[name] = {"workflowType": workflow_type(history), "modules": current_digests()}
        RECORDED.write_text(
            json.dumps(
                {
                    "about": "the code each history was recorded with (tests/integration/histories.py); "
                    f"written by `{RERECORD}`",
                    "fixtures": dict(sorted(fixtures.items())),
                },
                indent=1,
            )
            + "\n"
        )


# -- the coverage rule -----------------------------------------------------------------------------


def stale_modules(current: dict[str, str] | None = None) -> list[str]:
    """Problems, one sentence each: watched code no recorded history exercises as it is now
    (``current``: module → digest, by default the code on disk)."""
    recorded = read_recorded()
    files = {p.stem: p for p in fixture_files()}
    problems = [
        f"{FIXTURES.name}/{name}.json has no entry in recorded.json"
        for name in files.keys() - recorded.keys()
    ]
    problems += [
        f"recorded.json names {name}.json, which is not there"
        for name in recorded.keys() - files.keys()
    ]
    types = workflow_modules()
    by_type: dict[str, list[str]] = {t: [] for t in types}
    for name, entry in sorted(recorded.items()):
        by_type.setdefault(str(entry["workflowType"]), []).append(name)
    problems += [
        f"no recorded history of {t} ({types[t]})" for t, names in by_type.items() if not names
    ]
    exercises = {t: exercised_by(t, types) for t in types}
    for module, digest in (current or current_digests()).items():
        users = [t for t, modules in exercises.items() if module in modules]
        # A module no workflow imports (patches.py): any history recorded with it.
        names = [n for t in users for n in by_type[t]] if users else sorted(recorded)
        if not any(recorded[n]["modules"].get(module) == digest for n in names):
            problems.append(
                f"{module} changed since the histories that exercise it were recorded "
                f"({', '.join(names) or 'none'}): make sure the old histories still replay "
                f"(a change they do not replay goes behind workflow.patched), then re-record: {RERECORD}"
            )
    return problems
