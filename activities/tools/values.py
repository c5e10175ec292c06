"""Values a plan's references give a shell command, set as variables before it runs.

The leader never writes data into code (xsky/plan/variables.py ``render_command``): it sends
the command with ``"${XSKY_V1}"`` where a reference stood, and the values beside it. Here they are written to files in a private folder the sandbox shows
read-only, and a one-line prelude reads them into variables: no size limit (unlike the
environment's 128 KiB per variable), no quoting, and the text is never parsed as code.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from activities.sandbox import bwrap
from activities.sandbox.pids import alive as process_alive
from activities.tools import ToolContext, ToolError
from xsky.plan.variables import SHELL_VALUE_RE

MAX_VALUES_BYTES = 256 * 1024 * 1024
# Folders are named for the worker that made them: a worker killed while a command ran leaves
# its folder behind (results' text, readable by the sandbox user), and the next command on this
# machine removes it (sweep_stale).
PREFIX = "xsky-values-"


def sweep_stale() -> None:
    """Remove the values folders of workers that are gone (killed before their cleanup)."""
    for folder in Path(tempfile.gettempdir()).glob(f"{PREFIX}*-*"):
        pid = folder.name.removeprefix(PREFIX).split("-", 1)[0]
        if pid.isdigit() and not process_alive(int(pid)):
            _remove(folder)


def checked(raw: Any, tool: str) -> dict[str, str]:
    """The ``values`` of a config, or a ToolError: only XSKY_V<n> names and text values."""
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and SHELL_VALUE_RE.match(k) and isinstance(v, str)
        for k, v in raw.items()
    ):
        raise ToolError(
            f"{tool}: 'values' must map names XSKY_V1, XSKY_V2, … to text (the leader makes them from "
            "{{…}} references; a plan need not write them)"
        )
    if sum(len(v.encode("utf-8", "surrogatepass")) for v in raw.values()) > MAX_VALUES_BYTES:
        raise ToolError(
            f"{tool}: the values of its references are over {MAX_VALUES_BYTES // 2**20} MiB together; "
            "pass large data in a file of the workspace instead"
        )
    return dict(raw)


@contextlib.contextmanager
def provided(ctx: ToolContext, values: dict[str, str]) -> Iterator[tuple[ToolContext, str]]:
    """(a context whose sandbox shows the values' folder, the prelude that reads them)."""
    if not values:
        yield ctx, ""
        return
    sweep_stale()
    folder = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))  # 0700, the worker's
    base = ctx.confinement or bwrap.Confinement(workspace=ctx.workspace)
    try:
        # Readable by the sandbox user alone (not root when the worker is), shown to it
        # read-only: it sits in the host's /tmp, and a result is no other local user's to read
        # (it was 0755/0644 there: anyone on the machine read every value while its command ran).
        who = None if ctx.unconfined else bwrap.identity(base.sandbox_user)
        owner = (who.uid, who.gid) if who is not None and who.drop else None
        for name, value in values.items():
            fd = os.open(folder / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
            with os.fdopen(fd, "wb") as fh:
                fh.write(value.encode("utf-8", "surrogatepass"))
                if owner is not None:
                    os.fchown(fh.fileno(), *owner)
        if owner is not None:
            os.chown(folder, *owner)
        folder.chmod(0o500)
        # read -d '': the whole file, newlines and backslashes kept (it ends at EOF with status 1)
        prelude = " ".join(
            f"IFS= read -r -d '' {name} < {shlex.quote(str(folder / name))};" for name in values
        )
        yield (
            replace(ctx, confinement=replace(base, readable=(*base.readable, folder))),
            prelude + "\n",
        )
    finally:
        _remove(folder)


def _remove(folder: Path) -> None:
    """Remove a values folder (mode 500: a worker that is not root may not empty it as it is).
    Opened without following a link: a name in the shared /tmp may be anyone's link."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return  # gone, or a link: nothing of ours
    try:
        with contextlib.suppress(OSError):
            os.fchmod(fd, 0o700)
    finally:
        os.close(fd)
    shutil.rmtree(folder, ignore_errors=True)
