"""The compiled watchdog: built once per version of its source, with the machine's C compiler.

Every command runs under a watchdog (:mod:`activities.sandbox.liveness`). Its Python form
costs an interpreter's start, ~20 ms, on every command; ``watchdog.c`` is the same program
and starts in well under a millisecond. The worker builds it on first use (``cc -O2``, about
a tenth of a second) into a folder only it may write — ``$XSKY_CACHE_DIR``, else
``$XDG_CACHE_HOME/xsky``, else ``~/.cache/xsky`` — named by the hash of the source, so an
upgraded worker builds the new one and never runs a stale binary. A machine with no C
compiler (a slim image), or ``XSKY_WATCHDOG=python``, runs the Python form: the same
behaviour at the old cost, said once in the worker's log.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("watchdog.c")
PYTHON_FORM = Path(__file__).with_name("watchdog.py")
COMPILERS = ("cc", "gcc", "clang")


def _cache_dir() -> Path:
    explicit = os.environ.get("XSKY_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / "xsky"
    try:
        return Path.home() / ".cache" / "xsky"
    except RuntimeError:  # no home (no HOME, no passwd entry): a folder of this user's own
        return Path(tempfile.gettempdir()) / f"xsky-cache-{os.geteuid()}"


def _safe_folder(folder: Path) -> bool:
    """The folder exists, is ours and nobody else may write to it: a binary every command
    runs through must not be one another user could have replaced."""
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        st = folder.lstat()
    except OSError:
        return False
    return (
        stat.S_ISDIR(st.st_mode)
        and st.st_uid == os.geteuid()
        and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    )


def _build(source: bytes, target: Path) -> str | None:
    """Compile ``source`` to ``target`` (atomically); the reason it could not, or None."""
    compiler = next((c for c in map(shutil.which, COMPILERS) if c), None)
    if compiler is None:
        return "no C compiler (cc, gcc or clang) on this machine"
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as work:
        out = Path(work) / "watchdog"
        try:
            done = subprocess.run(
                [compiler, "-O2", "-o", str(out), str(SOURCE)],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"{compiler} could not run: {e}"
        if done.returncode != 0 or not out.exists():
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            return f"{compiler} failed: {tail[0]}"
        out.chmod(0o755)
        os.replace(out, target)
    return None


@functools.cache
def compiled_watchdog() -> Path | None:
    """The compiled watchdog's path (built now if needed), or None where the Python form runs."""
    if os.environ.get("XSKY_WATCHDOG", "").lower() == "python":
        return None
    source = SOURCE.read_bytes()
    folder = _cache_dir()
    if not _safe_folder(folder):
        log.warning(
            "commands run under the Python watchdog (+~20 ms each): the cache folder %s is not "
            "one only this user may write (set XSKY_CACHE_DIR)",
            folder,
        )
        return None
    target = folder / f"watchdog-{hashlib.sha256(source).hexdigest()[:16]}"
    if target.is_file() and os.access(target, os.X_OK):
        return target
    problem = _build(source, target)
    if problem is not None:
        log.warning("commands run under the Python watchdog (+~20 ms each): %s", problem)
        return None
    return target


def watchdog_command() -> list[str]:
    """How to start a command's watchdog: the compiled one, else the worker's own Python
    (isolated: no site, no environment)."""
    binary = compiled_watchdog()
    if binary is not None:
        return [str(binary)]
    return [sys.executable, "-I", "-S", str(PYTHON_FORM)]
