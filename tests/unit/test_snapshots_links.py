"""Workspace snapshots against an agent that plants traps: links where a restore writes, files
swapped for links to the worker's secrets while a snapshot reads, FIFOs. The real filesystem in
tmp_path, the local store; every canary lives in tmp_path, outside the workspace, and must be
neither written nor read. Each attack is harmless when it succeeds (it reaches only a canary).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from activities.storage.local import LocalStore
from activities.storage.snapshots import Snapshots
from tests.sandbox_user import NOBODY, ROOT

KEY = "_workspaces/site-build"
SECRET = b"CANARY-PRIVATE-KEY-0123456789"


def host(tmp_path: Path, name: str, owner: tuple[int, int] | None) -> Snapshots:
    """One machine's copy of the workspace (its own folder and marks), one store for all."""
    folder = tmp_path / name / "workspace"
    folder.mkdir(parents=True)
    if owner is not None:
        os.chown(folder, *owner)
    return Snapshots(LocalStore(tmp_path / "store"), KEY, folder, tmp_path / name / "marks", owner)


def as_owner(path: Path, owner: tuple[int, int] | None) -> None:
    """What an agent made belongs to the sandbox user."""
    if owner is not None:
        for p in [path, *path.rglob("*")] if path.is_dir() else [path]:
            os.lchown(p, *owner)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """The canary folder standing in for ``/outside`` (and ~/.ssh): one file, known bytes."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "authorized_keys").write_bytes(SECRET)
    return folder


def untouched(outside: Path) -> None:
    assert sorted(p.name for p in outside.iterdir()) == ["authorized_keys"], list(outside.iterdir())
    assert (outside / "authorized_keys").read_bytes() == SECRET


def stored_bytes(tmp_path: Path) -> list[bytes]:
    return [p.read_bytes() for p in (tmp_path / "store").rglob("*") if p.is_file()]


# -- restore: links planted where it writes --------------------------------------------------------


def test_a_link_where_the_manifest_has_a_folder_is_removed_not_written_through(
    tmp_path: Path, outside: Path, owner: tuple[int, int] | None
):
    """Finding 1 exactly: B's agent made ``d -> /outside``; A's agent made ``d/`` a folder with a
    file; back on B, the restore must not write that file through B's stale link."""
    a, b = host(tmp_path, "a", owner), host(tmp_path, "b", owner)
    (b.folder / "notes.txt").write_text("b was here")
    os.symlink(outside, b.folder / "d")
    as_owner(b.folder, owner)
    b.take()  # the link is not kept: the manifest has notes.txt only
    a.restore()
    (a.folder / "d").mkdir()
    (a.folder / "d" / "authorized_keys").write_text("ssh-ed25519 AAAA attacker")
    as_owner(a.folder, owner)
    a.take()
    assert b.restore() == 1
    untouched(outside)
    d = b.folder / "d"
    assert not d.is_symlink() and d.is_dir()
    assert (d / "authorized_keys").read_text() == "ssh-ed25519 AAAA attacker"


def test_a_nested_link_makes_no_folder_outside(
    tmp_path: Path, outside: Path, owner: tuple[int, int] | None
):
    """``x/y -> /outside`` locally, the manifest holds ``x/y/z/deep/f``: no folder is made
    through the link (``mkdir(parents=True)`` made them)."""
    a, b = host(tmp_path, "a", owner), host(tmp_path, "b", owner)
    (a.folder / "x/y/z/deep").mkdir(parents=True)
    (a.folder / "x/y/z/deep/f").write_text("payload")
    as_owner(a.folder, owner)
    a.take()
    (b.folder / "x").mkdir()
    os.symlink(outside, b.folder / "x" / "y")
    as_owner(b.folder, owner)
    assert b.restore() == 1
    untouched(outside)
    assert not (b.folder / "x/y").is_symlink()
    assert (b.folder / "x/y/z/deep/f").read_text() == "payload"


