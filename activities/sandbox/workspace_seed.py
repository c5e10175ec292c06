"""A fork's workspace starts as a copy of the ended run's it forks (``ResumeFrom.workspace_from``).

Forks of one ended run used to work in that run's own folder, side by side: one fork's files
showed up in the other, overwrote or deleted them, and the run forked lost what it had made.
Now each fork has its own folder, which the worker makes — the first time an agent of the fork
needs it — as a copy of the forked run's folder as that run left it.

The copy is made before the attempt is prepared, in a thread of its own (a large workspace
takes a while: the worker's event loop and heartbeats go on), with ``cp -a``
(``--reflink=auto``: a copy-on-write filesystem shares the blocks): links are copied as links,
never followed. It runs as the sandbox's user (a root worker reads nothing
an agent could not), with every sandboxed process working in the source folder frozen for its
length (a follow-up still working there cannot swap a folder for a link mid-copy), into a
hidden folder beside the new workspace that no sandbox sees, which is then renamed into place:
a workspace is there whole or not at all, and of two attempts copying at once the first to
finish wins. (With workspace hosts and an object store, the copy is a restore of the forked
run's last snapshot instead: activities/storage/snapshots.py.)
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import logging
import os
import secrets
import shutil
import stat
import subprocess
import time
from pathlib import Path

from activities.sandbox import freeze

log = logging.getLogger("xsky.workspace")

# A copy that takes longer than this is stopped (the attempt fails and says so): a workspace
# of many gigabytes on a filesystem without reflinks.
COPY_SECONDS = 600


class SeedFailed(RuntimeError):
    """The forked run's workspace could not be copied; the message says what and how to go on."""


def seed(workspace: Path, source: Path, owner: tuple[int, int] | None) -> bool:
    """Make ``workspace`` a copy of ``source`` if it is not there yet; whether it copied.

    Nothing is done when the workspace exists (an earlier agent of the fork made it) or the
    source does not (the run forked made no files, or its folder was removed: the fork starts
    with an empty workspace, as the log says)."""
    if os.path.lexists(workspace):
        return False
    if not source.is_dir() or source.is_symlink():
        log.info(
            "fork workspace %s: %s holds no workspace to copy; it starts empty", workspace, source
        )
        return False
    workspace.parent.mkdir(parents=True, exist_ok=True)
    _remove_abandoned(workspace)
    # A worker killed mid-copy leaves its staging folder (a whole workspace's worth of disk)
    # for the next copy of the same workspace to remove. Whether a copy still lives is told by
    # a lock on its folder, held by this process and by its cp (which inherits it), released
    # by the kernel when both are gone — not by a pid, which another machine sharing the disk
    # (or a container beside it) sees as dead while it copies.
    staging = workspace.parent / f".{workspace.name}.copy-{os.getpid()}-{secrets.token_hex(4)}"
    staging.mkdir(mode=0o700)
    held = os.open(staging, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    fcntl.flock(held, fcntl.LOCK_EX)
    as_user = owner if owner is not None and os.geteuid() == 0 else None
    try:
        if owner is not None:
            os.chown(staging, *owner)
        # Both folders are handed to cp open (the sandbox's user may not pass through the
        # folders above them), the source opened without following a link.
        try:
            src = os.open(source, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError as e:  # swapped for a link, or gone, since it was looked at
            raise SeedFailed(
                f"the fork's workspace could not be made as a copy of {source}: {e.strerror}"
            ) from None
        try:
            dst = os.open(staging, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            os.close(src)
            raise
        try:
            with freeze.frozen(source):
                done = subprocess.run(
                    [
                        "cp",
                        "-a",
                        "--reflink=auto",
                        "--",
                        f"/proc/self/fd/{src}/.",
                        f"/proc/self/fd/{dst}/",
                    ],
                    pass_fds=(src, dst, held),
                    capture_output=True,
                    text=True,
                    errors="replace",
                    timeout=COPY_SECONDS,
                    # a root worker copies as the sandbox's user (None: as the worker)
                    user=as_user[0] if as_user else None,
                    group=as_user[1] if as_user else None,
                    extra_groups=[] if as_user else None,
                )
        finally:
            os.close(src)
            os.close(dst)
        if done.returncode != 0:
            said = done.stderr.replace(f"/proc/self/fd/{src}", str(source))
            why = "; ".join(said.strip().splitlines()[:3]) or f"cp exited {done.returncode}"
            raise SeedFailed(
                f"the fork's workspace could not be made as a copy of {source}: {why}. "
                "Make those files readable to the sandbox's user (or remove them) in the run "
                "forked, then fork again"
            )
        if not _rename_new(staging, workspace):
            return False  # another attempt of the fork copied it first
        return True
    except subprocess.TimeoutExpired:
        raise SeedFailed(
            f"copying {source} for the fork took over {COPY_SECONDS} s and was stopped; "
            "a workspace that large forks faster on a filesystem with reflinks (btrfs, XFS)"
        ) from None
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
        os.close(held)


# A staging folder younger than this is left alone even unlocked: its copier may be between
# making it and locking it.
ABANDONED_AFTER = 60.0


def _remove_abandoned(workspace: Path) -> None:
    """Remove the staging folders of copies of ``workspace`` that nothing copies into any more
    (a worker killed mid-copy, and its cp ended): no lock held on them. One locked is another
    attempt's copy under way, here or on another machine sharing the disk: kept."""
    for old in workspace.parent.glob(f".{workspace.name}.copy-*-*"):
        try:
            st = old.lstat()
            if not stat.S_ISDIR(st.st_mode) or time.time() - st.st_mtime < ABANDONED_AFTER:
                continue
            fd = os.open(old, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            continue  # gone, a link, or not ours to open
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # a copy under way holds it
        try:
            log.info("removing %s: a copy its worker left unfinished", old)
            shutil.rmtree(old, ignore_errors=True)
        finally:
            os.close(fd)


_RENAME_NOREPLACE = 1  # linux/fs.h
_AT_FDCWD = -100


def _rename_new(staging: Path, workspace: Path) -> bool:
    """Rename ``staging`` to ``workspace`` unless something is there already (a plain rename
    replaces an empty folder: another attempt's copy, in use by its agent, would be swapped
    for this one under it). Whether it was renamed."""
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is not None:
        done = renameat2(
            _AT_FDCWD, os.fsencode(staging), _AT_FDCWD, os.fsencode(workspace), _RENAME_NOREPLACE
        )
        if done == 0:
            return True
        code = ctypes.get_errno()
        if code == errno.EEXIST:
            return False
        if code not in (errno.EINVAL, errno.ENOSYS):  # (a filesystem without it: below)
            raise OSError(code, os.strerror(code), str(workspace))
    if os.path.lexists(workspace):
        return False
    os.rename(staging, workspace)
    return True
