"""``ui [--port N] [--host H] [RUN_ID]``: the live run page — the plan as a graph coloured as
agents change, the run's events streamed, an agent's transcript as it grows, and the
interventions (cli/ui/server.py)."""

from __future__ import annotations

import argparse
import socket
import webbrowser
from urllib.parse import quote

from cli.render import cell, out
from xsky.config import load_settings
from xsky.errors import UsageError

DEFAULT_PORT = 8765


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ui",
        help="a live page of runs: the plan as a graph, events as they happen, transcripts, steering",
    )
    p.add_argument("id", nargs="?", help="a run to open (else the page lists the runs)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"(default {DEFAULT_PORT})")
    p.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1: this machine only — the page can steer runs)",
    )
    p.add_argument("--open", action="store_true", help="open it in the default browser")
    p.set_defaults(handler=cmd_ui)


def cmd_ui(args: argparse.Namespace) -> int:
    if not 0 < args.port < 65536:
        raise UsageError(f"--port {args.port}: give a port from 1 to 65535")
    import uvicorn  # the page's server: only this command needs it

    from cli.ui.server import make_app
    from client import XSky

    settings = load_settings()
    app = make_app(lambda: XSky.connect(settings), settings.home / "ui-events")
    url = f"http://{args.host}:{args.port}/" + (
        f"?run={quote(args.id, safe='')}" if args.id else ""
    )
    config = uvicorn.Config(
        app, host=args.host, port=args.port, log_level="warning", timeout_graceful_shutdown=1
    )
    server = uvicorn.Server(config)
    try:  # bound here: uvicorn's own binding logs and exits on a port in use
        sock = socket.create_server((args.host, args.port))
    except OSError as e:
        raise UsageError(
            f"cannot listen on {args.host}:{args.port} ({e.strerror or e}): "
            "pick another with --port, or stop what uses it"
        ) from None
    out.print(cell(f"the live page: {url} (Ctrl-C stops it; runs go on)"))
    if args.open:
        webbrowser.open(url)
    server.run(sockets=[sock])
    return 0
