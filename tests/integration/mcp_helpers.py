"""What the MCP tests share: the worker settings that configure their servers, and the servers.

The stdio servers run inside the OS sandbox, which sees only the system's folders and the
worker's ``security.read_only_paths``: these name the Python the test server runs on (the
virtualenv and its base installation) and ``tests/mcp`` (the server, and the npm packages
``make install`` put in its ``node_modules``).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from cli.devserver import free_port
from client.settings import resolve_roles
from xsky.config import load_settings
from xsky.plan.models import RoleCapabilityModel

ROOT = Path(__file__).resolve().parents[2]
MCP_DIR = ROOT / "tests" / "mcp"
NODE_MODULES = MCP_DIR / "node_modules" / "@modelcontextprotocol"
READ_ONLY = [sys.base_prefix, sys.prefix, str(MCP_DIR)]

# The test server of tests/mcp/server.py, on the tests' own Python.
TEST_SERVER: dict[str, Any] = {"command": sys.executable, "args": [str(MCP_DIR / "server.py")]}
# The misbehaving server of tests/mcp/hostile_server.py: its secret is its env's TOKEN.
HOSTILE: dict[str, Any] = {"command": sys.executable, "args": [str(MCP_DIR / "hostile_server.py")]}
# Its directory is the run's workspace (it would also take it from the client's MCP roots, but
# only once it has asked for them, which a first call can overtake).
FILESYSTEM: dict[str, Any] = {
    "command": "node",
    "args": [str(NODE_MODULES / "server-filesystem" / "dist" / "index.js"), "${XSKY_WORKSPACE}"],
}
EVERYTHING: dict[str, Any] = {
    "command": "node",
    "args": [str(NODE_MODULES / "server-everything" / "dist" / "index.js"), "stdio"],
}
# A role that holds every tool of the server "t" (the test server).
MCP_ROLE = {"mcpuser": {"description": "uses the test MCP server", "allowedTools": ["mcp__t"]}}


def installed() -> None:
    """The npm packages are the project's (make install): a missing one says how to get it."""
    for package in ("server-filesystem", "server-everything", "conformance"):
        assert (NODE_MODULES / package / "package.json").is_file(), (
            f"@modelcontextprotocol/{package} is not installed in {MCP_DIR}/node_modules: run `make install`"
        )


def write_settings(path: Path, servers: dict[str, Any], **more: Any) -> Path:
    """The worker's user settings: these servers, the sandbox's read-only folders, ``more``."""
    security = {"read_only_paths": READ_ONLY, **more.pop("security", {})}
    path.write_text(json.dumps({"mcpServers": servers, "security": security, **more}))
    return path


def roles() -> dict[str, RoleCapabilityModel]:
    """The roles a starter resolves now (those of the settings a test just wrote), for a run's input."""
    return resolve_roles(load_settings())


def agent(
    agent_id: str, role: str, task: str, config: dict[str, Any] | None = None, depends: str = ""
) -> str:
    cfg = f"<config><![CDATA[{json.dumps(config)}]]></config>" if config else ""
    dep = f' depends="{depends}"' if depends else ""
    return f'<agent name="{role}" id="{agent_id}"{dep}><task>{task}</task>{cfg}</agent>'


@contextmanager
def everything_over_http() -> Iterator[int]:
    """server-everything's streamable HTTP transport on a free port of this machine (a server
    outside every sandbox, as a remote one would be); yields the port."""
    installed()
    port = free_port()
    proc = subprocess.Popen(
        ["node", str(NODE_MODULES / "server-everything" / "dist" / "index.js"), "streamableHttp"],
        env={"PATH": "/usr/local/bin:/usr/bin:/bin", "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, (
                    "server-everything did not start"
                )
                time.sleep(0.1)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)
