"""A run's workspace deleted under it is not made again empty (chaos14, chaos15): the run's
next attempt fails, saying the workspace is gone — never a "completed" over files that are
gone. Another run naming the same workspace still makes it."""

from __future__ import annotations

import shutil
from types import SimpleNamespace

import pytest
from temporalio.exceptions import ApplicationError

from activities.agents.attempt import workspace_for
from activities.sandbox.confine import SandboxSettings
from xsky.config import load_settings


@pytest.fixture
def settings(tmp_path):
    return load_settings({"XSKY_HOME": str(tmp_path / "home")})


def test_a_workspace_deleted_under_a_run_fails_its_next_attempt(settings):
    sandbox = SandboxSettings(sandbox_user=None)
    ws = workspace_for(settings, sandbox, None, "run-a", used_by="run-a")
    (ws / "work.txt").write_text("done")
    # the same run again: the same workspace, with its files
    assert workspace_for(settings, sandbox, None, "run-a", used_by="run-a") == ws
    shutil.rmtree(ws.parent)
    with pytest.raises(ApplicationError) as e:
        workspace_for(settings, sandbox, None, "run-a", used_by="run-a")
    assert e.value.type == "WorkspaceVanished" and e.value.non_retryable
    assert "is gone" in str(e.value)
    assert not ws.exists()  # not made again empty


def test_a_named_workspace_deleted_between_runs_is_made_for_the_next_run(settings):
    sandbox = SandboxSettings(sandbox_user=None)
    ws = workspace_for(settings, sandbox, "site", "run-a", used_by="run-a")
    shutil.rmtree(ws)
    # another run naming it: a fresh workspace, as before
    assert workspace_for(settings, sandbox, "site", "run-b", used_by="run-b") == ws
    assert ws.is_dir()
    # the first run, though, lost what it had there
    shutil.rmtree(ws)
    with pytest.raises(ApplicationError, match="is gone"):
        workspace_for(settings, sandbox, "site", "run-a", used_by="run-a")


def test_a_mark_that_cannot_be_written_does_not_fail_the_attempt(settings, monkeypatch):
    """A full or read-only $XSKY_HOME: the agent runs (only the vanish check is lost)."""
    from activities.sandbox import workspace as workspaces

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(workspaces, "mark_used", full)
    sandbox = SandboxSettings(sandbox_user=None)
    assert workspace_for(settings, sandbox, None, "run-a", used_by="run-a").is_dir()


def test_on_its_host_a_workspace_gone_comes_back_from_the_store(settings, tmp_path):
    """review20: on a workspace host (object store, snapshots) the store holds every file the
    run's agents left as of the last one's end; the host's copy gone (a restart with XSKY_RUNS
    on an ephemeral disk, a cleanup script), the run failed (WorkspaceVanished), and without the
    check the restore was skipped as well — this host's snapshot mark said it was at HEAD."""
    from activities.storage.local import LocalStore
    from activities.storage.snapshots import Snapshots, mark_path, workspace_key

    sandbox = SandboxSettings(sandbox_user=None)
    key = workspace_key("run-a", None, None)
    marks = settings.home / "snapshots"
    ws = workspace_for(settings, sandbox, None, "run-a", used_by="run-a")
    snapshots = Snapshots(LocalStore(tmp_path / "store"), key, ws, marks)
    (ws / "report.md").write_text("the first agent's work")
    snapshots.take()  # the first agent ended
    shutil.rmtree(ws)
    again = workspace_for(
        settings, sandbox, None, "run-a", used_by="run-a", restorable=mark_path(marks, key)
    )
    assert again == ws and snapshots.restore() == 1  # the attempt's restore, as activity.py
    assert (ws / "report.md").read_text() == "the first agent's work"
    # a worker with no snapshot of it (no store, or it never took one): refused as before
    shutil.rmtree(ws)
    mark_path(marks, key).unlink()
    with pytest.raises(ApplicationError, match="is gone"):
        workspace_for(
            settings, sandbox, None, "run-a", used_by="run-a", restorable=mark_path(marks, key)
        )


def test_a_forks_workspace_deleted_under_it_is_not_copied_again_from_the_run_forked(settings):
    """review20: a fork's later attempt found its workspace gone and fork_copy (before prepare)
    copied the forked run's again, so workspace_for found a folder: the fork's own files were
    replaced by the source's, silently. Its first attempt still copies."""
    from activities.agents.attempt import fork_copy
    from xsky.runs import AgentInput

    sandbox = SandboxSettings(sandbox_user=None)
    src = workspace_for(settings, sandbox, None, "base", used_by="base")
    (src / "base.txt").write_text("the forked run's")
    inp = AgentInput.model_construct(
        run_id="base-fork-1",
        workspace=None,
        workspace_of="base-fork-1",
        workspace_from="base",
        agent=SimpleNamespace(config={}),
    )
    copy = fork_copy(settings, inp)
    assert copy is not None and copy()  # the fork's first attempt: a copy
    ws = workspace_for(settings, sandbox, None, "base-fork-1", used_by="base-fork-1")
    assert (ws / "base.txt").exists()
    (ws / "fork.txt").write_text("the fork's own")
    shutil.rmtree(ws)
    copy = fork_copy(settings, inp)
    assert copy is None or not copy()
    with pytest.raises(ApplicationError, match="is gone"):
        workspace_for(settings, sandbox, None, "base-fork-1", used_by="base-fork-1")


def test_a_new_run_of_an_id_used_before_makes_its_workspace(settings):
    """review20: an id is free again once the server dropped the ended run (REJECT_DUPLICATE
    refuses it only while the server keeps it): `run --id nightly` every night, its folder
    removed for a clean start, failed its first agent WorkspaceVanished — the old run's mark.
    The same run after a continue-as-new keeps its first execution, and its check."""
    sandbox = SandboxSettings(sandbox_user=None)
    ws = workspace_for(settings, sandbox, None, "nightly", used_by="nightly", execution="e-1")
    shutil.rmtree(ws.parent)
    again = workspace_for(settings, sandbox, None, "nightly", used_by="nightly", execution="e-2")
    assert again == ws and ws.is_dir()
    shutil.rmtree(ws.parent)
    with pytest.raises(ApplicationError, match="is gone"):
        workspace_for(settings, sandbox, None, "nightly", used_by="nightly", execution="e-2")
