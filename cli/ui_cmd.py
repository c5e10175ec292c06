"""``ui [--port N] [--host H] [RUN_ID]``: the live run page — the plan as a graph coloured as
agents change, the run's events streamed, an agent's transcript as it grows, and the
interventions (cli/ui/server.py)."""

from __future__ import annotations

import argparse
import errno
import socket
import webbrowser
from urllib.parse import quote, urlencode

from cli.render import cell, err, out
from cli.ui.guard import ANY_ADDRESS
from xsky.config import Settings, load_settings
from xsky.errors import UsageError

DEFAULT_PORT = 8765
# Why a --host cannot be listened on that is the host's fault: not an address of this machine,
# or a name that does not resolve.
_NOT_THIS_MACHINE = {
    errno.EADDRNOTAVAIL,
    socket.EAI_NONAME,
    socket.EAI_AGAIN,
    getattr(socket, "EAI_NODATA", socket.EAI_NONAME),
}


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
    p.add_argument(
        "--new-key",
        action="store_true",
        help="make the page a new key first (a link was shared or shown): the old link, and "
        "browsers that hold it, are refused by pages started from now on",
    )
    p.set_defaults(handler=cmd_ui)


def cmd_ui(args: argparse.Namespace) -> int:
    if not 0 < args.port < 65536:
        raise UsageError(f"--port {args.port}: give a port from 1 to 65535")
    import uvicorn  # the page's server: only this command needs it

    from cli.ui.guard import KEY_PARAM, page_key
    from cli.ui.server import make_app
    from client import XSky

    settings = load_settings()
    if args.id:
        _check_run(settings, args.id)
    else:
        _check_server(settings)
    key = page_key(settings.home, new=args.new_key)
    if args.new_key:
        out.print(
            cell(
                f"a new key for the live page is in {settings.home / 'ui-key'}: the old link no "
                "longer opens a page started from now on (stop a page still running with the "
                "old one: it keeps the key it started with)"
            )
        )
    app = make_app(
        lambda: XSky.connect(settings),
        settings.home / "ui-events",
        key=key,
        port=args.port,
        listen=args.host,
    )
    # The link carries the page's key (cli/ui/guard.py): the page steers runs, so a page of
    # another site must not be able to use it.
    query = {KEY_PARAM: key} | ({"run": args.id} if args.id else {})
    url = f"http://{_named(args.host)}:{args.port}/?{urlencode(query, quote_via=quote)}"
    config = uvicorn.Config(
        app, host=args.host, port=args.port, log_level="warning", timeout_graceful_shutdown=1
    )
    server = uvicorn.Server(config)
    try:  # bound here: uvicorn's own binding logs and exits on a port in use
        sock = socket.create_server((args.host, args.port))
    except OSError as e:
        # (create_server re-raises a name's lookup failure as an OSError with its errno, and
        # says the address again after the reason)
        why = (e.strerror or str(e)).split(" (while attempting to bind")[0]
        if e.errno in _NOT_THIS_MACHINE:
            # The host is the mistake (not an address of this machine, or no name at all):
            # another port would fail alike.
            raise UsageError(
                f"cannot listen on {args.host}:{args.port} ({why}): {args.host} is "
                "not an address of this machine; give one of its own with --host (127.0.0.1, "
                "the default: this machine only; 0.0.0.0: every address)"
            ) from None
        raise UsageError(
            f"cannot listen on {args.host}:{args.port} ({why}): "
            "pick another with --port, or stop what uses it"
        ) from None
    out.print(cell(f"the live page: {url} (Ctrl-C stops it; runs go on)"))
    if args.host.strip("[]") in ANY_ADDRESS:
        out.print(
            cell(
                f"it listens on every address ({args.host}): from another machine use this "
                "machine's name in the link; anyone with the link (its key) can steer your runs"
            )
        )
    if args.open and not webbrowser.open(url):
        out.print(cell("no browser could be opened here: open the link above yourself"))
    server.run(sockets=[sock])
    return 0


def _named(host: str) -> str:
    """A name a browser can open for the address listened on (every address: this
    machine's, which other machines reach by its own name or address)."""
    if host.strip("[]") in ANY_ADDRESS:
        return "127.0.0.1"
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _check_server(settings: Settings) -> None:
    """An unreachable server is said now (walk10: the page started, printed its link and said
    nothing, and showed no runs); the page still starts and waits for it."""
    import asyncio

    from cli.hints import cli_message
    from client import XSky
    from xsky.errors import ConnectError

    async def ask() -> None:
        async with XSky.connect(settings):
            pass

    try:
        asyncio.run(ask())
    except ConnectError as e:
        err.print(cell(f"note: {cli_message(e)}; the page shows runs once the server answers"))


def _check_run(settings: Settings, run_id: str) -> None:
    """A run named that does not exist is said now, not only by the page later; an
    unreachable server is not this command's to refuse (the page waits for it)."""
    import asyncio

    from client import XSky
    from xsky.errors import ConnectError, RunNotFoundError

    async def ask() -> None:
        async with XSky.connect(settings) as x:
            await (await x.get(run_id)).temporal_status()

    try:
        asyncio.run(ask())
    except RunNotFoundError as e:  # (its fact names the nearest recent run, if one is near)
        raise UsageError(
            f"{e.fact}; `starter.py list` shows the recent ones "
            "(or open the page without an id: it lists them)"
        ) from None
    except ConnectError as e:
        err.print(cell(f"note: {e}; the page shows runs once the server answers"))