def test_no_link_survives_a_restore_and_one_named_like_a_manifest_file_is_replaced(
    tmp_path: Path, outside: Path, owner: tuple[int, int] | None
):
    """A link the manifest does not hold is a trap left for the next restore: it goes. One named
    like a manifest file is replaced by the file, never written through."""
    a, b = host(tmp_path, "a", owner), host(tmp_path, "b", owner)
    (a.folder / "authorized_keys").write_text("from the manifest")
    as_owner(a.folder, owner)
    a.take()
    os.symlink(outside / "authorized_keys", b.folder / "authorized_keys")
    os.symlink(outside, b.folder / "later")
    as_owner(b.folder, owner)
    b.restore()
    untouched(outside)
    restored = b.folder / "authorized_keys"
    assert not restored.is_symlink() and restored.read_text() == "from the manifest"
    assert not os.path.lexists(b.folder / "later")


def test_a_sparse_file_is_restored_sparse_not_written_out_in_full(
    tmp_path: Path, owner: tuple[int, int] | None
):
    """40 sparse files of 16 MiB took 4 KiB where they were made (the quota counts blocks) and
    640 MiB where they were restored: one agent could fill another host's disk."""
    a, b = host(tmp_path, "a", owner), host(tmp_path, "b", owner)
    for n in range(4):
        with open(a.folder / f"sparse{n}.bin", "wb") as fh:
            fh.truncate(16 * 1024 * 1024)
            fh.seek(5 * 1024 * 1024)
            fh.write(b"data in the middle")
    as_owner(a.folder, owner)
    a.take()
    b.restore()
    for n in range(4):
        restored = b.folder / f"sparse{n}.bin"
        assert restored.stat().st_size == 16 * 1024 * 1024
        assert restored.stat().st_blocks * 512 < 2 * 1024 * 1024  # holes, not 16 MiB of zeros
        with open(restored, "rb") as fh:
            fh.seek(5 * 1024 * 1024)
            assert fh.read(18) == b"data in the middle"
    assert (b.folder / "sparse0.bin").read_bytes() == (a.folder / "sparse0.bin").read_bytes()


