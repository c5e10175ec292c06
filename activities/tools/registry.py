"""The implementation of every tool of :mod:`xsky.security.tools`, for the agent loop.

Each entry takes the loop's :class:`Session` (the tool context, the agent's browser page,
its role and the skill library its run reads) and the arguments the model gave — already checked against the tool's
argument model — and returns the text the model reads. ``ask_user`` is answered by the
loop itself (it ends the attempt until a person answers). At import, the registry and
this table must agree, and each tool's permission subject must be one of its arguments:
a tool cannot be added to one and forgotten in the other.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from activities.tools import ToolContext, ToolError
from activities.tools.browsing import BrowserSession
from activities.tools.code import code_search, python_exec
from activities.tools.files import file_list, file_read, file_write
from activities.tools.http import http_get
from activities.tools.shell import shell
from activities.tools.skills import SkillLibrary
from xsky.security.roles import RoleCapabilityModel
from xsky.security.tools import TOOLS

if TYPE_CHECKING:
    from activities.mcp.toolset import McpToolset


@dataclass
class Session:
    ctx: ToolContext
    browser: BrowserSession
    role: RoleCapabilityModel
    skills: SkillLibrary  # read_skill's
    mcp: McpToolset | None = None  # the agent's MCP servers (mcp_list, mcp_read)


Impl = Callable[[Session, dict[str, Any]], Awaitable[str]]


async def _shell(s: Session, args: dict[str, Any]) -> str:
    try:
        out = await shell(s.ctx, {**args, "allowFailure": True})
    except ToolError as e:
        return f"ERROR: {e}"
    code = out.details.get("exitCode")
    stderr = out.details.get("stderr", "").strip()
    return f"exit code {code}\n{out.text}" + (f"\n[stderr]\n{stderr}" if stderr else "")


async def _read_skill(s: Session, args: dict[str, Any]) -> str:
    return s.skills.read(str(args.get("name", "")), s.role.skill_names)


async def _mcp_list(s: Session, args: dict[str, Any]) -> str:
    if s.mcp is None:
        raise ToolError("you have no tools of an MCP server, so no resources or prompts to list")
    return await s.mcp.listing(args)


async def _mcp_read(s: Session, args: dict[str, Any]) -> str:
    if s.mcp is None:
        raise ToolError("you have no tools of an MCP server, so no resources or prompts to read")
    return await s.mcp.read(args)


# the loop answers ask_user before it gets here
async def _ask_user(s: Session, args: dict[str, Any]) -> str:
    raise ToolError("ask_user is handled by the agent loop")


IMPLEMENTATIONS: dict[str, Impl] = {
    "browser_navigate": lambda s, a: s.browser.navigate(a),
    "browser_click": lambda s, a: s.browser.click(a),
    "browser_type": lambda s, a: s.browser.type(a),
    "browser_extract": lambda s, a: s.browser.extract(a),
    "browser_screenshot": lambda s, a: s.browser.screenshot(a),
    "file_read": lambda s, a: _text(file_read(s.ctx, a)),
    "file_write": lambda s, a: _text(file_write(s.ctx, a)),
    "file_list": lambda s, a: _text(file_list(s.ctx, a)),
    "code_search": lambda s, a: code_search(s.ctx, a),
    "shell": _shell,
    "python_exec": lambda s, a: python_exec(s.ctx, a),
    "http_get": lambda s, a: _text(http_get(s.ctx, {**a, "allowFailure": True})),
    "ask_user": _ask_user,
    "read_skill": _read_skill,
    "mcp_list": _mcp_list,
    "mcp_read": _mcp_read,
}


async def _text(result: Awaitable[Any]) -> str:
    return (await result).text


def agree(what: str, registered: Iterable[str], implemented: Iterable[str]) -> None:
    """Raise ImportError unless the registry's names and a table of implementations are the same."""
    missing, extra = set(registered) - set(implemented), set(implemented) - set(registered)
    if missing or extra:
        raise ImportError(
            f"tool registry and {what} disagree: no implementation for {sorted(missing)}, "
            f"unregistered implementations {sorted(extra)}"
        )


def _agree() -> None:
    agree("implementations", TOOLS, IMPLEMENTATIONS)
    for name, spec in TOOLS.items():
        fields = set(spec.args.model_fields)
        if spec.subject is not None and spec.subject not in fields:
            raise ImportError(
                f"tool {name}: permission rules match {spec.subject!r}, which is not one of its arguments {sorted(fields)}"
            )


_agree()
