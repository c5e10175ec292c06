"""The tools agents use, each described once: name, argument model, permission facts, sandbox.

Everything else is derived from here: the OpenAI function schemas the model sees
(:func:`openai_tools`), the descriptions roles list, which argument the permission rules
match (the *subject*: a command, a path, a URL), which tools are read-only (permission mode
``plan``), which start processes (the OS sandbox) or reach the network, which a
plan-defined role may not hold without a person's approval, and which an agent's
``<config>{"tool": …}`` may run directly, without a model (:data:`DIRECT_TOOLS`, checked when
a plan is parsed). The implementations live in ``activities/tools/registry.py`` (the agent
loop's) and ``activities/agents/direct.py`` (direct calls), which check at import that every
tool here has one and that each implementation's arguments are this model's.

Adding a tool: its entry here, its implementation there (and in ``direct.py`` if ``direct``).

The tools of MCP servers are not listed here: they are discovered from the servers the
worker's settings configure (:mod:`xsky.security.mcp`), named ``mcp__<server>__<tool>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from xsky.security.mcp import is_mcp


class _Args(BaseModel):
    # Built when first used (an agent's first tool call, or the model's tool list): a command
    # that imports this table (`validate`) never uses most of them; ~5 ms of its start-up.
    model_config = ConfigDict(extra="forbid", defer_build=True)


class BrowserNavigateArgs(_Args):
    url: str = Field(description="http(s) URL")


class BrowserClickArgs(_Args):
    selector: str = Field(description="CSS selector, or text=Visible text")


class BrowserTypeArgs(_Args):
    selector: str
    text: str
    submit: bool | None = Field(None, description="press Enter afterwards")


class BrowserExtractArgs(_Args):
    selector: str | None = Field(None, description="CSS selector; omit for the whole page")


class BrowserScreenshotArgs(_Args):
    full_page: bool | None = None


class FileReadArgs(_Args):
    path: str = Field(description="relative to the workspace")


class FileWriteArgs(_Args):
    path: str
    content: str
    append: bool | None = None


class FileListArgs(_Args):
    path: str | None = None
    pattern: str | None = Field(None, description="glob on file names, e.g. *.py")
    recursive: bool | None = None


class CodeSearchArgs(_Args):
    pattern: str = Field(description="Python regular expression")
    path: str | None = None
    glob: str | None = Field(None, description="only files matching, e.g. *.py")


class ShellArgs(_Args):
    command: str
    timeout: float | None = Field(None, description="seconds (default 120)")


class PythonExecArgs(_Args):
    code: str
    timeout: float | None = Field(None, description="seconds (default 60)")


class HttpGetArgs(_Args):
    url: str


class AskUserArgs(_Args):
    question: str


class ReadSkillArgs(_Args):
    name: str


class McpListArgs(_Args):
    server: str = Field(description="an MCP server whose tools you have")
    kind: Literal["resources", "prompts"] | None = Field(
        None, description="resources (the default) or prompts"
    )


class McpReadArgs(_Args):
    server: str = Field(description="an MCP server whose tools you have")
    uri: str | None = Field(None, description="a resource's URI, from mcp_list")
    prompt: str | None = Field(None, description="a prompt's name, from mcp_list kind prompts")
    arguments: dict[str, str] | None = Field(None, description="the prompt's arguments")


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    args: type[BaseModel]
    reads: bool = False  # reads files or pages
    writes: bool = False  # changes something: files, or a page's state
    network: bool = False  # reaches other machines
    exec: bool = False  # starts processes (they run in the OS sandbox)
    subject: str | None = None  # the argument permission rules match
    kind: str = "plain"  # how rules read the subject: plain | path | url | command
    direct: bool = False  # an agent's <config>{"tool": …} may run it without a model

    @property
    def read_only(self) -> bool:
        return not (self.writes or self.exec)

    @property
    def privileged(self) -> bool:
        """Can act beyond reading the workspace: a plan-defined role needs a person for it."""
        return self.writes or self.exec or self.network


TOOLS: dict[str, ToolSpec] = {
    t.name: t
    for t in [
        ToolSpec(
            "browser_navigate",
            "open a URL in the agent's own browser page; returns title, text and links",
            BrowserNavigateArgs,
            reads=True,
            network=True,
            subject="url",
            kind="url",
            direct=True,
        ),
        # Clicking and typing act on the page (a form sent, an order placed): not read-only.
        ToolSpec(
            "browser_click",
            "click an element (CSS selector or visible text) on the current page",
            BrowserClickArgs,
            reads=True,
            writes=True,
            network=True,
            subject="selector",
        ),
        ToolSpec(
            "browser_type",
            "type text into an input (CSS selector), optionally pressing Enter",
            BrowserTypeArgs,
            writes=True,
            network=True,
            subject="selector",
        ),
        ToolSpec(
            "browser_extract",
            "the text of the page or of one element (CSS selector)",
            BrowserExtractArgs,
            reads=True,
            subject="selector",
        ),
        ToolSpec(
            "browser_screenshot",
            "save a screenshot of the current page as an artifact",
            BrowserScreenshotArgs,
            reads=True,
        ),
        ToolSpec(
            "file_read",
            "read a file of the run's workspace",
            FileReadArgs,
            reads=True,
            subject="path",
            kind="path",
            direct=True,
        ),
        ToolSpec(
            "file_write",
            "write (or append to) a file of the run's workspace",
            FileWriteArgs,
            writes=True,
            subject="path",
            kind="path",
            direct=True,
        ),
        ToolSpec(
            "file_list",
            "list files of the run's workspace",
            FileListArgs,
            reads=True,
            subject="path",
            kind="path",
            direct=True,
        ),
        ToolSpec(
            "code_search",
            "search the workspace's files with a regular expression",
            CodeSearchArgs,
            reads=True,
            subject="path",
            kind="path",
        ),
        ToolSpec(
            "shell",
            "run a shell command in the run's workspace",
            ShellArgs,
            reads=True,
            writes=True,
            exec=True,
            subject="command",
            kind="command",
            direct=True,
        ),
        ToolSpec(
            "python_exec",
            "run a Python snippet in the run's workspace",
            PythonExecArgs,
            reads=True,
            writes=True,
            exec=True,
            subject="code",
        ),
        ToolSpec(
            "http_get",
            "fetch a URL over HTTP(S)",
            HttpGetArgs,
            reads=True,
            network=True,
            subject="url",
            kind="url",
            direct=True,
        ),
        ToolSpec(
            "ask_user",
            "ask a person a question and wait for the answer",
            AskUserArgs,
            subject="question",
            direct=True,
        ),
        ToolSpec(
            "read_skill", "read a bound skill's SKILL.md", ReadSkillArgs, reads=True, subject="name"
        ),
        # The resources and prompts of the MCP servers whose tools an agent has (an agent with
        # such tools gets these two as well: activities/mcp/toolset.py).
        ToolSpec(
            "mcp_list",
            "list the resources or prompts of an MCP server whose tools you have",
            McpListArgs,
            reads=True,
            subject="server",
        ),
        ToolSpec(
            "mcp_read",
            "read a resource (uri) or get a prompt (prompt, arguments) of an MCP server whose tools you have",
            McpReadArgs,
            reads=True,
            subject="server",
        ),
    ]
}

READ_ONLY_TOOLS = frozenset(n for n, t in TOOLS.items() if t.read_only)
PATH_TOOLS = {n: t.subject for n, t in TOOLS.items() if t.kind == "path" and t.subject}
URL_TOOLS = {n: t.subject for n, t in TOOLS.items() if t.kind == "url" and t.subject}
PRIMARY_ARG = {n: t.subject for n, t in TOOLS.items() if t.subject}
PRIVILEGED_TOOLS = frozenset(n for n, t in TOOLS.items() if t.privileged)
EXEC_OR_NETWORK_TOOLS = frozenset(n for n, t in TOOLS.items() if t.exec or t.network)
# Tools that work in the run's workspace: its files, the processes that run in it, and MCP
# (a stdio server runs in the workspace's sandbox).
WORKSPACE_TOOLS = frozenset(
    n for n, t in TOOLS.items() if t.exec or t.kind == "path" or n.startswith("mcp")
)
PROCESS_TOOLS = frozenset(n for n, t in TOOLS.items() if t.exec)  # they run in the OS sandbox


def privileged(name: str) -> bool:
    """Can the tool act beyond reading the workspace? An MCP tool always can: its server
    decides what it does (its annotations are the server's hints, not facts)."""
    return name in PRIVILEGED_TOOLS or is_mcp(name)


# Kinds of direct agent that are no tool of the agent loop (the model never calls them), so
# they pass no permission gate of their own: each answers from its own arguments, but a watch's
# poll, which is judged as what it looks with (activities/agents/direct.py _gated).
DIRECT_ONLY: dict[str, str] = {
    "llm": "the offline model's answer to the agent's task (no model is configured)",
    "noop": 'returns "result" (default "ok") after "seconds" (default 0): benchmarks, dry runs',
    "gather": 'the results of a forEach\'s items ("items"), in order, as a JSON list (xsky/plan/loops.py)',
    "watch": "one poll of a durable watch: waits for a change (xsky/plan/watches.py)",
}
if set(DIRECT_ONLY) & set(TOOLS):
    raise ImportError(f"direct-only kinds {sorted(set(DIRECT_ONLY) & set(TOOLS))} are also tools")
# What an agent's <config>{"tool": …} may name.
DIRECT_TOOLS: tuple[str, ...] = (*(n for n, t in TOOLS.items() if t.direct), *DIRECT_ONLY)


def parameters(spec: ToolSpec) -> dict[str, Any]:
    """The JSON schema of a tool's arguments, as an OpenAI function's ``parameters``."""
    schema = spec.args.model_json_schema()
    properties = {}
    for name, prop in schema.get("properties", {}).items():
        prop = {k: v for k, v in prop.items() if k not in ("title", "default")}
        if "anyOf" in prop:  # Optional[X]: the model may leave it out; it is never null
            kinds = [p for p in prop.pop("anyOf") if p.get("type") != "null"]
            prop = {**kinds[0], **prop}
        properties[name] = prop
    return {
        "type": "object",
        "properties": properties,
        "required": list(schema.get("required", [])),
        "additionalProperties": False,
    }


def openai_tools(names: list[str]) -> list[dict[str, Any]]:
    """Function-tool definitions for the given tool names, in the given order."""
    return [
        {
            "type": "function",
            "function": {
                "name": n,
                "description": TOOLS[n].description,
                "parameters": parameters(TOOLS[n]),
            },
        }
        for n in names
        if n in TOOLS
    ]


def build_argument_models() -> int:
    """Build every tool's argument model now (a worker, before it serves: a model that cannot
    be built fails the worker's start, not an agent's first call); how many were built."""
    built = 0
    for spec in TOOLS.values():
        if not spec.args.__pydantic_complete__:
            spec.args.model_rebuild()
            built += 1
    return built


def argument_problem(name: str, arguments: dict[str, Any]) -> str | None:
    """Why these arguments do not fit the tool's model (None when they do)."""
    from pydantic import ValidationError

    try:
        TOOLS[name].args.model_validate(arguments)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "arguments"
        return f"{where}: {first['msg']}"
    return None
