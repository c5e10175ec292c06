"""Direct agents: an agent whose ``<config>`` names a tool is that one call, without a model.

Which tools may be called so is the registry's (``xsky.security.tools.DIRECT_TOOLS``: the
tools marked ``direct``, ``llm`` and ``noop``), the same list a plan is checked against when
it is parsed; :data:`DIRECT_IMPLEMENTATIONS` must name exactly those, checked at import.
"""

from __future__ import annotations

import asyncio
from typing import Any

from activities.tools import Tool, ToolContext, ToolResult, optional_number
from activities.tools.files import file_list, file_read, file_write
from activities.tools.http import http_get
from activities.tools.human import ask_user
from activities.tools.registry import agree
from activities.tools.shell import shell
from activities.tools.web import browser_navigate
from xsky.plan import offline
from xsky.security.tools import DIRECT_TOOLS


async def _noop(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    """Returns ``result`` (default "ok") after ``seconds`` (default 0): benchmarks, dry runs."""
    seconds = optional_number(args, "seconds", 0, 0, 24 * 3600, "noop")
    if seconds:
        await asyncio.sleep(seconds)
    value = args.get("result", "ok")
    return ToolResult(value if isinstance(value, str) else str(value))


async def offline_llm(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    return ToolResult(
        offline.answer(args.get("task", ""), args.get("input")), {"provider": offline.PROVIDER}
    )


DIRECT_IMPLEMENTATIONS: dict[str, Tool] = {
    "shell": shell,
    "file_read": file_read,
    "file_write": file_write,
    "file_list": file_list,
    "browser_navigate": browser_navigate,
    "http_get": http_get,
    "llm": offline_llm,
    "ask_user": ask_user,
    "noop": _noop,
}

agree("direct implementations", DIRECT_TOOLS, DIRECT_IMPLEMENTATIONS)
