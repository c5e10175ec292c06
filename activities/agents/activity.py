"""``run_agent``: one agent attempt, as a Temporal activity.

Direct-tool mode when the agent's ``<config>`` names a tool (deterministic, no LLM);
otherwise the agent's kind decides: ``llm`` agents answer through the configured provider
(the offline provider when no model is configured). Every result is written to the
artifact store; small ones also travel inline.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities import llm
from activities.agents import skills
from activities.agents.beat import Beat
from activities.agents.direct import DIRECT_IMPLEMENTATIONS, offline_llm
from activities.agents.ledger import AttemptLedger
from activities.agents.loop import AgentLoop, checkpoint_name, load_checkpoint
from activities.agents.transcripts import AgentLog, write_transcript
from activities.artifacts import ArtifactStore
from activities.browser import BrowserPool
from activities.sandbox import egress
from activities.sandbox import workspace as workspaces
from activities.sandbox.confine import SandboxSettings, confinement_for, sandbox_settings
from activities.sandbox.gate import Gate
from activities.tools import NeedsHuman, Tool, ToolContext, ToolError
from xsky.artifacts import MARKER_RE, URI_PREFIX, safe_component
from xsky.config import Settings
from xsky.plan import offline
from xsky.plan.agent_config import tool_arguments, tool_name
from xsky.plan.models import RoleCapabilityModel
from xsky.runs import AgentInput, AgentOutcome, RequestPayload
from xsky.security.permissions import denied_host, trusted_settings
from xsky.security.roles import (
    BUILTIN_ROLES,
    merge_roles,
    person_only_tools,
    trusted_role,
    with_skill_access,
)
from xsky.security.settings import (
    SettingsError,
    SettingsLayer,
    permission_settings,
    project_security_fields,
    role_layers,
    worker_layers,
)
from xsky.security.tools import TOOLS

log = logging.getLogger("xsky.agents")
_WARNED = {"sandbox-off": False}
_IGNORED_PROJECTS: set[str] = set()  # projects whose ignored security settings were logged


class AgentActivities:
    """Activities with the worker's shared resources: settings, artifact store, browsers."""

    def __init__(self, settings: Settings, browsers: BrowserPool | None = None):
        self.settings = settings
        self.store = ArtifactStore(settings.artifacts, share_gid=_sandbox_gid(settings))
        self.browsers = browsers or BrowserPool()

    def workspace_for(self, inp: AgentInput, sandbox: SandboxSettings) -> Path:
        """The run's workspace: where the worker's settings put the name the run gave (never a
        path from the run), checked, made by the worker and handed to the sandbox user."""
        roots = sandbox.workspace_roots
        try:
            folder = workspaces.resolve(inp.workspace, self.settings, inp.run_id, roots)
        except workspaces.WorkspaceRefused as e:
            raise ApplicationError(str(e), type="WorkspaceRefused", non_retryable=True) from None
        owner = sandbox.owner
        problem = workspaces.problem(folder, self.settings, roots, owner[0] if owner else None)
        if problem is not None:
            raise ApplicationError(
                f"{problem}; agents write in their workspace, so the worker keeps workspaces in folders of "
                "their own (leave `workspace` out for .xsky/runs/<id>/workspace, or give a name)",
                type="WorkspaceRefused",
                non_retryable=True,
            )
        return workspaces.make(folder, *(owner or (None, None)))

    @activity.defn(name="run_agent")
    async def run_agent(self, inp: AgentInput) -> AgentOutcome:
        """One attempt of one agent. How it ends is written down first (activities/agents/ledger.py),
        so the next attempt — and the board — know an error from a lost worker."""
        info = activity.info()
        started = info.started_time or datetime.now(UTC)
        ledger = AttemptLedger.of(self.settings.artifacts, inp)
        previous = await asyncio.to_thread(
            ledger.previous,
            info.attempt,
            info.heartbeat_timeout.total_seconds() if info.heartbeat_timeout else None,
        )
        beat = Beat(
            task_id=inp.task_id,
            dispatch=inp.dispatch,
            progress_interval=inp.progress_interval,
            started_at=started,
            previous=previous,
        )
        try:
            outcome = await self._attempt(inp, beat, started)
        except ApplicationError as e:
            raise await self._failed(inp, ledger, info.attempt, e) from None
        except asyncio.CancelledError:
            details = activity.cancellation_details()
            if details is not None and details.timed_out:
                await asyncio.to_thread(
                    ledger.record, info.attempt, "timeout", "ran past its start-to-close timeout"
                )
            raise
        except Exception as e:  # noqa: BLE001 - a bug or an unexpected error: recorded, retried like any error
            raise await self._failed(
                inp,
                ledger,
                info.attempt,
                ApplicationError(f"{type(e).__name__}: {e}", type=type(e).__name__),
            ) from e
        outcome.attempt = info.attempt
        return outcome

    async def _failed(
        self, inp: AgentInput, ledger: AttemptLedger, attempt: int, e: ApplicationError
    ) -> ApplicationError:
        """The error this attempt ends with: recorded; final once the error budget is spent."""
        details = (*e.details, {"attempt": attempt})
        if e.non_retryable:
            await asyncio.to_thread(ledger.record, attempt, "error", e.message)
            return ApplicationError(e.message, *details, type=e.type, non_retryable=True)
        errors = await asyncio.to_thread(ledger.record, attempt, "error", e.message)
        if inp.error_attempts and errors >= inp.error_attempts:
            return ApplicationError(
                f"{e.message} — retries exhausted ({errors} attempts ended in an error)",
                *details,
                type=e.type,
                non_retryable=True,
            )
        return ApplicationError(e.message, *details, type=e.type, non_retryable=False)

    async def _attempt(self, inp: AgentInput, beat: Beat, started: datetime) -> AgentOutcome:
        agent = inp.agent
        layers = self._worker_layers()
        try:
            sandbox = sandbox_settings(layers)
        except SettingsError as e:
            raise ApplicationError(
                f"the worker's settings cannot be used: {e}",
                type="SettingsError",
                non_retryable=True,
            ) from None
        workspace = self.workspace_for(inp, sandbox)
        prefix = f"v{inp.plan_version}-d{inp.dispatch}-"
        unconfined = not sandbox.on
        if unconfined and not _WARNED["sandbox-off"]:
            _WARNED["sandbox-off"] = (
                True  # once per worker process; every run shows it on its board
            )
            log.warning("security.sandbox is OFF in the settings: tools run WITHOUT the OS sandbox")
        # The worker decides from what it trusts: its own settings' rules, the run's approvals.
        inp = inp.model_copy(
            update={"permissions": trusted_settings(permission_settings(layers), inp.permissions)}
        )
        web, command_network = egress.policies(inp.permissions)
        ctx = ToolContext(
            inp.run_id,
            agent.id,
            workspace,
            self.store,
            self.browsers,
            beat,
            prefix,
            beat.progress,
            inp.answers,
            blocked_url=denied_host(inp.permissions),
            unconfined=unconfined,
            egress=web,
            command_network=command_network,
            confinement=confinement_for(self.settings, sandbox, workspace, inp.run_id),
            owner=sandbox.owner,
        )

        # The leader renders large results as markers; swap them for the stored text here.
        try:
            issued = inp.markers if inp.markers is not None else _this_runs_markers(inp)
            task = self.store.expand_markers(agent.task, issued)
            input_text = self.store.expand_markers(agent.input, issued) if agent.input else None
            config = _expand_config(self.store, agent.config, issued)
        except FileNotFoundError as e:
            raise ApplicationError(str(e), type="ArtifactMissing", non_retryable=True) from None

        tool = tool_name(config)
        given = inp.role or BUILTIN_ROLES.get(agent.name)
        known = merge_roles(BUILTIN_ROLES.values(), *role_layers(layers)).get(agent.name)
        # A role the worker does not know gets its privileged tools call by call from a person,
        # unless a person approved the plan that defines it (the leader says so; a run's input
        # cannot: the leader sets it only after an approve_plan update).
        approved = inp.role_approved and known is None
        trusted = given if approved else (trusted_role(given, known) if given is not None else None)
        role = with_skill_access(trusted)
        gate = Gate(
            inp,
            role or RoleCapabilityModel(name=agent.name),
            workspace,
            unconfined,
            person_only=[] if approved else person_only_tools(given, known),
        )
        ctx.record, ctx.readable = gate.network, gate.readable
        gate.protected = [
            str(p.resolve())
            for p in (
                self.settings.home,
                self.settings.artifacts,
                self.settings.runs,
                self.settings.skills_home,
            )
        ]
        if tool is None:
            target = llm.target(
                (config or {}).get("model"), role.suggested_model if role else None, self.settings
            )
            if target is not None:
                if role is None:
                    raise ApplicationError(
                        f"agent {agent.id}: no role named {agent.name!r}",
                        type="AgentConfigError",
                        non_retryable=True,
                    )
                loop = AgentLoop(
                    inp, role, target, ctx, beat, self.store, task, input_text, config or {}, gate
                )
                async with beat.running():
                    try:
                        outcome = await loop.run()
                    except ApplicationError as e:
                        if e.non_retryable:
                            self._transcript(inp, role, target.model, "failed", e.message)
                        raise
                if outcome.kind == "completed":
                    self._transcript(inp, role, target.model, "completed")
                outcome.started_at = started
                outcome.artifacts = ctx.artifacts
                if outcome.kind != "completed":
                    return outcome
                return self._stored(inp, outcome, outcome.result or "")
            if agent.name in ("browser", "file", "shell"):
                raise ApplicationError(
                    f"agent {agent.id} ({agent.name}) has no tool in its <config> and no model is configured; add e.g. "
                    '<config>{"tool": "shell", "command": "ls"}</config>, or set XSKY_MODEL with OPENAI_API_KEY / OPENAI_BASE_URL',
                    type="AgentConfigError",
                    non_retryable=True,
                )
            fn: Tool = offline_llm
            args = {"task": task, "input": input_text}  # llm and roles, offline
        else:
            args = tool_arguments(config)
            found = DIRECT_IMPLEMENTATIONS.get(tool)
            if found is None:
                raise ApplicationError(
                    f"agent {agent.id}: unknown tool {tool!r}; direct tools are {', '.join(sorted(DIRECT_IMPLEMENTATIONS))}",
                    type="AgentConfigError",
                    non_retryable=True,
                )
            fn = found
            if tool == "llm":
                args = {"task": task, "input": input_text}

        direct = tool or "llm"  # an agent that is one tool call (or the offline model)
        agent_log = AgentLog(
            self.store.root,
            inp,
            activity.info().attempt,
            agent.name,
            offline.PROVIDER if fn is offline_llm else None,
        )
        agent_log.tool_call("direct", direct, args)
        called = time.monotonic()
        async with beat.running():
            try:
                # A direct call passes the same permission gate as the loop's (once its arguments
                # are there at all: a missing argument gets the tool's own, clearer error).
                if tool in TOOLS and all(
                    k in args for k in TOOLS[tool].args.model_json_schema().get("required", [])
                ):
                    allowed, why = await gate.check(tool, args)
                    if not allowed:
                        agent_log.decisions(gate.decisions)
                        agent_log.outcome("failed", error=f"{tool} denied: {why}")
                        raise ApplicationError(
                            f"agent {agent.id}: {tool} denied: {why}",
                            gate.details(),
                            type="PermissionDenied",
                            non_retryable=True,
                        )
                out = await fn(ctx, args)
            except ToolError as e:
                agent_log.decisions(gate.decisions)
                agent_log.outcome("failed", error=str(e))
                raise ApplicationError(
                    f"agent {agent.id}: {e}",
                    e.details,
                    gate.details(),
                    type="ToolError",
                    non_retryable=not e.retryable,
                ) from None
            except NeedsHuman as need:
                agent_log.decisions(gate.decisions)
                agent_log.outcome(
                    "question" if need.kind == "question" else "needs_approval",
                    request=need.question or need.tool,
                )
                return AgentOutcome(
                    kind="question" if need.kind == "question" else "needs_approval",
                    request=RequestPayload(
                        question=need.question,
                        tool=need.tool,
                        arguments=need.arguments,
                        rule=need.rule,
                    ),
                    started_at=started,
                    decisions=gate.decisions,
                )
        agent_log.decisions(gate.decisions)
        agent_log.tool_result("direct", direct, out.text, time.monotonic() - called)
        agent_log.outcome("completed", result=out.text)
        outcome = AgentOutcome(
            artifacts=out.artifacts + ctx.artifacts,
            details=out.details,
            provider=out.details.get("provider"),
            started_at=started,
            decisions=gate.decisions,
        )
        return self._stored(inp, outcome, out.text)

    def _worker_layers(self) -> list[SettingsLayer]:
        """The worker's own settings file: it decides the sandbox, the rules and the roles
        (a project's file never does: an agent may have written it)."""
        project = str(self.settings.project_dir.resolve())
        if project not in _IGNORED_PROJECTS:
            _IGNORED_PROJECTS.add(project)
            ignored = project_security_fields(self.settings)
            if ignored:
                log.warning(
                    "the project's settings (%s) set %s; a worker takes security settings from its user "
                    "settings only (%s), so these are ignored here",
                    self.settings.project_dir / ".xsky" / "settings.json",
                    ", ".join(ignored),
                    self.settings.user_settings,
                )
        try:
            return worker_layers(self.settings)
        except SettingsError as e:
            raise ApplicationError(
                f"the worker's settings cannot be read: {e}",
                type="SettingsError",
                non_retryable=True,
            ) from None

    def _transcript(
        self,
        inp: AgentInput,
        role: RoleCapabilityModel,
        model: str,
        status: str,
        error: str | None = None,
    ) -> None:
        """The finished conversation, for the skill pipeline (best effort: the run goes on without it)."""
        cp = load_checkpoint(self.store, inp)
        if cp is None:
            return
        try:
            write_transcript(
                self.settings.home / "transcripts",
                inp,
                role,
                model,
                checkpoint_name(inp).removesuffix(".json"),
                cp.messages,
                status,
                error,
                {"skills": skills.versions(role.skill_names, inp.run_id)},
            )
        except OSError as e:
            log.warning("could not write the transcript of %s: %s", inp.task_id, e)

    def _stored(self, inp: AgentInput, outcome: AgentOutcome, text: str) -> AgentOutcome:
        """Every result goes to the artifact store; small ones also travel inline."""
        prefix = f"v{inp.plan_version}-d{inp.dispatch}-"
        outcome.result_ref = self.store.put_text(
            inp.run_id, inp.agent.id, f"{prefix}result.txt", text
        )
        outcome.result = text if len(text.encode("utf-8")) <= inp.artifact_threshold else None
        return outcome


