"""Starting a run: its id, the names its plan refers to, the hosts it opens, and the start
itself (workers checked first, the first task seen taken). A large plan goes to the store by
itself (Temporal's External Storage: activities/storage/payloads.py)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowHandle
from temporalio.common import (
    SearchAttributeKey,
    SearchAttributePair,
    TypedSearchAttributes,
    WorkflowIDReusePolicy,
)
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError

from activities.storage import open_objects
from client import leader_calls as calls
from client._consts import RUN_ID
from client.workers import picked_up, require_workers, unserved_error
from xsky.artifacts import page_key, pages_folder
from xsky.config import Settings
from xsky.errors import (
    ConnectError,
    UsageError,
)
from xsky.kinds import queue_kind
from xsky.lineage import NAME as lineage_name
from xsky.plan.models import Workflow
from xsky.run_ids import default_run_id
from xsky.runs import ResumeFrom, RunInput, RunResult
from xsky.security.allow_hosts import host_rule

# -- starting ------------------------------------------------------------------------------------

log = logging.getLogger("xsky.client")

LINEAGE_KEY = SearchAttributeKey.for_keyword_list(lineage_name)


def new_run_id(task_id: str | None, name: str | None) -> str:
    """A run id of its own for every start (so a workspace of its own), short and named for
    the plan: ``xsky-<taskId, or the plan's name>-<6 hex>`` (xsky/run_ids.py)."""
    return default_run_id(task_id, name)


def check_hosts(hosts: list[str]) -> None:
    """Every host of ``RunOptions.allow_hosts`` must be one the worker opens (HOST, HOST:PORT,
    a local or private host with its port): one the worker would drop is a UsageError."""
    for text in hosts:
        try:
            host_rule(text)
        except ValueError as e:
            raise UsageError(
                f"allow_hosts: {e}", "nothing was started", topic="allow-host"
            ) from None


def plan_kinds(wf: Workflow | None) -> list[str]:
    """The agent kinds (task queues) a plan needs; a prompt needs the planner's (llm)."""
    if wf is None:
        return ["llm"]
    return sorted({queue_kind(a.name) for a in wf.agents})


def is_prompt(text: str) -> bool:
    """Words for the planner, not XML text and not the path of a plan file."""
    if text.lstrip().startswith("<") or text.endswith(".xml"):
        return False
    try:
        return not Path(text).is_file()
    except (OSError, ValueError):  # too long or NUL bytes for a path: words
        return True


def carry_pages(settings: Settings, resume: ResumeFrom, run_id: str) -> None:
    """The pages the agents a fork or a follow-up carries over left (activities/tools/
    browsing.py), given to the new run: an agent it runs again after one of them continues
    that agent's page, as it did in the run it comes from. Best effort: without them such an
    agent starts on a page of its own."""
    # (the store's names of the carried agents' pages, listed once: a GET each would be one
    # request per carried agent, most of them for no page)
    carried = {page_key(resume.run_id, r.id): r.id for r in resume.carried}
    try:
        store = open_objects(settings)
        for key in store.keys(pages_folder(resume.run_id)):
            if key in carried:
                store.put(page_key(run_id, carried[key]), store.get(key))
    except Exception as e:  # noqa: BLE001 - any store's errors: the run starts all the same
        log.warning("the pages of %s's agents were not carried to %s: %s", resume.run_id, run_id, e)


async def launch(
    client: Client,
    settings: Settings,
    inp: RunInput,
    workflow_id: str,
    wait_for_worker: float | None = None,
    on_wait: Any = None,
    memo: dict[str, Any] | None = None,
    lineage: list[str] | None = None,
    on_start: Callable[[str], None] | None = None,
) -> WorkflowHandle[Any, RunResult]:
    """Start the leader of a prepared RunInput once workers serve every queue it needs; its
    handle once a worker has taken its first task (an UnservedRunError, the run started, when
    none has within a few seconds). ``lineage``: the runs it descends from (xsky/lineage.py).
    ``on_start(id)`` is called as the run is started: from then on it may exist (the CLI's
    Ctrl-C names it, rather than that some run may have started)."""
    wf = inp.workflow
    summary = (wf.name if wf else " ".join((inp.task_prompt or "").split())[:120]) or workflow_id
    details = (
        f"{len(wf.agents)} agents · taskId {wf.task_id}"
        if wf
        else "planned from a request by the leader"
    )
    if not RUN_ID.fullmatch(workflow_id):
        raise UsageError(
            f"run id {workflow_id!r}: use letters, digits and . _ - : (at most 200), e.g. xsky-nightly-1"
        )
    check_hosts(inp.options.allow_hosts)
    wait = settings.worker_wait if wait_for_worker is None else wait_for_worker
    await require_workers(client, settings, plan_kinds(wf), wait, on_wait)
    if inp.resume is not None and inp.resume.carried:
        await asyncio.to_thread(carry_pages, settings, inp.resume, workflow_id)

    async def start(attributes: TypedSearchAttributes) -> WorkflowHandle[Any, RunResult]:
        return await client.start_workflow(
            calls.WORKFLOW,
            inp,
            result_type=calls.RESULT,
            id=workflow_id,
            task_queue=settings.task_queue,
            static_summary=summary,
            static_details=details,
            # An id names one run (and its workspace and artifacts): never a second one.
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            memo=memo,
            search_attributes=attributes,
        )

    attributes = TypedSearchAttributes.empty
    if lineage:
        attributes = TypedSearchAttributes([SearchAttributePair(LINEAGE_KEY, lineage)])
    if on_start is not None:
        on_start(workflow_id)
    try:
        try:
            handle = await start(attributes)
        except RPCError as e:
            if not lineage or lineage_name not in e.message:
                raise
            # a server without XskyLineage (registered by `starter.py server`): the run
            # starts all the same, found as a descendant only of its parent (XskyResumes)
            handle = await start(TypedSearchAttributes.empty)
    except WorkflowAlreadyStartedError:
        raise UsageError(
            f"a run with id {workflow_id} already exists (its workspace and results are its own)",
            f"see it with XSky.get({workflow_id!r}).status(), or start this one with another id",
            topic="exists",
            subject=workflow_id,
        ) from None
    except RPCError as e:
        raise ConnectError(f"could not start {workflow_id}: {e.message}") from None
    if not await picked_up(client, workflow_id):
        raise unserved_error(settings, settings.task_queue, workflow_id, "run")
    return handle