def test_whatever_the_manifest_does_not_hold_goes_and_each_kind_is_replaced_by_the_right_one(
    tmp_path: Path, outside: Path, owner: tuple[int, int] | None
):
    """A file where a folder is needed, a folder where a file is needed, a FIFO, links to a
    file and to a folder outside, a stale file: the workspace becomes the manifest's exactly."""
    a, b = host(tmp_path, "a", owner), host(tmp_path, "b", owner)
    (a.folder / "was-file").mkdir()
    (a.folder / "was-file/inner.txt").write_text("inner")
    (a.folder / "was-folder").write_text("now a file")
    (a.folder / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (a.folder / "run.sh").chmod(0o755)
    as_owner(a.folder, owner)
    a.take()
    (b.folder / "was-file").write_text("a file")
    (b.folder / "was-folder/sub").mkdir(parents=True)
    (b.folder / "was-folder/sub/x").write_text("x")
    os.mkfifo(b.folder / "pipe")
    os.symlink(outside / "authorized_keys", b.folder / "key-link")
    os.symlink(outside, b.folder / "dir-link")
    (b.folder / "stale.txt").write_text("stale")
    as_owner(b.folder, owner)
    b.restore()
    untouched(outside)
    found = {
        p.relative_to(b.folder).as_posix(): stat.S_IFMT(p.lstat().st_mode)
        for p in b.folder.rglob("*")
    }
    assert found == {
        "was-file": stat.S_IFDIR,
        "was-file/inner.txt": stat.S_IFREG,
        "was-folder": stat.S_IFREG,
        "run.sh": stat.S_IFREG,
    }
    assert stat.S_IMODE((b.folder / "run.sh").stat().st_mode) == 0o755
    if owner is not None:
        assert {p.lstat().st_uid for p in b.folder.rglob("*")} == {owner[0]}


def test_folders_an_agent_made_unreadable_do_not_stop_a_restore(
    tmp_path: Path, owner: tuple[int, int] | None
):
    """``chmod 000`` on a folder the manifest needs and on one it does not hold: the restore,
    as the folders' owner, takes its rights back and goes on."""
    a, b = host(tmp_path, "a", owner), host(tmp_path, "b", owner)
    (a.folder / "kept").mkdir()
    (a.folder / "kept" / "f").write_text("restored")
    as_owner(a.folder, owner)
    a.take()
    for name in ("kept", "gone"):
        (b.folder / name).mkdir()
        (b.folder / name / "old").write_text("old")
    as_owner(b.folder, owner)
    for name in ("kept", "gone"):
        (b.folder / name).chmod(0)
    b.restore()
    assert sorted(p.name for p in b.folder.iterdir()) == ["kept"]
    assert [p.name for p in (b.folder / "kept").iterdir()] == ["f"]


def test_a_manifest_path_that_climbs_out_or_is_malformed_is_refused(
    tmp_path: Path, outside: Path, owner: tuple[int, int] | None
):
    """A tampered store: a manifest naming ``../``, absolute, empty and NUL paths. Nothing is
    written outside; the sound paths are restored."""
    a, b = host(tmp_path, "a", owner), host(tmp_path, "b", owner)
    (a.folder / "good.txt").write_text("good")
    as_owner(a.folder, owner)
    a.take()
    store = a.store
    head = store.get(f"{KEY}/HEAD").decode()
    manifest = json.loads(store.get(head))
    digest = manifest["files"]["good.txt"]["sha256"]
    escape = os.path.relpath(outside / "planted", b.folder)
    for bad in (
        escape,
        str(outside / "absolute"),
        "a//b",
        "./dot",
        "x/../../planted",
        "nul\x00name",
        "",
    ):
        manifest["files"][bad] = {"sha256": digest, "mode": 0o644}
    store.put(head, json.dumps(manifest).encode())
    b.restore()
    untouched(outside)
    assert not (tmp_path / "b" / "planted").exists() and not (tmp_path / "planted").exists()
    assert sorted(p.name for p in b.folder.iterdir()) == ["good.txt"]


# -- take: files swapped for links while it reads ------------------------------------------------

SWAPPER = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
pairs = [(a.encode(), b.encode()) for a, b in zip(sys.argv[1::2], sys.argv[2::2])]
print("swapping", flush=True)
while True:
    for a, b in pairs:
        if libc.renameat2(-100, a, -100, b, 2) != 0:  # AT_FDCWD, RENAME_EXCHANGE
            raise OSError(ctypes.get_errno(), "renameat2")
"""


@contextlib.contextmanager
def swapped(*pairs: tuple[Path, Path]) -> Iterator[None]:
    """Each pair trades places (``renameat2(RENAME_EXCHANGE)``, atomic) in a loop, from a
    process of its own — as from a pooled MCP server that outlives its agent — until the block
    ends."""
    args = [str(p) for pair in pairs for p in pair]
    proc = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, *args], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "swapping\n"
        yield
        assert proc.poll() is None, "the swapper stopped"
    finally:
        proc.kill()
        proc.wait()


def rewrite(path: str, data: bytes, dir_fd: int | None = None) -> None:
    """``data`` into ``path`` when it is a regular file (a link there is left alone)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW, dir_fd=dir_fd)
    except OSError:
        return
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def taken_for(seconds: float, snaps: Snapshots, between: Callable[[], None]) -> int:
    """Takes, one after another, for ``seconds`` (each bounded: a blocked one fails)."""
    deadline, count = time.monotonic() + seconds, 0
    errors: list[BaseException] = []

    def take() -> None:
        try:
            snaps.take()
        except BaseException as e:  # noqa: BLE001 - handed to the test's thread
            errors.append(e)

    while time.monotonic() < deadline:
        taker = threading.Thread(target=take, daemon=True)
        taker.start()
        taker.join(10)
        assert not taker.is_alive(), "a take blocked (a FIFO opened as a file?)"
        assert not errors, f"a take failed: {errors[0]!r}"
        between()
        count += 1
    return count


