"""`files RUN [PATH]`: a run's workspace files — the list, or one file printed as it is —
for a person, who may not read the workspace folder itself (it belongs to the sandbox user).
Confined to the workspace: client/workspace_files.py."""

from __future__ import annotations

import argparse
import asyncio
import base64
import sys

from cli.render import cell, err, out, print_json
from client import XSky
from client.workspace_files import is_folder, list_files, read_file, where_held
from xsky.config import load_settings
from xsky.errors import UsageError
from xsky.safe_text import printable


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "files",
        help="a run's workspace files: the list, or with PATH one file printed (or a folder listed)",
    )
    p.add_argument("id", help="workflow id of the run")
    p.add_argument("path", nargs="?", default="", help="a file or folder inside the workspace")
    p.add_argument(
        "--json", action="store_true", help="the list as JSON (with PATH: the file as JSON)"
    )
    p.set_defaults(handler=lambda a: asyncio.run(cmd_files(a)))


async def cmd_files(args: argparse.Namespace) -> int:
    settings = load_settings()
    async with XSky.connect(settings) as x:
        run = await x.get(args.id)
        root = await run.workspace()
        holder = await run.workspace_host()
    # With an object store one host holds the workspace: say which, when it is not this one.
    said = where_held(run.id, root, settings.host, holder)
    if said is not None and not root.exists():
        raise UsageError(said)
    if said is not None:
        err.print(cell(f"note: {said}"))
    if args.path and not is_folder(root, run.id, args.path):
        data = read_file(root, run.id, args.path)
        if args.json:  # (it printed the raw file, --json or not)
            try:
                content, encoding = data.decode("utf-8"), "utf-8"
            except UnicodeDecodeError:
                content, encoding = base64.b64encode(data).decode("ascii"), "base64"
            print_json(
                {
                    "workflowId": run.id,
                    "workspace": str(root),
                    "path": args.path,
                    "size": len(data),
                    "encoding": encoding,
                    "content": content,
                }
            )
            return 0
        raw = getattr(sys.stdout, "buffer", None)
        if raw is not None and not sys.stdout.isatty():
            raw.write(data)  # piped: as it is, so `> copy.pdf` is the file
            raw.flush()
        else:  # an agent wrote it: its escape sequences are shown, never played on a terminal
            sys.stdout.write(printable(data.decode("utf-8", errors="replace")))
            sys.stdout.flush()
        return 0
    names = list_files(root, run.id, args.path)
    if args.json:
        print_json({"workflowId": run.id, "workspace": str(root), "host": holder, "files": names})
        return 0
    out.print(cell(f"{run.id}'s workspace ({root}): {len(names)} file(s)"))
    for name in names:
        out.print(cell(f"  {name}"))
    if names:
        out.print(cell(f"print one: starter.py files {run.id} {names[0]}"))
    return 0
