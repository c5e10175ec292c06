"""Direct agents: an agent whose ``<config>`` names a tool is that one call, without a model.

Which tools may be called so is the registry's (``xsky.security.tools.DIRECT_TOOLS``: the
tools marked ``direct``, ``llm`` and ``noop``), the same list a plan is checked against when
it is parsed; :data:`DIRECT_IMPLEMENTATIONS` must name exactly those, checked at import.
With neither a tool nor a model, the ``llm`` agent answers offline (extractively, from its
input, labelled ``offline``); a role (verify, doc … or one of the plan's) fails at once with
the fix, since it needs a model to think. A direct call passes the permission gate the model
loop's calls pass.
"""

from __future__ import annotations

import asyncio
import json
import time
from contextlib import AsyncExitStack
from typing import Any, Literal

from temporalio.exceptions import ApplicationError

from activities.agents import in_doubt
from activities.agents.attempt import Attempt
from activities.agents.transcripts import AgentLog
from activities.tools import NeedsHuman, Tool, ToolContext, ToolError, ToolResult, optional_number
from activities.tools.files import file_list, file_read, file_write
from activities.tools.http import http_get
from activities.tools.human import ask_user
from activities.tools.registry import agree
from activities.tools.shell import shell
from activities.tools.watch import watch
from activities.tools.web import browser_navigate
from xsky.plan import dependency_text, offline, output_schema
from xsky.plan.agent_config import kind_example, tool_arguments
from xsky.runs import AgentOutcome, RequestPayload
from xsky.security.mcp import is_mcp, split
from xsky.security.tools import DIRECT_TOOLS, TOOLS


