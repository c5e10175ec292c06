"""The connection a person holds: :class:`XSky`, for starting, finding and listing runs."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Generator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from temporalio.client import (
    Client,
)
from temporalio.runtime import Runtime
from temporalio.service import RPCError

from client.connect import connect_client
from client.described import described_status, status_name
from client.listing import list_query
from client.values import RunSummary
from xsky.config import Settings, load_settings
from xsky.errors import (
    PlanError,
    RunNotFoundError,
    UsageError,
)
from xsky.leader.search import SEARCH_ATTRIBUTES, XSKY_STATUSES
from xsky.lineage import NAME as LINEAGE
from xsky.lineage import TYPE as LINEAGE_TYPE
from xsky.run_ids import near_run_ids

# What starting, loading and reading runs need is imported where it is used: `list` and
# `status` of an unknown id need none of it (the plan's and the leader's models, a tenth of a
# second and more of a command's start-up).
if TYPE_CHECKING:
    from client.run import Run
    from client.skills import Skills
    from xsky.plan.files import LoadedPlan
    from xsky.plan.models import RoleCapabilityModel, Workflow
    from xsky.plan.xml import ParsedWorkflow
    from xsky.runs import AgentReport, RunInput, RunOptions, RunResult


class XSky:
    """A connection to Temporal for starting and steering xsky runs."""

    def __init__(self, client: Client, settings: Settings):
        self.client = client
        self.settings = settings

    @classmethod
    def connect(
        cls,
        settings: Settings | None = None,
        *,
        profile: str | None = None,
        runtime: Runtime | None = None,
    ) -> _Connecting:
        """``async with XSky.connect() as x`` or ``x = await XSky.connect()``."""
        return _Connecting(settings, profile, runtime)

    async def __aenter__(self) -> XSky:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    # -- plans ------------------------------------------------------------------------------

    def roles(self) -> dict[str, RoleCapabilityModel]:
        from client.settings import resolve_roles

        return resolve_roles(self.settings)

    @property
    def skills(self) -> Skills:
        """The skill pipeline: transcript sources, the watch schedule, scans, status, atoms."""
        from client.skills import Skills  # the pipeline's code, for the commands that use it

        return Skills(self.settings, self.client)

    def load(
        self,
        plan: str | Path | Workflow,
        variables: Mapping[str, str] | None = None,
        context_keys: list[str] | None = None,
        roles: Mapping[str, RoleCapabilityModel] | None = None,
        on_note: Callable[[str], None] | None = None,
    ) -> Workflow:
        """A plan from a Workflow, a path to an XML file, or XML text; validated against the
        roles in settings (or ``roles``, already resolved). Raises PlanError listing every
        problem with its line. ``on_note`` hears what reading a file said on the way: an Eko
        plan's line on what was mapped, and each repair made to its XML (file:line:col)."""
        from xsky.plan.files import check_plan_source, load_plan
        from xsky.plan.models import Workflow

        if isinstance(plan, Workflow):
            return plan
        roles = roles or self.roles()
        try:
            if isinstance(plan, str) and plan.lstrip().startswith("<"):
                loaded: ParsedWorkflow | LoadedPlan = check_plan_source(
                    plan.encode("utf-8"),
                    known_agents=list(roles),
                    variables=list(variables or {}),
                    context_keys=context_keys,
                    max_bytes=self.settings.max_plan_bytes,
                    base_roles=roles,
                )
                source = "<plan>"
            else:
                loaded = load_plan(
                    plan,
                    known_agents=list(roles),
                    variables=list(variables or {}),
                    context_keys=context_keys,
                    max_bytes=self.settings.max_plan_bytes,
                    base_roles=roles,
                )
                source = str(plan)
            if on_note is not None and loaded.dialect is not None:
                on_note(loaded.dialect)
                for repair in loaded.repairs:
                    on_note(f"warning: {repair.format(source)}")
            if on_note is not None:
                # what `validate` warns of (a shell agent without a command runs only with a
                # model, …): `run` started such a plan without a word, and it failed at once
                for warning in getattr(loaded, "warnings", []):
                    on_note(f"warning: {warning.format(source)}")
            return loaded.workflow
        except PlanError as e:
            # str(e) names the file (or "<plan>" for XML text) with each problem's line:col.
            source = (
                "<plan>" if isinstance(plan, str) and plan.lstrip().startswith("<") else str(plan)
            )
            e.args = (e.format(source),)
            raise

    # -- runs -------------------------------------------------------------------------------

    async def run(
        self,
        plan_or_prompt: str | Path | Workflow,
        *,
        variables: Mapping[str, str] | None = None,
        context: Mapping[str, Any] | None = None,
        review: bool = False,
        allow_hosts: Sequence[str] = (),
        options: RunOptions | None = None,
        id: str | None = None,
        wait_for_worker: float | None = None,
        on_wait: Any = None,
        on_start: Any = None,
    ) -> Run:
        """Start a run of a plan (a Workflow, an XML file's path, XML text) or of a request in
        words, which the leader plans first. Checks that workers serve every queue it needs.

        ``review`` and ``allow_hosts`` (``"127.0.0.1:8080"``: a host, with its port when it is
        local or private, this run's agents may reach) are shorthands for the RunOptions fields."""
        from client.settings import resolve_permissions
        from client.start import is_prompt, new_run_id
        from xsky.plan.variables import check_names, with_step_values
        from xsky.runs import RunInput, RunOptions

        variables = dict(variables or {})
        context = dict(context or {})
        opts = options or RunOptions()
        if review:
            opts = opts.model_copy(update={"review": True})
        if allow_hosts:
            hosts = list(dict.fromkeys([*opts.allow_hosts, *allow_hosts]))
            opts = opts.model_copy(update={"allow_hosts": hosts})
        roles = self.roles()
        named: tuple[str | None, str | None]  # what the default id is named for
        if isinstance(plan_or_prompt, str) and is_prompt(plan_or_prompt):
            if not plan_or_prompt.strip():
                raise UsageError("the request is empty: say what should be done")
            task_id = str(uuid.uuid4())
            inp = RunInput(
                task_prompt=plan_or_prompt,
                task_id=task_id,
                variables=variables,
                context=context,
                options=opts,
                roles=roles,
                permissions=resolve_permissions(self.settings),
            )
            named = (None, plan_or_prompt)  # a request's first words name its run
        else:
            wf = self.load(plan_or_prompt, variables, list(context), roles)
            check_names(wf, variables, context)
            wf = with_step_values(wf, variables)
            inp = RunInput(
                workflow=wf,
                variables=variables,
                context=context,
                options=opts,
                roles=roles,
                permissions=resolve_permissions(self.settings),
            )
            named = (wf.task_id, wf.name)
        if id is not None:
            return await self.start(
                inp, id, wait_for_worker=wait_for_worker, on_wait=on_wait, on_start=on_start
            )
        for _ in range(3):  # an id drawn twice (1 in 16 million) is drawn again, never reused
            try:
                return await self.start(
                    inp,
                    new_run_id(*named),
                    wait_for_worker=wait_for_worker,
                    on_wait=on_wait,
                    on_start=on_start,
                )
            except UsageError as e:
                if e.topic != "exists":
                    raise
        raise UsageError("three run ids drawn were all taken: start it again, or give an id")

    async def start(
        self,
        inp: RunInput,
        workflow_id: str,
        wait_for_worker: float | None = None,
        on_wait: Any = None,
        memo: dict[str, Any] | None = None,
        on_start: Any = None,
    ) -> Run:
        """Start a run from a prepared RunInput (what :meth:`run` builds); ``on_start(id)`` is
        called as it is started (from then on it may exist)."""
        from client.run import Run
        from client.start import launch

        handle = await launch(
            self.client,
            self.settings,
            inp,
            workflow_id,
            wait_for_worker,
            on_wait,
            memo,
            on_start=on_start,
        )
        return Run(self.client, self.settings, handle)

    async def get(self, run_id: str) -> Run:
        """The run with this id; RunNotFoundError if there is none."""
        try:
            # (asked before the run's own code is imported: an unknown id is answered without it)
            await described_status(self.client.get_workflow_handle(run_id), self.settings)
        except RunNotFoundError as e:
            near = await self._near_ids(run_id)
            if not near:
                raise
            raise RunNotFoundError(
                f"{e.fact} (did you mean {' or '.join(near)}?)",
                e.fix,
                topic=e.topic,
                subject=e.subject,
            ) from None
        from client import leader_calls as calls
        from client.run import Run

        return Run(
            self.client,
            self.settings,
            self.client.get_workflow_handle(run_id, result_type=calls.RESULT),
        )

    async def _near_ids(self, run_id: str, recent: int = 200) -> list[str]:
        """Recent runs' ids close to a mistyped one (walk10: `status` of a typo said only that
        there was no such run): a near spelling, or the id the text ends or is part of
        (`slow-2adde3`, `2adde3`). Best effort: a listing that fails suggests nothing."""
        try:
            ids = [wf.id async for wf in self.client.list_workflows(limit=recent)]
        except Exception:  # noqa: BLE001 - the run was not found; a hint is all this adds
            return []
        return near_run_ids(run_id, ids)

    async def runs(
        self,
        query: str | None = None,
        *,
        status: str | None = None,
        waiting: bool = False,
        failed: bool = False,
        plan: str | None = None,
        descendants: str | None = None,
        limit: int = 20,
    ) -> list[RunSummary]:
        """Recent runs, newest first, filtered by xsky's search attributes and a Temporal list
        query; ``descendants=ID``: the follow-up runs and forks of run ID, and theirs, at any
        depth (xsky/lineage.py)."""
        if status is not None and status not in XSKY_STATUSES:
            raise UsageError(f"status {status!r}: give one of {', '.join(XSKY_STATUSES)}")
        if limit < 1:
            raise UsageError(f"limit {limit}: give 1 or more")
        text = list_query(
            query, status=status, waiting=waiting, failed=failed, plan=plan, descendants=descendants
        )
        rows: list[RunSummary] = []
        try:
            async for wf in self.client.list_workflows(text, limit=limit):
                attrs = {key.name: value for key, value in wf.typed_search_attributes}
                rows.append(
                    RunSummary(
                        wf.id,
                        status_name(wf.status, attrs.get("XskyStatus")),
                        attrs.get("XskyStatus"),
                        attrs.get("XskyPlan"),
                        attrs.get("XskyFailed"),
                        attrs.get("XskyPending"),
                        wf.start_time,
                        wf.close_time,
                    )
                )
        except RPCError as e:
            if "Xsky" in text and ("not defined" in e.message or "invalid" in e.message.lower()):
                raise UsageError(
                    f"this server does not know xsky's search attributes ({e.message})",
                    "register them: "
                    + "; ".join(
                        f"temporal operator search-attribute create --name {n} --type {t}"
                        for n, t in [*SEARCH_ATTRIBUTES.items(), (LINEAGE, LINEAGE_TYPE)]
                    ),
                    topic="search-attributes",
                ) from None
            raise UsageError(f"the list query was refused: {e.message} (query: {text})") from None
        return rows

    # -- results ----------------------------------------------------------------------------

    def reports(self, result: RunResult) -> list[AgentReport]:
        """Every agent's report of a result: inline, or for a large run from the artifact store."""
        from client.results import reports_of

        return reports_of(self.settings, result)

    def result_text(self, report: AgentReport) -> str:
        """An agent's whole result, read from the artifact store when it was stored by reference."""
        from client.results import result_text

        return result_text(self.settings, report)


class _Connecting:
    """What :meth:`XSky.connect` returns: awaitable, or an async context manager."""

    def __init__(self, settings: Settings | None, profile: str | None, runtime: Runtime | None):
        self._settings, self._profile, self._runtime = settings, profile, runtime
        self._x: XSky | None = None

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(
            f"XSky.connect() was not awaited, so it has no {name!r}: write `x = await XSky.connect()` "
            "or `async with XSky.connect() as x:`"
        )

    async def _connect(self) -> XSky:
        settings = self._settings or load_settings(profile=self._profile)
        return XSky(await connect_client(settings, self._runtime), settings)

    def __await__(self) -> Generator[Any, None, XSky]:
        return self._connect().__await__()

    async def __aenter__(self) -> XSky:
        self._x = await self._connect()
        return self._x

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._x = None
