"""``starter.py demo``: the product's main job on one machine, with nothing to configure.

Starts the local server and a worker if they are not up, serves ``examples/demo-site`` on
a local port (so the browser agent reads a real page), runs ``examples/demo.xml`` with a
live task board, and prints the results and the Web UI link.

Agents reach this machine's addresses only where a person opened the exact host and port:
the demo opens the site's for its own run (``RunOptions.allow_hosts``, as ``run
--allow-host`` does), so the worker it starts is an ordinary one, reading your settings —
the rules you write hold for the runs you start next on it. The site's port is chosen once
and kept in ``<XSKY_HOME>/demo/port``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cli.follow_cmd import follow, print_result
from cli.render import out, shown
from cli.server_cmd import ensure_server, ensure_worker
from client import XSky
from client.settings import resolve_permissions
from client.start import new_run_id
from xsky.config import Settings, load_settings
from xsky.runs import RunInput, RunOptions

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "examples" / "demo-site"
PLAN = ROOT / "examples" / "demo.xml"


class _QuietHandler(SimpleHTTPRequestHandler):
    # stdlib signature
    def log_message(self, format: str, *args: object) -> None:
        pass


def serve_site(directory: Path, port: int = 0) -> ThreadingHTTPServer:
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def demo_site(settings: Settings) -> ThreadingHTTPServer:
    """The demo site on its kept port (a new one if that is taken)."""
    folder = settings.home / "demo"
    folder.mkdir(parents=True, exist_ok=True)
    kept = folder / "port"
    try:
        site = serve_site(SITE, int(kept.read_text()))
    except (OSError, ValueError):
        site = serve_site(SITE)
    kept.write_text(str(site.server_address[1]))
    return site


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo", help="run the demo plan against a locally served page (starts what it needs)"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=lambda a: asyncio.run(cmd_demo(a)))


async def cmd_demo(args: argparse.Namespace) -> int:
    settings = load_settings()
    ensure_server(settings)
    site = demo_site(settings)
    try:
        ensure_worker(settings)
        host = f"127.0.0.1:{site.server_address[1]}"
        url = f"http://{host}"
        out.print(f"serving the demo site at {url}")
        x = await XSky.connect(settings)
        roles = x.roles()
        workflow = x.load(PLAN, variables={"site": url})
        workflow_id = new_run_id(workflow.task_id, workflow.name)
        inp = RunInput(
            workflow=workflow,
            variables={"site": url},
            roles=roles,
            permissions=resolve_permissions(settings),
            options=RunOptions(allow_hosts=[host]),  # opened for this run alone
        )
        run = await x.start(inp, workflow_id)
        out.print(f"started [bold]{shown(workflow_id)}[/]\nWeb UI: {shown(run.ui_url)}")
        result = await follow(run, quiet=args.json)
        code = print_result(result, settings, args.json)
        if not args.json:
            out.print("stop the background server and worker with `make down`")
        return code
    finally:
        site.shutdown()
