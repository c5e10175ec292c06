"""``starter.py demo``: the product's main job on one machine, with nothing to configure.

Starts the local server and a worker if they are not up, serves ``examples/demo-site`` on
a free local port (so the browser agent reads a real page), runs ``examples/demo.xml``
with a live task board, and prints the results and the Web UI link.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cli.render import out
from cli.runs_cmd import follow, print_result
from cli.server_cmd import ensure_server, ensure_worker
from xsky.client import XSky, new_run_id, resolve_permissions
from xsky.config import load_settings
from xsky.runs import RunInput

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "examples" / "demo-site"
PLAN = ROOT / "examples" / "demo.xml"


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        pass


def serve_site(directory: Path) -> ThreadingHTTPServer:
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "demo", help="run the demo plan against a locally served page (starts what it needs)"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=lambda a: asyncio.run(cmd_demo(a)))


async def cmd_demo(args: argparse.Namespace) -> int:
    settings = load_settings()
    ensure_server(settings)
    ensure_worker(settings)
    site = serve_site(SITE)
    try:
        url = f"http://127.0.0.1:{site.server_address[1]}"
        out.print(f"serving the demo site at {url}")
        x = await XSky.connect(settings)
        roles = x.roles()
        workflow = x.load(PLAN, variables={"site": url})
        workflow_id = new_run_id("demo")
        # The demo page is served on this machine: loopback is refused to agents unless a rule
        # names the host, so the demo run names it (as a person would approve it).
        local = ["browser_navigate(domain:127.0.0.1)", "http_get(domain:127.0.0.1)"]
        permissions = resolve_permissions(settings).model_copy(update={"run_rules": local})
        inp = RunInput(
            workflow=workflow, variables={"site": url}, roles=roles, permissions=permissions
        )
        run = await x.start(inp, workflow_id)
        out.print(f"started [bold]{workflow_id}[/]\nWeb UI: {run.ui_url}")
        result = await follow(run, quiet=args.json)
        code = print_result(result, settings, args.json)
        if not args.json:
            out.print("stop the background server and worker with `make down`")
        return code
    finally:
        site.shutdown()
