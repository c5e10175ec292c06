"""A fork's workspace starts as a copy of the ended run's it forks — on the worker's disk
(activities/sandbox/workspace_seed.py) and, with workspace hosts, from that run's last
snapshot (activities/storage/snapshots.py). The real filesystem in tmp_path; canaries stay in
tmp_path, outside every workspace."""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from activities.sandbox.workspace_seed import SeedFailed, seed
from activities.storage.local import LocalStore
from activities.storage.snapshots import Snapshots
from tests.sandbox_user import NOBODY, ROOT
from xsky.leader.core import LeaderCore
from xsky.plan.xml import parse_workflow
from xsky.runs import AgentReport, ResumeFrom, RunInput

T0 = datetime(2026, 12, 7, tzinfo=UTC)


def run_folder(tmp_path: Path, run: str, owner: tuple[int, int] | None) -> Path:
    """``runs/<run>/workspace`` as a worker makes it: the folders above it the worker's own
    (0700: the sandbox's user cannot pass through them), the workspace the sandbox user's."""
    (tmp_path / "runs").mkdir(mode=0o700, exist_ok=True)
    (tmp_path / "runs" / run).mkdir(mode=0o700)
    folder = tmp_path / "runs" / run / "workspace"
    folder.mkdir()
    return folder


def give(path: Path, owner: tuple[int, int] | None) -> None:
    if owner is not None:
        for p in [path, *path.rglob("*")]:
            os.lchown(p, *owner)


def test_a_fork_gets_a_copy_and_the_run_forked_keeps_its_own(tmp_path: Path, owner) -> None:
    source = run_folder(tmp_path, "base", owner)
    (source / "sub").mkdir()
    (source / "sub" / "notes.txt").write_text("made by T-1")
    (source / "run.sh").write_text("echo hi")
    (source / "run.sh").chmod(0o755)
    give(source, owner)
    fork = tmp_path / "runs" / "fork" / "workspace"

    assert seed(fork, source, owner) is True
    assert (fork / "sub" / "notes.txt").read_text() == "made by T-1"
    assert os.stat(fork / "run.sh").st_mode & 0o777 == 0o755
    if owner is not None:
        assert (fork.stat().st_uid, (fork / "sub" / "notes.txt").stat().st_uid) == (65534, 65534)
    (fork / "sub" / "notes.txt").write_text("the fork's")
    (fork / "run.sh").unlink()
    assert (source / "sub" / "notes.txt").read_text() == "made by T-1"  # a copy, not the same
    assert (source / "run.sh").exists()
    assert [p.name for p in fork.parent.iterdir()] == ["workspace"]  # no staging folder left
    # made once: a later agent of the fork finds its own and nothing is copied again
    assert seed(fork, source, owner) is False
    assert (fork / "sub" / "notes.txt").read_text() == "the fork's"


def test_links_in_the_run_forked_are_copied_as_links_never_followed(tmp_path: Path, owner) -> None:
    canary = tmp_path / "outside" / "id_rsa"
    canary.parent.mkdir()
    canary.write_text("CANARY-KEY")
    source = run_folder(tmp_path, "base", owner)
    (source / "key").symlink_to(canary)
    (source / "up").symlink_to(tmp_path / "outside")
    give(source, owner)
    fork = tmp_path / "runs" / "fork" / "workspace"
    seed(fork, source, owner)
    assert (fork / "key").is_symlink() and os.readlink(fork / "key") == str(canary)
    assert (fork / "up").is_symlink()
    assert [p.name for p in canary.parent.iterdir()] == ["id_rsa"]


def test_a_workspace_given_as_a_link_is_not_copied_from(tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "token").write_text("CANARY")
    (tmp_path / "runs" / "base").mkdir(parents=True)
    (tmp_path / "runs" / "base" / "workspace").symlink_to(tmp_path / "secrets")
    fork = tmp_path / "runs" / "fork" / "workspace"
    assert seed(fork, tmp_path / "runs" / "base" / "workspace", None) is False
    assert not fork.exists()


def test_nothing_to_copy_leaves_the_fork_to_start_empty(tmp_path: Path) -> None:
    fork = tmp_path / "runs" / "fork" / "workspace"
    assert seed(fork, tmp_path / "runs" / "gone" / "workspace", None) is False
    assert not fork.exists()  # (the worker makes it empty, as for any run)


