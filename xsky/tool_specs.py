"""JSON schemas of the tools, as OpenAI function tools. Descriptions come from xsky.roles.TOOLS."""

from __future__ import annotations

from typing import Any

from xsky.roles import TOOLS


def _obj(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


_S = {"type": "string"}
_N = {"type": "number"}
_B = {"type": "boolean"}

PARAMETERS: dict[str, dict[str, Any]] = {
    "browser_navigate": _obj({"url": {**_S, "description": "http(s) URL"}}, ["url"]),
    "browser_click": _obj({"selector": {**_S, "description": "CSS selector, or text=Visible text"}}, ["selector"]),
    "browser_type": _obj({"selector": _S, "text": _S, "submit": {**_B, "description": "press Enter afterwards"}}, ["selector", "text"]),
    "browser_extract": _obj({"selector": {**_S, "description": "CSS selector; omit for the whole page"}}, []),
    "browser_screenshot": _obj({"full_page": _B}, []),
    "file_read": _obj({"path": {**_S, "description": "relative to the workspace"}}, ["path"]),
    "file_write": _obj({"path": _S, "content": _S, "append": _B}, ["path", "content"]),
    "file_list": _obj({"path": _S, "pattern": {**_S, "description": "glob on file names, e.g. *.py"}, "recursive": _B}, []),
    "code_search": _obj({"pattern": {**_S, "description": "Python regular expression"}, "path": _S,
                         "glob": {**_S, "description": "only files matching, e.g. *.py"}}, ["pattern"]),
    "shell": _obj({"command": _S, "timeout": {**_N, "description": "seconds (default 120)"}}, ["command"]),
    "python_exec": _obj({"code": _S, "timeout": {**_N, "description": "seconds (default 60)"}}, ["code"]),
    "http_get": _obj({"url": _S}, ["url"]),
    "ask_user": _obj({"question": _S}, ["question"]),
    "read_skill": _obj({"name": _S}, ["name"]),
}

assert set(PARAMETERS) == set(TOOLS), "every tool needs a schema"


def openai_tools(names: list[str]) -> list[dict[str, Any]]:
    """Function-tool definitions for the given tool names, in the given order."""
    return [
        {"type": "function", "function": {"name": n, "description": TOOLS[n], "parameters": PARAMETERS[n]}}
        for n in names
        if n in PARAMETERS
    ]
