"""An MCP client for the conformance suite (npm ``@modelcontextprotocol/conformance``), made of
xsky's own client code: the suite runs ``conformance_client.py <server url>`` with the scenario
in ``MCP_CONFORMANCE_SCENARIO``, and this connects as a worker does — through the egress proxy,
with a rule naming the suite's host and port (a loopback server needs one) — lists the tools
and calls each with arguments made from its schema, as an agent would.

xsky's client answers no elicitation or sampling request and does no OAuth (an HTTP server's
credentials are the headers its configuration names): the scenarios that need them are in
``conformance-baseline.yml``.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from activities.mcp import discovery  # noqa: E402
from activities.mcp.launch import Place  # noqa: E402
from activities.mcp.pool import McpPool, McpUnavailable  # noqa: E402
from activities.mcp.servers import ServerEntry, resolve  # noqa: E402
from activities.sandbox import egress  # noqa: E402
from xsky.security.mcp import McpServerSpec  # noqa: E402
from xsky.security.permissions import PermissionLayer, PermissionSettings  # noqa: E402

EXAMPLES = {"number": 1, "integer": 2, "string": "x", "boolean": True, "array": [], "object": {}}


def example(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments for a tool: one example value for each required property."""
    properties = schema.get("properties") or {}
    return {
        name: EXAMPLES.get(str((properties.get(name) or {}).get("type")), "x")
        for name in schema.get("required") or []
    }


async def main(url: str) -> int:
    parts = urlsplit(url)
    rule = f"network(domain:{parts.hostname}:{parts.port or 80})"
    permissions = PermissionSettings(layers=[PermissionLayer(scope="user", allow=[rule])])
    web, _ = egress.policies(permissions)
    workspace = Path(tempfile.mkdtemp(prefix="xsky-conformance-"))
    place = Place(workspace, None, None, web)
    spec = McpServerSpec(type="http", url=url)
    launch = resolve(ServerEntry("conformance", spec, "the conformance suite"), workspace)
    pool = McpPool(connect_timeout=20)
    try:
        offer = await discovery.discover(pool, launch, place, None)
        for tool in offer.tools:
            result = await pool.call(launch, place, tool.tool, example(tool.input_schema))
            print(f"{tool.tool}: {'error' if result.is_error else 'ok'}")
    except McpUnavailable as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        await pool.close()
        egress.process().stop()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[-1])))
