"""A stdio MCP server for the tests, written with the official ``mcp`` SDK (``MCPServer``).

Its tools have JSON schemas (from their signatures), structured output, an image, an error, a
slow call that reports progress, a destructive and a read-only one (annotations), one that
crashes, and probes of what its sandbox lets it see. Calls that have effects append a line to
``calls.log`` in its working folder (the run's workspace), so a test counts how often a call
reached it. ``XSKY_TEST_TTL_MS`` sets the ``ttlMs`` of its tools list.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import socket
import sys
import urllib.request
from pathlib import Path

from mcp.server.caching import CacheHint
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import BaseModel

TTL = int(os.environ.get("XSKY_TEST_TTL_MS", "0"))
app = MCPServer("xsky-test", cache_hints={"tools/list": CacheHint(ttl_ms=TTL)} if TTL else None)
COUNT = 0
# The smallest valid PNG (1×1, transparent).
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


def log(line: str) -> None:
    with open("calls.log", "a") as f:
        f.write(line + "\n")


class Weather(BaseModel):
    city: str
    celsius: float


@app.tool()
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    log(f"add {a} {b}")
    return a + b


@app.tool()
def weather(city: str) -> Weather:
    """Today's weather in a city (always mild)."""
    return Weather(city=city, celsius=21.5)


@app.tool()
def picture() -> Image:
    """A tiny PNG picture."""
    return Image(data=PNG, format="png")


@app.tool()
def fail(reason: str) -> str:
    """Always fails, saying why."""
    raise ToolError(
        f"failed on purpose: {reason}"
    )  # a tool's own error: its text reaches the client


@app.tool(annotations=ToolAnnotations(read_only_hint=True))
def count() -> int:
    """How often this was called since the server started (its memory)."""
    global COUNT
    COUNT += 1
    return COUNT


@app.tool(annotations=ToolAnnotations(destructive_hint=True))
def remove(path: str) -> str:
    """Delete a file of the workspace."""
    log(f"remove {path}")
    Path(path).unlink()
    return f"removed {path}"


@app.tool()
async def slow(seconds: float, label: str, ctx: Context) -> str:
    """Works for a while, reporting progress, and logs its start and end. It keeps working past
    ``seconds`` while a file ``<label>.hold`` is in its folder, so a test can stop it mid-call
    however slowly a loaded machine runs."""
    log(f"start {label}")
    done = 0.0
    while done < seconds or Path(f"{label}.hold").exists():
        await ctx.report_progress(done, seconds, f"{label} working")
        await asyncio.sleep(0.2)
        done += 0.2
    log(f"end {label}")
    return f"{label} done after {seconds:g}s"


@app.tool()
def crash(times: int) -> str:
    """Dies (exit 3) the first ``times`` times it is called, then answers."""
    seen = Path("crashes.log")
    crashed = len(seen.read_text().splitlines()) if seen.exists() else 0
    if crashed < times:
        with seen.open("a") as f:
            f.write("crash\n")
        print(
            f"test server: crashing on purpose ({crashed + 1} of {times})",
            file=sys.stderr,
            flush=True,
        )
        os._exit(3)
    return f"answered after {crashed} crashes"


@app.tool()
def probe(path: str = "", host: str = "", port: int = 0, url: str = "") -> str:
    """What the server can see: a file's first bytes, a TCP connection, a URL (through the
    proxy its environment names, if any), its environment's HOME."""
    out = [f"HOME={os.environ.get('HOME')}", f"cwd={os.getcwd()}"]
    if path:
        try:
            out.append(f"read {path}: {Path(path).read_bytes()[:80]!r}")
        except OSError as e:
            out.append(f"read {path}: refused ({e.strerror})")
    if host:
        try:
            with socket.create_connection((host, port), timeout=3):
                out.append(f"connect {host}:{port}: connected")
        except OSError as e:
            out.append(f"connect {host}:{port}: refused ({e})")
    if url:
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                out.append(f"get {url}: {answer.status}")
        except OSError as e:
            out.append(f"get {url}: refused ({e})")
    return "\n".join(out)


@app.tool()
def env(name: str, digest: bool = False) -> str:
    """One environment variable of the server (empty when unset), or its SHA-256."""
    value = os.environ.get(name, "")
    return hashlib.sha256(value.encode()).hexdigest() if digest else value


@app.resource("note://hello", mime_type="text/plain")
def hello() -> str:
    return "hello from a resource"


@app.prompt()
def greet(name: str) -> str:
    """A greeting prompt."""
    return f"Greet {name} warmly."


if __name__ == "__main__":
    app.run()