@pytest.mark.skipif(not ROOT, reason="a file the sandbox's user cannot read needs root to make")
def test_a_file_the_sandbox_user_cannot_read_fails_the_copy_saying_which(tmp_path: Path) -> None:
    source = run_folder(tmp_path, "base", NOBODY)
    (source / "fine.txt").write_text("ok")
    give(source, NOBODY)
    (source / "locked.txt").write_text("root's")
    os.chown(source / "locked.txt", 0, 0)
    (source / "locked.txt").chmod(0o600)
    fork = tmp_path / "runs" / "fork" / "workspace"
    with pytest.raises(SeedFailed) as e:
        seed(fork, source, NOBODY)
    said = str(e.value)
    assert "locked.txt" in said and str(source) in said and "/proc/self" not in said, said
    assert "then fork again" in said
    assert not fork.exists() and [p.name for p in fork.parent.iterdir()] == []


def test_two_attempts_copying_at_once_leave_one_whole_workspace(tmp_path: Path) -> None:
    source = run_folder(tmp_path, "base", None)
    for i in range(200):
        (source / f"f{i}.txt").write_text(str(i))
    fork = tmp_path / "runs" / "fork" / "workspace"
    copied: list[bool] = []
    go = threading.Barrier(4)

    def attempt() -> None:
        go.wait()
        copied.append(seed(fork, source, None))

    threads = [threading.Thread(target=attempt) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert copied.count(True) >= 1
    assert sorted(p.name for p in fork.iterdir()) == sorted(f"f{i}.txt" for i in range(200))
    assert [p.name for p in fork.parent.iterdir()] == ["workspace"]


# -- with workspace hosts: the fork's first restore is the forked run's last snapshot ----------


def test_a_forks_first_restore_is_the_forked_runs_snapshot_then_its_own(tmp_path: Path) -> None:
    store = LocalStore(tmp_path / "store")
    base_ws = tmp_path / "a" / "base"
    base_ws.mkdir(parents=True)
    (base_ws / "made.txt").write_text("by T-1")
    base = Snapshots(store, "base/_workspace", base_ws, tmp_path / "a" / "marks")
    base.take()

    fork_ws = tmp_path / "b" / "fork"
    fork = Snapshots(
        store, "fork/_workspace", fork_ws, tmp_path / "b" / "marks", seed="base/_workspace"
    )
    assert fork.restore() == 1
    assert (fork_ws / "made.txt").read_text() == "by T-1"
    assert fork.restore() is None  # restored already: nothing fetched again
    (fork_ws / "mine.txt").write_text("the fork's")
    # The fork's first snapshot stores every file under its own key, the copied ones too
    # (none of them is there yet): a third host restores the fork without the run forked.
    assert fork.take() == 2
    for key in store.keys("base/"):
        store.delete(key)
    third_ws = tmp_path / "c" / "fork"
    third = Snapshots(
        store, "fork/_workspace", third_ws, tmp_path / "c" / "marks", seed="base/_workspace"
    )
    assert third.restore() == 2
    assert sorted(p.name for p in third_ws.iterdir()) == ["made.txt", "mine.txt"]
    assert not (base_ws / "mine.txt").exists()


# -- the leader: where a follow-up works survives continue-as-new -----------------------------


def test_a_follow_ups_workspace_goes_on_after_continue_as_new_without_its_carried_reports() -> None:
    wf = parse_workflow(
        '<workflow name="w">'
        '<agent name="noop" id="1"><task>a</task></agent>'
        '<agent name="noop" id="2" depends="1"><task>b</task></agent>'
        "</workflow>"
    )
    carried = [AgentReport(id="1", task_id="T-1", name="noop", status="completed", result="one")]
    inp = RunInput(
        workflow=wf,
        resume=ResumeFrom(run_id="run-0", workspace_of="run-0", carried=carried, rerun=["2"]),
    )
    core = LeaderCore(inp, "run-0-retry-abc123", T0)
    nxt = core.continue_input()
    assert nxt.resume is not None and nxt.resume.workspace_of == "run-0"
    assert nxt.resume.carried == []  # (in the state already: never carried twice)
    again = LeaderCore(nxt, "run-0-retry-abc123", T0)
    assert again.tasks["1"].stored == "completed" and again.tasks["1"].result == "one"
    assert again.inputs.agent_input("2", again.agents["2"], 1, [], None).workspace_of == "run-0"


def test_a_copy_never_replaces_a_workspace_another_attempt_put_in_place(tmp_path: Path) -> None:
    """A plain rename replaces an empty folder: of two attempts copying an empty workspace at
    once, the second swapped its copy in under the first's running agent."""
    from activities.sandbox.workspace_seed import _rename_new

    workspace = tmp_path / "workspace"
    workspace.mkdir()  # the first attempt's copy: empty, in use
    before = workspace.stat().st_ino
    staging = tmp_path / ".workspace.copy-1"
    staging.mkdir()
    assert _rename_new(staging, workspace) is False
    assert workspace.stat().st_ino == before and staging.is_dir()
    fresh = tmp_path / "other"
    assert _rename_new(staging, fresh) is True and fresh.is_dir() and not staging.exists()


def test_a_follow_up_of_a_fork_that_never_made_its_copy_makes_it_from_the_same_run() -> None:
    from client.resume import follow_up_input
    from xsky.security.permissions import PermissionSettings

    wf = parse_workflow(
        '<workflow name="w"><agent name="noop" id="1"><task>a</task></agent></workflow>'
    )
    fork = RunInput(
        workflow=wf,
        resume=ResumeFrom(run_id="R", workspace_of="F", workspace_from="R", rerun=["1"]),
    )
    follow = follow_up_input("F", fork, wf, ["1"], [], PermissionSettings())
    assert follow.resume is not None
    assert (follow.resume.workspace_of, follow.resume.workspace_from) == ("F", "R")


def test_a_follow_up_starts_with_the_limits_last_in_force_not_the_first_ones() -> None:
    """A budget lowered with set_budget was lost in the run's follow-ups and forks: they took
    the options the run had started with."""
    from client.resume import budget_in_force
    from xsky.plan.budget import Limits, RunBudget
    from xsky.runs import RunOptions

    wf = parse_workflow(
        '<workflow name="w"><agent name="noop" id="1"><task>a</task></agent></workflow>'
    )
    started = RunInput(
        workflow=wf,
        options=RunOptions(
            budget=RunBudget(run=Limits(tokens=100_000), per_agent=Limits(tokens=5))
        ),
    )
    lowered = budget_in_force(started, Limits(tokens=10_000))
    assert lowered.options.budget is not None and lowered.options.budget.run.tokens == 10_000
    assert lowered.options.budget.per_agent == Limits(tokens=5)  # the rest as it started
    assert budget_in_force(started, None) is started  # not readable: as it started
    unbudgeted = RunInput(workflow=wf)
    set_later = budget_in_force(unbudgeted, Limits(usd=2.5))
    assert set_later.options.budget is not None and set_later.options.budget.run.usd == 2.5


def test_a_copy_its_killed_worker_left_unfinished_is_removed_by_the_next(tmp_path: Path) -> None:
    """A worker killed mid-copy leaves a whole workspace's worth of disk; the next copy of the
    same workspace removes it — and never a copy under way, told by the lock its copier (and
    its cp) hold, not by a pid: another machine sharing the disk, or a container beside it,
    saw a live copier's pid as dead and emptied the fork's workspace under it."""
    import fcntl

    from activities.sandbox import workspace_seed

    source = run_folder(tmp_path, "base", None)
    (source / "data.bin").write_bytes(b"d" * 4096)
    fork = tmp_path / "runs" / "fork" / "workspace"
    fork.parent.mkdir(parents=True)
    old = time.time() - 2 * workspace_seed.ABANDONED_AFTER
    abandoned = fork.parent / ".workspace.copy-4242-0badc0de"  # its copier gone: unlocked
    abandoned.mkdir()
    (abandoned / "data.bin").write_bytes(b"d" * 2048)  # half a copy
    os.utime(abandoned, (old, old))
    elsewhere = fork.parent / ".workspace.copy-4243-c0ffee00"  # a copier of a dead-looking pid
    elsewhere.mkdir()
    os.utime(elsewhere, (old, old))
    lock = os.open(elsewhere, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(lock, fcntl.LOCK_EX)  # ... which still copies (on another machine): locked
    just_made = fork.parent / ".workspace.copy-4244-facefeed"  # made a moment ago, not locked yet
    just_made.mkdir()
    try:
        assert seed(fork, source, None) is True
    finally:
        os.close(lock)
    assert (fork / "data.bin").read_bytes() == b"d" * 4096
    assert not abandoned.exists(), "the killed worker's half copy stays on the disk"
    assert elsewhere.exists(), "a copy under way (locked) was removed"
    assert just_made.exists(), "a copy just begun was removed before it could lock"