def _sandbox_gid(settings: Settings) -> int | None:
    """The sandbox user's group when it differs from the worker's (a root worker), else None."""
    try:
        owner = sandbox_settings(worker_layers(settings)).owner
    except (SettingsError, OSError, ValueError):
        return None  # the first attempt reports a broken settings file, with its line
    return owner[1] if owner is not None else None


def _expand_config(store: ArtifactStore, value: Any, issued: list[str]) -> Any:
    if isinstance(value, dict):
        # A shell command's data is in its "values" (expanded there); a marker in the command
        # itself stays as written: stored text is never pasted into code.
        shell = value.get("tool") == "shell"
        return {
            k: v if shell and k == "command" else _expand_config(store, v, issued)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_expand_config(store, v, issued) for v in value]
    if isinstance(value, str):
        return store.expand_markers(value, issued)
    return value


def _this_runs_markers(inp: AgentInput) -> list[str]:
    """For a leader that predates ``markers``: the markers in the texts that name this run's artifacts."""
    prefix = URI_PREFIX + safe_component(inp.run_id) + "/"
    texts = [
        inp.agent.task,
        inp.agent.input or "",
        json.dumps(inp.agent.config or {}, ensure_ascii=False),
    ]
    return [
        URI_PREFIX + m.group(1)
        for t in texts
        for m in MARKER_RE.finditer(t)
        if (URI_PREFIX + m.group(1)).startswith(prefix)
    ]
