"""File tools confined to the run's workspace: read, write, list.

Any error fails the call: a bad argument, a path outside the workspace, and every error of
the file system (permission denied, no space …), said with the tool and the path; only
errors that may pass by themselves (busy, interrupted, I/O) are retried
(:func:`xsky.outcomes.os_error_verdict`).
"""

from __future__ import annotations

import asyncio
import fnmatch
import functools
import os
from typing import Any

from activities import beat as beats
from activities.sandbox import disk, git_guard
from activities.sandbox.confine import confine, list_inside, open_inside
from activities.sandbox.limits import Limits
from activities.tools import (
    Tool,
    ToolContext,
    ToolError,
    ToolResult,
    optional_number,
    require_str,
)
from xsky.outcomes import os_error_verdict

DEFAULT_MAX_READ = 10 * 1024 * 1024
ROOM_WAIT = 300.0  # outside an activity (direct use, tests): how long a full disk is waited for
ROOM_MARGIN = 60.0  # of the attempt's start-to-close timeout, left for the write itself
ROOM_SLACK = 1024 * 1024  # unconfined: room a write needs beyond its own bytes
MAX_LIST = 2000


def _os_errors(fn: Tool) -> Tool:
    """The file system's errors as the tool's own, classified (not a worker's traceback)."""

    @functools.wraps(fn)
    async def call(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        try:
            return await fn(ctx, args)
        except OSError as e:
            verdict = os_error_verdict(f"{fn.__name__} {args.get('path', '.')}", e)
            raise ToolError(verdict.message, retryable=verdict.retryable) from None

    return call


@_os_errors
async def file_read(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    path = require_str(args, "path", "file_read", '{"tool": "file_read", "path": "notes.txt"}')
    limit = int(
        optional_number(args, "maxBytes", DEFAULT_MAX_READ, 1, 256 * 1024 * 1024, "file_read")
    )
    target = confine(ctx.workspace, path)
    if not target.exists():
        raise ToolError(
            f"{path!r} does not exist in the workspace; list it with file_list to see what is there"
        )
    if target.is_dir():
        raise ToolError(f"{path!r} is a directory; use file_list to see its files")
    with os.fdopen(open_inside(ctx.workspace, target, os.O_RDONLY), "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        data = fh.read(limit)
    text = data.decode("utf-8", errors="replace")
    if size > limit:
        text += f"\n[… file cut: {size - limit:,} more bytes not shown]"
    return ToolResult(text, {"path": path, "bytes": size})


@_os_errors
async def file_write(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    path = require_str(
        args, "path", "file_write", '{"tool": "file_write", "path": "out.txt", "content": "…"}'
    )
    content = args.get("content")
    if not isinstance(content, str):
        raise ToolError('file_write needs a "content" string (the text to write)')
    append = bool(args.get("append", False))
    target = confine(ctx.workspace, path, write=True)
    if target.is_dir():
        raise ToolError(f"{path!r} is a directory; name a file")
    data = content.encode("utf-8")
    # A disk below the reserve waits for room, as a command does before it starts (the sandbox
    # off too: the file is at stake): written at once, the write failed "no space left" for
    # good (not retried) — and the file it replaced was emptied first.
    reserve = (ctx.confinement.limits if ctx.confinement else Limits()).disk_reserve
    if ctx.unconfined:
        # No sandbox keeps the reserve for commands here (shell.py starts them on any disk):
        # the write waits only for its own room (review17: with the sandbox off, a 5-byte
        # write on a disk with 64 MiB free waited out the attempt and was refused while
        # `echo hello > b.txt` wrote at once)
        reserve = min(reserve, len(data) + ROOM_SLACK)
    full = await disk.room(
        ctx.workspace,
        reserve,
        beats.deadline(ROOM_MARGIN, ROOM_WAIT),
        ctx.progress,
        ctx.heartbeat,
        what=f"writing {path}",
    )
    if full is not None:
        raise ToolError(f"file_write {path}: refused: {full}", details={"limit": "disk_reserve"})
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else 0)
    with os.fdopen(
        open_inside(ctx.workspace, target, flags, make_parents=True, owner=ctx.owner),
        "ab" if append else "wb",
    ) as fh:
        if not append:
            # after the checks: a file with other links is refused before it is emptied
            fh.truncate(0)
        fh.write(data)
    verb = "appended" if append else "wrote"
    details: dict[str, Any] = {"path": path, "bytes": len(data)}
    text = f"{verb} {len(data):,} bytes to {path}"
    if not ctx.unconfined:
        # A write makes or changes a git folder as a command can (HEAD, objects/, refs/ and a
        # config anywhere: a repository git finds): it is swept as a command's are, or a
        # config that runs a program (core.fsmonitor, a pager) waits for a person's git.
        notes = await asyncio.to_thread(git_guard.sweep, ctx.workspace)
        if notes:
            details["gitGuard"] = notes
            text += "\n" + "\n".join(f"git guard: {n}" for n in notes)
    return ToolResult(text, details)


@_os_errors
async def file_list(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    path = args.get("path", ".")
    if not isinstance(path, str):
        raise ToolError("file_list: path must be a string")
    pattern = args.get("pattern", "*")
    recursive = bool(args.get("recursive", False))
    target = confine(ctx.workspace, path)
    if not target.exists():
        raise ToolError(f"{path!r} does not exist in the workspace")
    if not target.is_dir():
        raise ToolError(f"{path!r} is a file, not a directory")
    entries: list[str] = []
    for folder, dirnames, filenames in list_inside(ctx.workspace, target, recursive):
        dirnames[:] = sorted(d for d in dirnames if d not in (".git", ".xsky"))
        named = [(d, "/") for d in dirnames] + [(f, "") for f in sorted(filenames)]
        for name, mark in named:
            if not fnmatch.fnmatch(name, pattern):
                continue
            entries.append(os.path.join(folder, name) + mark)
            if len(entries) >= MAX_LIST:
                break
        if len(entries) >= MAX_LIST:
            break
    text = "\n".join(entries) if entries else "(empty)"
    if len(entries) >= MAX_LIST:
        text += f"\n[… listing cut at {MAX_LIST} entries]"
    return ToolResult(text, {"path": path, "entries": len(entries)})
