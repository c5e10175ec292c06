"""A run's sandbox shows its own artifacts, never a folder the store keeps for itself: a run
whose workflow id is `_pages` (every run's kept browser pages, their cookies) or `_workspaces`
(named workspaces) — an id xsky's CLI refuses but any Temporal client may start — was shown
that folder as its own (a fourth review read another run's login cookie from a command)."""

from __future__ import annotations

from pathlib import Path

import pytest

from activities.sandbox.confine import confinement_for, sandbox_settings
from xsky.artifacts import pages_folder
from xsky.config import load_settings


@pytest.mark.parametrize("run_id", ["_pages", "_workspaces", "_x"])
def test_a_store_folder_is_no_runs_artifacts(
    run_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XSKY_HOME", str(tmp_path))
    settings = load_settings()
    c = confinement_for(settings, sandbox_settings([]), tmp_path / "ws", run_id)
    pages = settings.artifacts / pages_folder("victim")
    workspaces = settings.artifacts / "_workspaces"
    assert not any(pages.is_relative_to(p) or workspaces.is_relative_to(p) for p in c.readable)
    # its own folder (xsky/artifacts.py run_folder), which no other run's or the store's is
    assert len(c.readable) == 1 and not c.readable[0].name.startswith("_")


def test_a_runs_own_artifacts_are_readable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XSKY_HOME", str(tmp_path))
    settings = load_settings()
    c = confinement_for(settings, sandbox_settings([]), tmp_path / "ws", "xsky-a-123abc")
    assert c.readable == (settings.artifacts / "xsky-a-123abc",)