async def _noop(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    """Returns ``result`` (default "ok") after ``seconds`` (default 0): benchmarks, dry runs."""
    seconds = optional_number(args, "seconds", 0, 0, 24 * 3600, "noop")
    if seconds:
        await asyncio.sleep(seconds)
    value = args.get("result", "ok")
    return ToolResult(value if isinstance(value, str) else str(value))


async def _gather(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    """A forEach agent's result: its items' results (``items``, rendered by the leader and
    expanded from the store here), in order, as one JSON list."""
    items = args.get("items")
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise ToolError('gather needs "items": a list of the items\' results (texts)')
    return ToolResult(json.dumps(items, ensure_ascii=False))


async def offline_llm(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
    """The offline extractive answer: sentences of the agent's input, never invented text.
    With no input there is nothing to answer from, and the agent fails with the fix."""
    source = args.get("input")
    if not isinstance(source, str) or not dependency_text.content(source).strip():
        raise ToolError(
            "the offline llm agent (no model is configured) answers only from its <input> or its "
            "dependencies' results, and this one has none to work from: give it an <input> — "
            "text, or the result of an agent it depends on (<input>{{agent_ID_result}}</input> "
            'with that agent\'s id, and depends="ID") — or set XSKY_MODEL and '
            "OPENAI_BASE_URL (or OPENAI_API_KEY) on the worker",
            details={"provider": offline.PROVIDER},
        )
    return ToolResult(offline.answer(args.get("task", ""), source), {"provider": offline.PROVIDER})


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
    "gather": _gather,
    "watch": watch,
}

agree("direct implementations", DIRECT_TOOLS, DIRECT_IMPLEMENTATIONS)


# Kinds of agent that only act through their tools: without a tool and a model they cannot.
TOOL_KINDS = ("browser", "file", "shell")
# The one kind that answers without a model: offline, extractively (labelled so everywhere).
OFFLINE_KIND = "llm"


async def run_direct(a: Attempt) -> AgentOutcome:
    """The one call a direct agent is: logged, gated, under heartbeats. A completed one
    carries its whole text in ``result`` (``store_result`` keeps it)."""
    name, found, args = direct_call(a)
    agent_log = AgentLog(
        a.log,
        a.key,
        a.number,
        a.name,
        offline.PROVIDER if found is offline_llm else None,
        a.gate.decisions,
    )
    agent_log.tool_call("direct", name, args)
    called = time.monotonic()
    # An MCP tool's servers, and whatever they started, end with the attempt (held below).
    async with a.beat.running(), AsyncExitStack() as held:
        try:
            # An MCP tool: its server's offer first (its hints inform the gate's defaults).
            fn = found or await mcp_tool(a, name, held)
            await _gate(a, *_gated(name, args), agent_log)
            # A call that may have run already (its worker died during it) is not repeated
            # unasked when it must not be: a person's answer may stand in for it.
            decided = await in_doubt.before_direct_call(a, name, args, agent_log)
            out = decided if decided is not None else await fn(a.ctx, args)
        except ToolError as e:
            agent_log.outcome("failed", error=str(e))
            raise ApplicationError(
                f"agent {a.key.agent_id}: {e}",
                e.details,
                a.gate.details(),
                type="ToolError",
                non_retryable=not e.retryable,  # <config> "retries" repeats it: activity.py
            ) from None
        except NeedsHuman as need:
            return _waiting(a, need, agent_log)
    agent_log.tool_result("direct", name, out.text, time.monotonic() - called)
    schema = output_schema.output_schema(a.config) if found is not offline_llm else None
    if schema is not None and (problems := output_schema.result_problems(schema, out.text)[1]):
        # The plan said what its result is; a later {{agent_N_result.field}} reads it. A
        # direct call's result is what it is (no model to correct it): not done, said why.
        error = (
            f"its {name} result does not match the output schema: {'; '.join(problems)} "
            "(make the call's result JSON that fits, or drop the schema; retrying would give "
            "the same)"
        )
        agent_log.outcome("failed", error=error)
        raise ApplicationError(
            f"agent {a.key.agent_id}: {error}",
            a.gate.details(),
            type="OutputSchemaMismatch",
            non_retryable=True,
        )
    agent_log.outcome("completed", result=out.text)
    return AgentOutcome(
        result=out.text,
        artifacts=out.artifacts + a.ctx.artifacts,
        details=out.details,
        provider=out.details.get("provider"),
        started_at=a.started,
        decisions=a.gate.decisions,
    )


def direct_call(a: Attempt) -> tuple[str, Tool | None, dict[str, Any]]:
    """The tool a direct agent calls (``llm`` for the offline model), its implementation (None
    for a tool of an MCP server: :func:`mcp_tool`) and its arguments."""
    if a.tool is None:
        if a.name in TOOL_KINDS:
            raise ApplicationError(
                f"agent {a.key.agent_id} ({a.name}) has no tool in its <config> and no model is configured; add e.g. "
                f"<config>{kind_example(a.name)}</config>, or set XSKY_MODEL with OPENAI_API_KEY / OPENAI_BASE_URL",
                type="AgentConfigError",
                non_retryable=True,
            )
        if a.name != OFFLINE_KIND:  # a role thinks with a model: no boilerplate in its place
            raise ApplicationError(
                f"agent {a.key.agent_id}: role {a.name} needs a model: set XSKY_MODEL and OPENAI_BASE_URL "
                "(or OPENAI_API_KEY) on the worker, or give the agent a tool in its <config>; without a "
                "model only the llm agent answers (offline, extractively from its <input>)",
                type="AgentConfigError",
                non_retryable=True,
            )
        return "llm", offline_llm, {"task": a.task, "input": a.input_text}
    if is_mcp(a.tool):
        return a.tool, None, tool_arguments(a.config)
    found = DIRECT_IMPLEMENTATIONS.get(a.tool)
    if found is None:
        raise ApplicationError(
            f"agent {a.key.agent_id}: unknown tool {a.tool!r}; direct tools are {', '.join(sorted(DIRECT_IMPLEMENTATIONS))}",
            type="AgentConfigError",
            non_retryable=True,
        )
    if a.tool == "llm":
        return a.tool, found, {"task": a.task, "input": a.input_text}
    return a.tool, found, tool_arguments(a.config)


async def mcp_tool(a: Attempt, name: str, held: AsyncExitStack) -> Tool:
    """The call of ``name`` on its MCP server, once the server's offer is known (discovered for
    the run, or from the run's record); a server this worker does not run or a tool it does not
    have fails the agent at once, saying which. Its sessions are released when ``held`` closes."""
    server = split(name)[0]
    from activities.mcp.toolset import McpToolset  # the MCP SDK: imported when first used

    toolset = await McpToolset.prepare(a.ctx, a.gate, a.mcp_pool, a.mcp_servers, [server])
    held.push_async_callback(toolset.release)
    entry = a.mcp_servers.get(server)
    problem = None
    if server not in toolset.servers:
        known = ", ".join(sorted(a.mcp_servers)) or "none"
        problem = (
            f"MCP server {server} is not enabled here: {entry.why_not}"
            if entry is not None
            else f"no MCP server {server} is configured for this worker (configured: {known})"
        )
    elif name not in toolset.tools:
        tools = ", ".join(sorted(toolset.tools)) or "none"
        problem = f"MCP server {server} has no tool named {name}; its tools are {tools}"
    if problem is not None:
        raise ApplicationError(
            f"agent {a.key.agent_id}: {problem}", type="AgentConfigError", non_retryable=True
        )

    async def call(ctx: ToolContext, args: dict[str, Any]) -> ToolResult:
        return await toolset.direct(name, args)

    return call


def _gated(name: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The call the permission gate judges: a watch's poll as what it looks with (the page
    through the browser, a URL through http_get, a workspace file), under the same rules."""
    if name != "watch":
        return name, args
    event = args.get("event")
    if event == "dom":
        return "browser_navigate", {"url": args.get("url")}
    if event == "http":
        return "http_get", {"url": args.get("url")}
    if event == "file":
        return "file_read", {"path": args.get("path")}
    return name, args  # a timer looks at nothing


async def _gate(a: Attempt, tool: str, args: dict[str, Any], agent_log: AgentLog) -> None:
    """The permission gate, once the call's arguments are there at all (a missing argument
    gets the tool's own, clearer error; an MCP tool's rules take no arguments). Raises
    NeedsHuman when a person must decide."""
    spec = TOOLS.get(tool)
    if not is_mcp(tool) and (
        spec is None
        or not all(k in args for k in spec.args.model_json_schema().get("required", []))
    ):
        return
    allowed, why = await a.gate.check(tool, args)
    agent_log.decisions()  # in the log when made, before the call runs (or is denied)
    if not allowed:
        agent_log.outcome("failed", error=f"{tool} denied: {why}")
        raise ApplicationError(
            f"agent {a.key.agent_id}: {tool} denied: {why}",
            a.gate.details(),
            type="PermissionDenied",
            non_retryable=True,
        )


def _waiting(a: Attempt, need: NeedsHuman, agent_log: AgentLog) -> AgentOutcome:
    """The attempt ends waiting for a person: an answer, or a decision on this call."""
    kind: Literal["question", "needs_approval"] = (
        "question" if need.kind == "question" else "needs_approval"
    )
    agent_log.outcome(kind, request=need.question or need.tool)
    return AgentOutcome(
        kind=kind,
        request=RequestPayload(
            question=need.question,
            tool=need.tool,
            arguments=need.arguments,
            rule=need.rule,
            hard=need.hard,
            choices=need.choices,
        ),
        started_at=a.started,
        decisions=a.gate.decisions,
    )
