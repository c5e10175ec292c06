"""code_search and python_exec, confined to the run's workspace."""

from __future__ import annotations

import fnmatch
import os
import re
from pathlib import Path
from typing import Any

from activities.sandbox.confine import confine, list_inside, open_inside
from activities.tools import ToolContext, ToolError, cap_text, optional_number, require_str
from activities.tools.shell import DEFAULT_MAX_OUTPUT, run_process

MAX_MATCHES = 200
MAX_FILE_BYTES = 2 * 1024 * 1024


async def code_search(ctx: ToolContext, args: dict[str, Any]) -> str:
    pattern = require_str(args, "pattern", "code_search", '{"pattern": "def main"}')
    try:
        regex = re.compile(pattern)
    except re.error as e:
        raise ToolError(
            f"code_search: {pattern!r} is not a valid regular expression ({e})"
        ) from None
    root = confine(ctx.workspace, args.get("path") or ".")
    glob = args.get("glob") or "*"
    base = ctx.workspace.resolve()
    matches: list[str] = []
    # Walked by descriptors: a folder swapped for a link mid-walk is not followed out.
    for folder, dirnames, filenames in list_inside(ctx.workspace, root, recursive=True):
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in (".git", ".xsky", "node_modules", "__pycache__", ".venv")
        )
        for name in sorted(filenames):
            if not fnmatch.fnmatch(name, glob):
                continue
            full = os.path.join(base, folder, name)
            if os.path.islink(full):
                continue  # a link may point out of the workspace: file_read decides those
            if ctx.readable is not None and not ctx.readable(os.path.relpath(full, base)):
                continue  # a file_read deny rule covers it: searching must not read it either
            try:
                with os.fdopen(open_inside(ctx.workspace, Path(full), os.O_RDONLY), "rb") as fh:
                    if os.fstat(fh.fileno()).st_size > MAX_FILE_BYTES:
                        continue
                    data = fh.read()
            except (OSError, ToolError):
                continue  # gone, swapped for a link, or not a regular file
            if b"\0" in data[:4096]:
                continue  # binary
            for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
                if regex.search(line):
                    matches.append(f"{os.path.relpath(full, base)}:{number}: {line.strip()[:200]}")
                    if len(matches) >= MAX_MATCHES:
                        return (
                            "\n".join(matches)
                            + f"\n[… stopped at {MAX_MATCHES} matches; narrow the pattern or path]"
                        )
    return "\n".join(matches) if matches else f"no match for {pattern!r}"


async def python_exec(ctx: ToolContext, args: dict[str, Any]) -> str:
    code = require_str(args, "code", "python_exec", '{"code": "print(1 + 1)"}')
    timeout = optional_number(args, "timeout", 60, 0.1, 3600, "python_exec")
    proc = await run_process(ctx, ["python3", "-c", code], timeout, DEFAULT_MAX_OUTPUT)
    if proc.timed_out:
        raise ToolError(f"python_exec ran past its {timeout:g}s timeout and was killed")
    out = proc.stdout
    if proc.stderr.strip():
        out += ("\n" if out else "") + f"[stderr]\n{proc.stderr}"
    text, _ = cap_text(out, 50_000)
    return f"exit code {proc.returncode}\n{text}"
