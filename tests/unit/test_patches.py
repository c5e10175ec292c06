"""The patch registry and the workflow code agree (workflows/patches.py)."""

from __future__ import annotations

import ast

import pytest

from tests.conftest import ROOT
from workflows.patches import PATCHES, RETIRED

WORKFLOWS = ROOT / "workflows"


def patch_calls(source: str) -> tuple[list[str], list[str]]:
    """The ids passed to ``patched`` / ``workflow.deprecate_patch``, and the problems: a direct
    ``workflow.patched`` call, or an id that is not a string literal."""
    ids: list[str] = []
    problems: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        owner = (
            func.value.id
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
            else ""
        )
        if name not in ("patched", "deprecate_patch"):
            continue
        if name == "patched" and owner == "workflow":
            problems.append(
                f"line {node.lineno}: workflow.patched directly (use workflows.patches.patched)"
            )
        arg = node.args[0] if node.args else None
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            ids.append(arg.value)
        else:
            problems.append(f"line {node.lineno}: a patch id that is not a string literal")
    return ids, problems


def used_ids() -> dict[str, list[str]]:
    used: dict[str, list[str]] = {}
    # (the leader's components ask a patch through the workflow's ``patched``, handed to them)
    leader = [*(ROOT / "xsky" / "leader").rglob("*.py"), *(ROOT / "xsky" / "plan").rglob("*.py")]
    for path in sorted([*WORKFLOWS.rglob("*.py"), *leader]):
        if path.name == "patches.py":
            continue
        ids, problems = patch_calls(path.read_text())
        assert not problems, f"{path.relative_to(ROOT)}: {problems}"
        for patch_id in ids:
            used.setdefault(patch_id, []).append(str(path.relative_to(ROOT)))
    return used


def test_every_patch_used_is_registered_and_every_registered_patch_is_used():
    used = used_ids()
    assert sorted(set(used) - set(PATCHES)) == [], "used but not registered in workflows/patches.py"
    assert sorted(set(PATCHES) - set(used)) == [], "registered but used nowhere: retire it"


def test_a_retired_id_is_never_used_again():
    assert not set(PATCHES) & RETIRED
    assert not set(used_ids()) & RETIRED


def test_every_patch_says_what_it_changed_since_when_and_when_it_may_go():
    for patch_id, patch in PATCHES.items():
        assert patch.what and patch.since.startswith("v") and patch.delete_when, patch_id


def test_the_scan_sees_direct_calls_unregistered_ids_and_computed_ids():
    ids, problems = patch_calls(
        "from workflows.patches import patched\n"
        "if patched('a'): pass\n"
        "if workflow.patched('b'): pass\n"
        "if patched(name): pass\n"
        "workflow.deprecate_patch('c')\n"
    )
    assert ids == ["a", "b", "c"]
    assert [p.split(":")[0] for p in problems] == ["line 3", "line 4"]


def test_an_unregistered_id_is_refused_before_it_reaches_the_history():
    from workflows.patches import patched

    with pytest.raises(KeyError, match="not registered"):
        patched("no-such-patch")


def test_a_signal_of_another_name_is_said_what_to_send_instead() -> None:
    """(patch unknown-signals-refused: workflows/leader/signals.py)"""
    from workflows.leader import LeaderWorkflow
    from workflows.leader.signals import _handlers, unknown_signal

    updates, queries = _handlers(LeaderWorkflow)
    assert {"resume_run", "pause_run", "nudge_task", "answer"} <= updates
    assert {"task_board", "permission_log"} <= queries
    assert unknown_signal("resume_run", updates, queries).startswith(
        "resume_run is an update, not a signal: use `temporal workflow update execute "
        "--name resume_run`"
    )
    assert unknown_signal("task_board", updates, queries).startswith("task_board is a query")
    assert unknown_signal("pasue", updates, queries).startswith("no signal 'pasue'")
