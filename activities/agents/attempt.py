"""One attempt, prepared: everything it works with, resolved once before a tool or a model runs.

:func:`prepare` reads the worker's own settings (the sandbox, the rules, the roles, the prices,
the MCP servers: never a project's, an agent may have written it), makes the run's workspace,
expands the artifact markers the leader put in the agent's texts, resolves the role the worker
trusts and the model that runs the agent (if one does), and builds the permission gate and the
tools' context from them. What it returns, an :class:`Attempt`, is frozen and passed down: the
activity (``activity.py``), the direct call (``direct.py``), the model loop (``loop.py``) and
the tools read it; none of them resolves any of it again.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from temporalio.exceptions import ApplicationError

from activities import llm
from activities.agents.beat import Beat
from activities.agents.checkpoint import Checkpoints
from activities.agents.key import AgentKey
from activities.agents.ledger import AttemptLedger, Start
from activities.agents.transcripts import LogTail
from activities.artifacts import ArtifactStore
from activities.browser import BrowserPool
from activities.fsio import Stamp, settled, stamp
from activities.mcp.pool import McpPool
from activities.mcp.servers import ServerEntry, configured
from activities.sandbox import egress, workspace_seed
from activities.sandbox import workspace as workspaces
from activities.sandbox.confine import SandboxSettings, confinement_for, sandbox_settings
from activities.sandbox.gate import Gate
from activities.skills.files import library
from activities.storage.snapshots import Snapshots, workspace_key
from activities.storage.snapshots import mark_path as snapshots_mark
from activities.tools import ToolContext, folder_identity
from activities.tools.skills import SkillLibrary
from xsky.agent_log import transcript_key
from xsky.artifacts import MARKER_RE, URI_PREFIX, run_folder
from xsky.config import Settings
from xsky.plan.agent_config import tool_name
from xsky.plan.budget import BudgetShare, Price
from xsky.plan.models import RoleCapabilityModel, Step
from xsky.runs import AgentInput, AgentOutcome, Answer, DecisionRecord
from xsky.security.permissions import PermissionSettings, denied_host, trusted_settings
from xsky.security.roles import (
    BUILTIN_ROLES,
    merge_roles,
    person_only_tools,
    trusted_role,
    with_skill_access,
)
from xsky.settings_files import (
    SettingsError,
    SettingsLayer,
    permission_settings,
    price_table,
    project_security_fields,
    role_layers,
    worker_layers,
)

log = logging.getLogger("xsky.agents")
_WARNED = {"sandbox-off": False}
_IGNORED_PROJECTS: set[str] = set()  # projects whose ignored security settings were logged

# Direct tools whose one command's end its watchdog records (activities/sandbox/watchdog.py).
RECORDED_TOOLS = frozenset({"shell"})


@dataclass(frozen=True, kw_only=True)
class Attempt:
    """Everything one attempt of one agent works with, resolved by :func:`prepare`."""

    key: AgentKey
    number: int  # Temporal's attempt number of this dispatch
    started: datetime  # when the attempt began working (the activity's clock)
    name: str  # the agent's kind: the name of its role
    task: str  # the task, its input and config, with the leader's artifact markers expanded
    input_text: str | None
    steps: list[Step]  # the agent's steps (<nodes>): its plan, given to its model
    config: dict[str, Any]
    tool: str | None  # the tool the config names: a direct agent, no model
    role: RoleCapabilityModel | None  # the role the worker trusts the agent with (None: none)
    # The model that runs the agent's loop; None: a direct call (its tool, or, with no tool
    # and no model configured, the offline llm).
    target: llm.LLMTarget | None
    goal: str | None  # the run's goal
    answers: list[Answer]  # people's answers to this task's questions
    nudges: list[str]  # the supervisor's messages, as the dispatch brought them
    # Pick up the agent's checkpoint when one exists (False where none can: the first attempt
    # of an agent's first dispatch reads none).
    resume: bool
    artifact_threshold: int  # results up to this many bytes also travel inline
    store: ArtifactStore
    checkpoints: Checkpoints
    transcripts: Path  # where finished conversations go, for the skill pipeline
    skills: SkillLibrary  # the skill library as this run reads it
    beat: Beat
    log: LogTail  # where the agent's log lines go, in batches (the activity writes the rest)
    gate: Gate
    ctx: ToolContext
    # The run's workspace in the store, for an attempt on its workspace's host (workers share
    # no disk: restored before the agent, snapshotted after); None for any other attempt.
    snapshots: Snapshots | None
    share: BudgetShare | None  # what this dispatch may spend (a run with a budget)
    prices: dict[str, Price]  # the worker's price of each model (settings.json prices)
    settings_file: str  # the worker's settings file, for messages that name it
    query_timeout: timedelta  # its queries of the leader: under the sticky wait (Settings)
    # With an object store a command's record is written on this machine first; this puts it in
    # the store, where the next attempt of the dispatch looks on whichever machine it runs (the
    # activity does, when a write comes between the command's end and the kept outcome).
    publish_command: Callable[[], None] | None
    mcp_pool: McpPool  # the worker's MCP sessions
    mcp_servers: dict[str, ServerEntry]  # the MCP servers the worker's settings configure
    ledger: AttemptLedger  # the dispatch's ledger (a direct call that may not be repeated marks it)
    start: Start  # what the attempt learnt from that ledger as it began
    # Keeps the attempt's outcome now, with its model's final conversation in it (one write:
    # Checkpoints.fold), and returns it as it is reported; None where the attempt keeps its
    # outcome only after the agent (a workspace snapshot comes first) or keeps none.
    keep: Callable[[AgentOutcome, bytes], Awaitable[AgentOutcome]] | None = None


def prepare(
    inp: AgentInput,
    *,
    key: AgentKey,
    ledger: AttemptLedger,
    settings: Settings,
    store: ArtifactStore,
    browsers: BrowserPool,
    beat: Beat,
    started: datetime,
    number: int,
    mcp: McpPool | None = None,
    refused: Sequence[DecisionRecord] = (),
    workspace_host: bool = False,
    tail: LogTail | None = None,
    fresh: bool = False,
    start: Start | None = None,
) -> Attempt:
    """The attempt ``inp`` asks for, as this worker lets it run (raises a non-retryable
    ApplicationError for broken settings, a refused workspace, a missing artifact or a model
    without an endpoint).

    ``key`` and ``ledger`` are the dispatch's (its files' names, where its command's end is
    recorded); ``refused``: the input's grants its leader did not confirm; ``workspace_host``:
    the attempt runs on its workspace's host, which restores and snapshots it; ``tail``: where
    its log lines go (default: straight to the store); ``fresh``: the dispatch's first attempt,
    with nothing of its dispatch in the store (ledger.py), so nothing of it is read."""
    view = worker_view(settings)
    layers, sandbox = view.layers, view.sandbox
    task, input_text, config = _expanded(store, inp)
    tool = tool_name(config)
    # An agent whose one call touches no workspace (a no-op, a loop's gather, the offline llm)
    # is not given one: checking and making it would be most of such an attempt's cost.
    free = tool in WORKSPACE_FREE
    workspace = (
        _named_workspace(settings, sandbox, inp.workspace, inp.workspace_of or inp.run_id)
        if free
        else workspace_for(
            settings,
            sandbox,
            inp.workspace,
            inp.workspace_of or inp.run_id,
            used_by=inp.run_id,
            # on its host, a workspace this machine snapshotted comes back from the store
            restorable=snapshots_mark(
                settings.home / "snapshots",
                workspace_key(inp.run_id, inp.workspace, inp.workspace_of),
            )
            if workspace_host
            else None,
            execution=inp.execution_id,
        )
    )
    unconfined = not sandbox.on
    if unconfined and not _WARNED["sandbox-off"]:
        _WARNED["sandbox-off"] = True  # once per worker process; every run shows it on its board
        log.warning("security.sandbox is OFF in the settings: tools run WITHOUT the OS sandbox")
    # The worker decides from what it trusts: its own settings' rules, the run's approvals
    # and the hosts its starter opened.
    permissions = trusted_settings(view.permissions, inp.permissions, inp.allow_hosts)
    # Where its tools may connect: nowhere to go for a call that touches no workspace either
    # (a no-op, a gather, the offline llm), so it is not worked out for one.
    web, command_network = (
        (None, None) if free else egress.policies(permissions, str(settings.user_settings))
    )
    role, person_only = _role(inp, view.roles)
    gate = Gate(
        task_id=key.task_id,
        permissions=permissions,
        approvals=inp.approvals,
        role=role or RoleCapabilityModel(name=inp.agent.name),
        workspace=workspace,
        unconfined=unconfined,
        person_only=person_only,
        protected=list(view.protected),
        refused=refused,
        named_only=free,
    )
    # The dispatch's one command: its end is recorded, and a later attempt returns it.
    record, publish = (
        ledger.command_record(
            settings.home,
            fetch=not fresh,
            after_error=start is not None and start.record_cleared,
        )
        if tool in RECORDED_TOOLS
        else (None, None)
    )
    ctx = ToolContext(
        run_id=key.run_id,
        agent_id=key.agent_id,
        workspace=workspace,
        store=store,
        browsers=browsers,
        heartbeat=beat,
        file_prefix=key.file_prefix,
        progress=beat.progress,
        answers=inp.answers,
        blocked_url=denied_host(permissions),
        confinement=None
        if free
        else confinement_for(
            settings, sandbox, workspace, key.run_id, attempt_key=key.idempotency_key
        ),
        unconfined=unconfined,
        egress=web,
        command_network=command_network,
        record=gate.network,
        readable=gate.readable,
        owner=sandbox.owner,
        command_record=record,
        command_spare=ledger.command_spare(settings.home)
        if record is not None and publish is None
        else None,
        # (its own page too when it goes on from its checkpoint: after a question, a lost worker)
        page_from=[*inp.agent.depends, *([key.agent_id] if _resumes(inp, fresh, key) else [])],
        workspace_identity=folder_identity(workspace),
    )
    config = config or {}
    # Without a tool the configured model runs the agent's loop (None: no model is configured)
    target = (
        llm.target(config.get("model"), role.suggested_model if role else None, settings)
        if tool is None
        else None
    )
    snapshots = (
        Snapshots(
            store.objects,
            workspace_key(inp.run_id, inp.workspace, inp.workspace_of),
            workspace,
            settings.home / "snapshots",
            sandbox.owner,
            seed=workspace_key(inp.workspace_from, None, None)
            if inp.workspace_from and not inp.workspace
            else None,
        )
        if workspace_host and not free
        else None
    )
    return Attempt(
        key=key,
        number=number,
        started=started,
        name=inp.agent.name,
        task=task,
        input_text=input_text,
        steps=inp.agent.steps,
        config=config,
        tool=tool,
        role=role,
        target=target,
        goal=inp.goal,
        answers=inp.answers,
        nudges=inp.nudges,
        # an agent's checkpoint is kept across its dispatches: none before its first
        resume=_resumes(inp, fresh, key),
        artifact_threshold=inp.artifact_threshold,
        store=store,
        checkpoints=Checkpoints(store, key, kept_at=ledger.outcome_key),
        transcripts=settings.home / "transcripts",
        skills=SkillLibrary(library(settings.skills_home), key.run_id),
        beat=beat,
        log=tail or LogTail(store.objects, transcript_key(key.run_id, key.agent_id)),
        gate=gate,
        ctx=ctx,
        snapshots=snapshots,
        share=inp.budget_share,
        prices=view.prices,
        settings_file=str(settings.user_settings),
        query_timeout=settings.query_timeout,
        publish_command=publish,
        mcp_pool=mcp or McpPool(),
        # (a no-op, a gather or the offline llm calls no MCP tool: the project's files unread)
        mcp_servers={} if free else configured(settings, layers),
        ledger=ledger,
        start=start or (Start.first() if fresh else Start(None, False, 0)),
    )


# -- the worker's settings, its workspace ----------------------------------------------------


@dataclass(frozen=True)
class WorkerView:
    """What an attempt takes from the worker's own settings file, read and checked once per
    change of the file (:func:`worker_view`): every attempt of the worker decides with it."""

    layers: list[SettingsLayer]
    sandbox: SandboxSettings
    permissions: PermissionSettings  # the file's rules (a run's are added per attempt)
    roles: dict[str, RoleCapabilityModel]  # the roles the worker knows: built in, then its own
    prices: dict[str, Price]
    protected: tuple[str, ...]  # xsky's own folders, which no tool may touch (real paths)


# The view of each settings file, with the file's stamp when it was read (fsio.stamp: its
# inode, size and modification time): read again when any of them changes.
_VIEWS: dict[tuple[str, ...], tuple[Stamp | None, WorkerView]] = {}


def worker_view(settings: Settings) -> WorkerView:
    """The worker's settings as attempts use them: parsed, checked and merged once, and again
    whenever its settings file changes (a broken file fails every attempt, with its line)."""
    worker_settings_warnings(settings)
    place = (
        str(settings.user_settings),
        str(settings.home),
        str(settings.artifacts),
        str(settings.runs),
        str(settings.skills_home),
    )
    now = stamp(settings.user_settings)
    known = _VIEWS.get(place)
    if known is not None and known[0] == now and settled(now):
        return known[1]
    layers = worker_settings(settings)
    view = WorkerView(
        layers=layers,
        sandbox=_sandbox(layers),
        permissions=permission_settings(layers),
        roles=merge_roles(BUILTIN_ROLES.values(), *role_layers(layers)),
        prices=price_table(layers),
        protected=tuple(
            str(p.resolve())
            for p in (settings.home, settings.artifacts, settings.runs, settings.skills_home)
        ),
    )
    if len(_VIEWS) >= 16:  # one per settings a process works with: a few in tests
        _VIEWS.clear()
    _VIEWS[place] = (now, view)
    return view


def worker_settings_warnings(settings: Settings) -> None:
    """Once per project: the security settings its file sets, which the worker ignores."""
    project = str(settings.project_dir)
    if project in _IGNORED_PROJECTS:
        return
    _IGNORED_PROJECTS.add(project)
    ignored = project_security_fields(settings)
    if ignored:
        log.warning(
            "the project's settings (%s) set %s; a worker takes security settings from its user "
            "settings only (%s), so these are ignored here",
            settings.project_dir / ".xsky" / "settings.json",
            ", ".join(ignored),
            settings.user_settings,
        )


def worker_settings(settings: Settings) -> list[SettingsLayer]:
    """The worker's own settings file: it decides the sandbox, the rules and the roles
    (a project's file never does: an agent may have written it)."""
    try:
        return worker_layers(settings)
    except SettingsError as e:
        raise ApplicationError(
            f"the worker's settings cannot be read: {e}",
            type="SettingsError",
            non_retryable=True,
        ) from None


def _sandbox(layers: list[SettingsLayer]) -> SandboxSettings:
    try:
        return sandbox_settings(layers)
    except SettingsError as e:
        raise ApplicationError(
            f"the worker's settings cannot be used: {e}",
            type="SettingsError",
            non_retryable=True,
        ) from None


# Direct tools that touch no workspace (activities/agents/direct.py): their attempts get none.
WORKSPACE_FREE = frozenset({"noop", "gather", "llm"})


def _resumes(inp: AgentInput, fresh: bool, key: AgentKey) -> bool:
    """Does the attempt go on from its checkpoint? An agent's checkpoint is kept across its
    dispatches: there is none before the first attempt of its first."""
    return inp.resume and not (fresh and key.dispatch == 1 and key.plan_version == 1)


def _named_workspace(
    settings: Settings, sandbox: SandboxSettings, name: str | None, run_id: str
) -> Path:
    """Where the run's workspace would be, neither checked nor made (an attempt that touches
    none: the path only names it)."""
    try:
        return workspaces.resolve(name, settings, run_id, sandbox.workspace_roots)
    except workspaces.WorkspaceRefused as e:
        raise ApplicationError(str(e), type="WorkspaceRefused", non_retryable=True) from None


def fork_copy(settings: Settings, inp: AgentInput) -> Callable[[], bool] | None:
    """The copy that makes a fork's workspace from the run it forks, when its first agent that
    works in one starts (activities/sandbox/workspace_seed.py; it says whether it copied) —
    to run before ``prepare``, in a thread of its own: a large workspace takes a while. None
    when there is none to make (not a fork, an agent that needs no workspace, or the fork's
    is made: most of a fork's attempts, told apart without a thread). (On a workspace host the
    copy is the first restore: ``Attempt.snapshots``.)"""
    if inp.workspace_from is None or inp.workspace or tool_name(inp.agent.config) in WORKSPACE_FREE:
        return None
    sandbox = worker_view(settings).sandbox
    roots = sandbox.workspace_roots
    try:
        folder = workspaces.resolve(None, settings, inp.workspace_of or inp.run_id, roots)
        source = workspaces.resolve(None, settings, inp.workspace_from, roots)
    except workspaces.WorkspaceRefused as e:
        raise ApplicationError(str(e), type="WorkspaceRefused", non_retryable=True) from None
    if os.path.lexists(folder):
        return None  # (seed looks again: two attempts may copy at once)
    if os.path.exists(workspaces.used_mark(settings, inp.run_id, folder, inp.execution_id)):
        # made and used by this run here, and gone: deleted under the fork — copied again from
        # the run forked, its own files were replaced silently; workspace_for says it is gone
        return None

    def copy() -> bool:
        try:
            return workspace_seed.seed(folder, source, sandbox.owner)
        except workspace_seed.SeedFailed as e:
            raise ApplicationError(str(e), type="WorkspaceRefused", non_retryable=True) from None

    return copy


def workspace_for(
    settings: Settings,
    sandbox: SandboxSettings,
    name: str | None,
    run_id: str,
    *,
    used_by: str | None = None,
    restorable: Path | None = None,
    execution: str | None = None,
) -> Path:
    """The workspace of run ``run_id`` (a follow-up run works where the run it resumes worked):
    where the worker's settings put the ``name`` the run gave (never a path from the run),
    checked, made by the worker and handed to the sandbox user.

    ``used_by`` (the attempt's own run): a workspace this worker already made or used for that
    run and that is gone now was deleted under the run — its agents' files with it. It is not
    made again empty (a later agent "completed" over work that was gone, chaos14/chaos15): the
    attempt fails, non-retryable, saying so. The mark is kept outside the workspace, in
    ``$XSKY_HOME/workspace-marks`` (no agent may write there), per run: another run naming the
    same workspace, or the run's first attempt on a new host, makes it as before.

    ``restorable`` (an attempt on its workspace's host): this machine's snapshot mark of the
    workspace. Where it is, every file the run's agents left is in the store as of the last
    one's end: the workspace is made and that mark dropped, so the attempt's restore brings it
    back whole (as on a host taking it over) rather than failing the run (review20).

    A new run of the same id makes it too (``execution``: the run's first execution, in the
    mark's name)."""
    roots = sandbox.workspace_roots
    try:
        folder = workspaces.resolve(name, settings, run_id, roots)
    except workspaces.WorkspaceRefused as e:
        raise ApplicationError(str(e), type="WorkspaceRefused", non_retryable=True) from None
    owner = sandbox.owner
    problem = workspaces.problem(folder, settings, roots, owner[0] if owner else None)
    if problem is not None:
        raise ApplicationError(
            f"{problem}; agents write in their workspace, so the worker keeps workspaces in folders of "
            "their own (leave `workspace` out for .xsky/runs/<id>/workspace, or give a name)",
            type="WorkspaceRefused",
            non_retryable=True,
        )
    mark = workspaces.used_mark(settings, used_by or run_id, folder, execution)
    vanished = not os.path.lexists(folder) and os.path.exists(mark)
    if vanished and restorable is not None and os.path.exists(restorable):
        log.warning(
            "the workspace %s of run %s is gone on this host: it is restored from the store's "
            "newest snapshot",
            folder,
            used_by or run_id,
        )
        os.unlink(restorable)  # (the restore then reads no mark: it fetches every file)
    elif vanished:
        raise ApplicationError(
            f"the workspace {folder} is gone: it was deleted after this run's agents worked in it "
            "on this worker, and their files with it; it is not made again empty (what the run "
            "did there would be lost silently) — restore it and retry the agent, or fork the run "
            "from an agent before its files were made",
            type="WorkspaceVanished",
            non_retryable=True,
        )
    made = workspaces.make(folder, *(owner or (None, None)))
    if not os.path.exists(mark):
        try:
            workspaces.mark_used(mark, used_by or run_id, folder)
        except OSError as e:  # a full or read-only $XSKY_HOME: the agent still runs
            log.warning(
                "could not note that run %s uses the workspace %s (%s): were it deleted under "
                "the run, it would be made again empty",
                used_by or run_id,
                folder,
                e,
            )
    return made


# -- the agent: its texts, its role ----------------------------------------------------------


def _role(
    inp: AgentInput, roles: dict[str, RoleCapabilityModel]
) -> tuple[RoleCapabilityModel | None, list[str]]:
    """The role the worker lets the agent act with, and the tools only a person may allow.

    A role the worker does not know gets its privileged tools call by call from a person,
    unless a person approved the plan that defines it (the leader says so; a run's input
    cannot: the leader sets it only after an approve_plan update)."""
    name = inp.agent.name
    given = inp.role or BUILTIN_ROLES.get(name)
    known = roles.get(name)
    approved = inp.role_approved and known is None
    trusted = given if approved else (trusted_role(given, known) if given is not None else None)
    return with_skill_access(trusted), [] if approved else person_only_tools(given, known)


def _expanded(store: ArtifactStore, inp: AgentInput) -> tuple[str, str | None, Any]:
    """The task, input and config with the leader's markers for large results swapped for
    the stored text."""
    agent = inp.agent
    try:
        issued = inp.markers if inp.markers is not None else _this_runs_markers(inp)
        task = store.expand_markers(agent.task, issued)
        input_text = store.expand_markers(agent.input, issued) if agent.input else None
        return task, input_text, _expand_config(store, agent.config, issued)
    except FileNotFoundError as e:
        raise ApplicationError(str(e), type="ArtifactMissing", non_retryable=True) from None


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
    prefix = URI_PREFIX + run_folder(inp.run_id) + "/"
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