@pytest.mark.timeout(120)
def test_a_file_swapped_for_a_link_to_a_secret_during_a_take_never_reaches_the_store(
    tmp_path: Path, outside: Path
):
    """Finding 2: the worker's private key went into the store. While a file and a link to the
    canary, and a folder and a link to the canary folder, trade places, takes go on for two
    seconds: none fails, and no byte of the canary is in the store."""
    snaps = host(tmp_path, "h", None)
    ws = snaps.folder
    (ws / "a").write_bytes(b"public " * 100)
    os.symlink(outside / "authorized_keys", ws / "b")
    (ws / "d").mkdir()
    (ws / "d" / "authorized_keys").write_bytes(b"public too")
    os.symlink(outside, ws / "e")
    for n in range(20):  # company, so that the walk takes a while
        (ws / f"f{n:02d}.txt").write_text(f"file {n}")

    def change() -> None:
        # New bytes in whichever of each pair is the real one now (never through a link): a
        # file the worker knows unchanged is not read again, the attacker makes it changed.
        stamp = f"public {time.monotonic_ns()}".encode()
        for folder in (ws / "d", ws / "e"):
            with contextlib.suppress(OSError):
                fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
                try:
                    rewrite("authorized_keys", stamp, fd)
                finally:
                    os.close(fd)
        for name in ("a", "b"):
            rewrite(str(ws / name), stamp)

    with swapped((ws / "a", ws / "b"), (ws / "d", ws / "e")):
        takes = taken_for(2.0, snaps, change)
    blobs = stored_bytes(tmp_path)
    assert blobs and not [b for b in blobs if SECRET in b]
    manifests = [json.loads(b) for b in blobs if b.startswith(b'{"version"')]
    assert len(manifests) == takes
    assert all("f19.txt" in m["files"] for m in manifests)  # the snapshot went on


@pytest.mark.timeout(60)
def test_a_fifo_in_the_workspace_or_swapped_in_does_not_hang_a_take(tmp_path: Path):
    snaps = host(tmp_path, "h", None)
    ws = snaps.folder
    os.mkfifo(ws / "fifo")
    (ws / "data.txt").write_text("data")
    os.mkfifo(ws / "other")
    with swapped((ws / "data.txt", ws / "other")):
        taken_for(2.0, snaps, lambda: None)
    head = snaps.store.get(f"{KEY}/HEAD").decode()
    files = json.loads(snaps.store.get(head))["files"]
    assert "fifo" not in files and set(files) <= {"data.txt", "other"}


# -- as the sandbox user --------------------------------------------------------------------------


@pytest.mark.skipif(not ROOT, reason="the worker drops to the sandbox user only when it is root")
def test_a_root_workers_snapshot_reads_and_writes_as_the_sandbox_user(tmp_path: Path):
    """The helper runs as the sandbox user (65534 here): a file only root may read (one the
    worker made, or a hard link the sandbox cannot have) is not read into the store, and the
    restored files are that user's from the start."""
    a, b = host(tmp_path, "a", NOBODY), host(tmp_path, "b", NOBODY)
    (a.folder / "shared.txt").write_text("everyone")
    as_owner(a.folder, NOBODY)
    only_root = a.folder / "root-only"
    only_root.write_bytes(SECRET)
    only_root.chmod(0o600)  # root's, mode 600: the sandbox user may not read it
    a.take()
    assert not [x for x in stored_bytes(tmp_path) if SECRET in x]
    head = a.store.get(f"{KEY}/HEAD").decode()
    assert set(json.loads(a.store.get(head))["files"]) == {"shared.txt"}
    b.restore()
    restored = b.folder / "shared.txt"
    assert restored.read_text() == "everyone" and restored.stat().st_uid == NOBODY[0]
