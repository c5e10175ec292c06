"""Run an xsky worker: leader workflows and the agents of the chosen kinds.

    python worker.py                      # everything: leader workflows + all agent kinds
    python worker.py --kinds browser      # only browser agents (e.g. on a machine with Chromium)
    python worker.py --kinds shell,file --no-leader
    python worker.py --no-skills          # not the skill pipeline (transcripts → atoms)
    python worker.py --skills             # with XSKY_STORE (several hosts): this host holds the skills home
    python worker.py --metrics-port 9464 --log-format json   # Prometheus /metrics, JSON log lines

Each agent kind has its own task queue, ``<XSKY_TASK_QUEUE>-<kind>``, so workers for one
kind can be added anywhere. The skill pipeline (the transcript watcher's workflows and
activities) runs on ``<XSKY_TASK_QUEUE>-skills``, on the machine whose transcripts it reads and
whose skills home it keeps: with an object store (several hosts) only the one started with
``--skills`` (client/skills_host.py). SIGINT/SIGTERM shut down gracefully: running agents get
``--grace`` seconds to finish, then are handed back to Temporal to retry elsewhere.
With ``OTEL_EXPORTER_OTLP_ENDPOINT`` set, runs are traced over OTLP/HTTP (activities/telemetry.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import difflib
import gc
import importlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.runtime import Runtime
from temporalio.worker import Worker

from activities import llm, telemetry
from activities.agents.activity import AgentActivities
from activities.agents.transcripts import flush_logs
from activities.beat import THROTTLE
from activities.coordinator import CoordinatorActivities
from activities.core_logs import HeldRetries
from activities.hosts import HostActivities, announce_beats
from activities.leader_store import LeaderStore
from activities.mcp.servers import configured
from activities.metrics import AgentAttempts
from activities.planner import PlannerActivities
from activities.sandbox import bwrap, limits, native, secrets
from activities.sandbox.confine import sandbox_settings
from activities.skills.entity import EntityActivities
from activities.skills.library import LibraryActivities
from activities.skills.pipeline import SkillActivities
from activities.storage import io_threads
from activities.worker_guard import guarding
from client.connect import connect_client as connect
from client.skills_host import (
    elsewhere_message,
    serves_skills,
    skills_elsewhere,
    skills_identity,
)
from workflows.leader import LeaderWorkflow
from workflows.missing_input import MissingInput
from workflows.sandbox import workflow_runner
from workflows.skills.entity import SkillEntityWorkflow
from workflows.skills.library import SkillLibraryWorkflow
from workflows.skills.watch import SkillDeltaWorkflow, SkillsScanWorkflow
from workflows.task_time import allow_task_time
from xsky.config import Settings, load_settings, misspelt_settings
from xsky.errors import ConnectError, UsageError
from xsky.kinds import TOOL_AGENT_KINDS
from xsky.security.shell_parse import load_parser
from xsky.security.tools import build_argument_models
from xsky.settings_files import SettingsError, worker_layers
from xsky.storage import ObjectStore
from xsky.wire import build_models

log = logging.getLogger("xsky.worker")


def parse_kinds(raw: str | None) -> list[str]:
    if not raw:
        return list(TOOL_AGENT_KINDS)
    kinds = [k.strip() for k in raw.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in TOOL_AGENT_KINDS]
    if unknown:
        print(
            f"worker.py: unknown kind(s) {', '.join(unknown)}; choose from {', '.join(TOOL_AGENT_KINDS)}",
            file=sys.stderr,
        )
        raise SystemExit(2)
    return kinds


def build_workers(
    client: Client,
    settings: Settings,
    kinds: list[str],
    leader: bool,
    grace: float,
    activities: AgentActivities,
    skills: bool = False,
) -> list[Worker]:
    # The shell parser is loaded on first use; load it here, outside any workflow's sandbox.
    load_parser()
    # The command watchdog is compiled on first use (~0.2 s once per version): here, not in
    # the first command's attempt.
    native.compiled_watchdog()
    # The models' validators are built on first use (xsky/wire.py): here, not in a workflow task
    # (nor, for the tools' arguments, in an agent's first call).
    build_models()
    build_argument_models()
    workers = []
    # run_agent attempts counted (xsky_agent_attempts); a query or update sent without its input
    # refused in one sentence (the stock CLI without --input)
    observed = [AgentAttempts(), MissingInput()]
    if skills:
        pipeline, lib = SkillActivities(settings), LibraryActivities(settings)
        entity = EntityActivities(settings)
        workers.append(
            allow_task_time(
                Worker(
                    client,
                    task_queue=settings.skills_queue,
                    workflows=[
                        SkillsScanWorkflow,
                        SkillDeltaWorkflow,
                        SkillLibraryWorkflow,
                        SkillEntityWorkflow,
                    ],
                    activities=[*pipeline.all(), *lib.all(), *entity.all()],
                    activity_executor=ThreadPoolExecutor(max_workers=8),
                    workflow_runner=workflow_runner(),
                    # the host in the identity: a worker of another host that would serve the
                    # pipeline reads it and refuses (client/skills_host.py)
                    identity=skills_identity(settings, os.getpid()),
                    graceful_shutdown_timeout=timedelta(seconds=grace),
                    max_heartbeat_throttle_interval=timedelta(seconds=THROTTLE),
                    interceptors=observed,
                )
            )
        )
    planner = PlannerActivities()
    coordinator = CoordinatorActivities(settings)
    hosts = HostActivities(settings)
    # No disk in common (an object store): this host's own queue takes the workspace agents of
    # the runs whose workspace lives here, and the claims of workspaces are answered here.
    host = hosting(settings, kinds)
    claims: list[Callable[..., Any]] = [hosts.claim_workspace] if host else []
    if leader:
        # A worker that serves every kind also runs agents on the leader's queue: the server
        # hands each one back with the workflow task that scheduled it (no poll per step).
        here = set(kinds) == set(TOOL_AGENT_KINDS)
        agents: list[Callable[..., Any]] = (
            [activities.run_agent, planner.plan_workflow, coordinator.coordinate, *claims]
            if here
            else []
        )
        workers.append(
            # a large plan's first workflow task: more than the SDK's 2 s on a loaded machine
            allow_task_time(
                Worker(
                    client,
                    task_queue=settings.task_queue,
                    workflows=[LeaderWorkflow],
                    workflow_runner=workflow_runner(),
                    activities=[
                        *LeaderStore(settings, agents_here=here).all(),
                        hosts.host_alive,
                        *agents,
                    ],
                    # what the four kinds' workers would run side by side
                    max_concurrent_activities=400 if here else 100,
                    max_concurrent_workflow_tasks=settings.workflow_slots,
                    sticky_queue_schedule_to_start_timeout=timedelta(
                        seconds=settings.sticky_timeout
                    ),
                    graceful_shutdown_timeout=timedelta(seconds=grace),
                    max_heartbeat_throttle_interval=timedelta(seconds=THROTTLE),
                    interceptors=observed,
                )
            )
        )
    for kind in kinds:
        # The planner and the leader's coordinator need what llm agents need (a model, or
        # the offline provider's answer that there is none).
        extra: list[Callable[..., Any]] = list(claims) if kind in WORKSPACE_KINDS else []
        if kind == "llm":
            extra += [planner.plan_workflow, coordinator.coordinate]
        workers.append(
            Worker(
                client,
                task_queue=settings.kind_queue(kind),
                activities=[activities.run_agent, *extra],
                graceful_shutdown_timeout=timedelta(seconds=grace),
                max_heartbeat_throttle_interval=timedelta(seconds=THROTTLE),
                interceptors=observed,
            )
        )
    if host:
        workers.append(
            Worker(
                client,
                task_queue=settings.host_queue(),
                activities=[activities.run_agent],
                graceful_shutdown_timeout=timedelta(seconds=grace),
                max_heartbeat_throttle_interval=timedelta(seconds=THROTTLE),
                interceptors=observed,
            )
        )
    return workers


def warm_up(settings: Settings, kinds: list[str], skills: bool = False) -> threading.Thread | None:
    """Import, beside the serving worker, the SDKs its agents will likely need: the model
    client when a model server is configured, MCP's when servers are. Before serving they made
    every worker (a lost one's replacement too) start ~2 s later, and most workers of a
    kind use neither; imported at first use they hold the event loop ~1 s once. What they
    load is then frozen out of the cycle collector's sight, as what the worker loaded to
    start is (``main``)."""
    wanted: list[str] = []
    if (kinds or skills) and llm.server_configured(settings):
        wanted.append("openai")
    if kinds:
        with contextlib.suppress(Exception):  # unreadable settings: the agents will say so
            if configured(settings):
                wanted.append("activities.mcp.toolset")
    if not wanted:
        return None

    def load() -> None:
        for name in wanted:
            try:
                importlib.import_module(name)
            except Exception as e:  # noqa: BLE001 - the agent that needs it reports it
                log.warning("could not import %s ahead of the agents: %s", name, e)
        gc.collect()
        gc.freeze()

    thread = threading.Thread(target=load, name="xsky-warm-up", daemon=True)
    thread.start()
    return thread


# Agent kinds that may work in a run's workspace (file, shell; roles on the llm queue).
WORKSPACE_KINDS = frozenset({"file", "shell", "llm"})


async def say_it_beats(objects: ObjectStore, queue: str, identity: str) -> None:
    """The store told that this host's worker sends worker heartbeats: killed before its first
    one, it is found lost within the leader's window, while an idle worker that sends none (an
    older one) keeps its workspace (activities/hosts.py ``_served``)."""
    try:
        # (a store slow to answer: the write goes on on its thread while the worker starts)
        await asyncio.wait_for(asyncio.to_thread(announce_beats, objects, queue, identity), 5.0)
    except TimeoutError:
        pass
    except OSError as e:
        log.warning(
            "could not tell the store this worker sends heartbeats (%s): killed before its "
            "first one, it is found lost only after a minute",
            e.strerror or e,
        )


def hosting(settings: Settings, kinds: list[str]) -> bool:
    """Does this worker hold workspaces on its host's own queue (an object store, no shared disk,
    and it runs agents that use one)?"""
    return settings.store is not None and bool(WORKSPACE_KINDS & set(kinds))


def sandbox_summary(settings: Settings) -> str:
    """One line for the log: is the sandbox on, as whom, with which limits and cgroups."""
    try:
        sandbox = sandbox_settings(worker_layers(settings))
    except SettingsError as e:
        return (
            f"sandbox: the worker's settings cannot be read ({e}); every agent attempt will say so"
        )
    if not sandbox.on:
        return "sandbox: OFF in the worker's settings — tools run WITHOUT the OS sandbox"
    problem = bwrap.ready(sandbox.sandbox_user)
    if problem is not None:
        return f"sandbox: cannot start here, tools that start processes will refuse: {problem}"
    who = bwrap.identity(sandbox.sandbox_user)
    where = limits.hierarchy()
    cgroups = (
        f"cgroup v{where.version} ({', '.join(sorted(where.parents)) or 'one tree'})"
        if where is not None
        else "no cgroup (rlimits only)"
    )
    return (
        f"sandbox: on, as uid {who.uid} on the host, {cgroups}; limits per command: "
        f"{sandbox.limits.described()}"
    )


STORE_CHECK_SECONDS = 15.0


async def store_answers(objects: ObjectStore) -> None:
    """An object store that refuses this worker (a bucket that is not there, a region or
    credentials it does not take) stops it as it starts, saying how to mend it; one that does
    not answer yet is said and waited for by the agents, as they wait for it later."""
    if not objects.shared:  # a local directory: nothing to ask (and obstore not imported)
        return
    from activities.storage.s3 import S3Store, StoreRefused, StoreUnavailable

    if not isinstance(objects, S3Store):
        return
    try:
        # (bounded: a store that takes connections and never answers is retried by obstore
        # for minutes; the worker starts, and its agents wait for the store, saying so)
        await asyncio.wait_for(asyncio.to_thread(objects.check), STORE_CHECK_SECONDS)
    except StoreRefused as e:
        raise UsageError(
            f"the store {objects.where} refuses this worker: {objects.refusal(e)}"
        ) from None
    except (StoreUnavailable, TimeoutError) as e:
        log.warning(
            "the store %s does not answer yet (%s): agents wait for it, saying so on the board",
            objects.where,
            getattr(e, "strerror", None) or f"no answer within {STORE_CHECK_SECONDS:g}s",
        )


async def serve(
    kinds: list[str],
    leader: bool,
    grace: float,
    skills: bool = True,
    runtime: Runtime | None = None,
    tracing: telemetry.Tracing | None = None,
    settings: Settings | None = None,
) -> None:
    settings = settings or load_settings()
    # The default runtime unless telemetry asked for one: a worker's operators see the SDK's warnings.
    runtime = runtime or telemetry.runtime(None, None)
    client = await connect(settings, runtime=runtime)
    # on the client, so the workers and the activities' own calls are traced
    if tracing is not None:
        config = client.config()
        config["interceptors"] = [*config["interceptors"], tracing.interceptor]
        client = Client(**config)
    if skills and settings.store is not None:
        host = await skills_elsewhere(client, settings)
        if host is not None:
            raise UsageError(elsewhere_message(settings, host))
    io_threads(settings)
    activities = AgentActivities(settings)
    await store_answers(activities.store.objects)
    workers = build_workers(client, settings, kinds, leader, grace, activities, skills=skills)
    if hosting(settings, kinds) and telemetry.beats(runtime):
        await say_it_beats(activities.store.objects, settings.host_queue(), client.identity)
    here = leader and set(kinds) == set(TOOL_AGENT_KINDS)
    served = (
        (
            [
                f"leader workflows{' and every kind of agent' if here else ''} on '{settings.task_queue}'"
            ]
            if leader
            else []
        )
        + [f"{k} agents on '{settings.kind_queue(k)}'" for k in kinds]
        + ([f"the skill pipeline on '{settings.skills_queue}'"] if skills else [])
        + (
            [f"workspaces of host {settings.host} on '{settings.host_queue()}'"]
            if hosting(settings, kinds)
            else []
        )
    )
    log.info(
        "xsky worker at %s (namespace %s) serving %s",
        settings.address,
        settings.namespace,
        "; ".join(served),
    )
    if leader and not here:
        # A full worker on the same queue runs agents on the leader's queue (eager dispatch);
        # this one polls it too and cannot run them: with the full one gone, they fail.
        log.warning(
            "this leader worker runs only %s agents: beside a worker that runs every kind on "
            "'%s', agents its runs hand to the leader's queue fail here once that worker is "
            "gone; give every leader worker the same kinds, or start this one with --no-leader",
            ", ".join(kinds) or "no",
            settings.task_queue,
        )
    log.info(
        "artifacts in %s, workspaces in %s",
        activities.store.where.removeprefix("the artifact store at "),
        settings.runs.resolve(),
    )
    log.info("%s", await asyncio.to_thread(sandbox_summary, settings))

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    # Stopped or stuck, this worker's connections to Temporal are closed from outside, so
    # the polls it left open take no more work (activities/worker_guard.py).
    async with guarding(settings.address):
        running = [asyncio.create_task(w.run()) for w in workers]
        warm_up(settings, kinds, skills)
        stopper = asyncio.create_task(stop.wait())
        done, _ = await asyncio.wait([stopper, *running], return_when=asyncio.FIRST_COMPLETED)
        if stopper in done:
            log.info(
                "shutting down: running agents get %.0fs to finish, then go back to Temporal",
                grace,
            )
        await asyncio.gather(*(w.shutdown() for w in workers), return_exceptions=True)
    for task in running:
        if task.done() and task.exception():
            log.error("worker stopped with an error: %s", task.exception())
    await activities.close()  # MCP servers and browsers
    if not await asyncio.to_thread(flush_logs, 5.0):
        log.warning("some agent log lines were not written to the store before the stop")
    if tracing is not None:
        await asyncio.to_thread(tracing.shutdown)
    log.info("worker stopped")


def main(argv: list[str] | None = None) -> int:
    # Before anything runs: API keys and tokens leave this process's environment (agents
    # can read /proc/<worker>/environ); they are handed back through a pipe.
    secrets.hide_from_environment(
        [os.path.abspath(__file__), *(sys.argv[1:] if argv is None else argv)]
    )
    ap = argparse.ArgumentParser(description="Run an xsky worker.")
    ap.add_argument(
        "--kinds",
        help=f"comma-separated agent kinds to serve (default: all of {', '.join(TOOL_AGENT_KINDS)})",
    )
    ap.add_argument("--no-leader", action="store_true", help="do not run leader workflows here")
    which = ap.add_mutually_exclusive_group()
    which.add_argument(
        "--skills",
        dest="skills",
        action="store_const",
        const=True,
        help="run the skill pipeline here: the skills home is this host's (the default on one "
        "machine; with an object store, XSKY_STORE, only one host runs it)",
    )
    which.add_argument(
        "--no-skills",
        dest="skills",
        action="store_const",
        const=False,
        help="do not run the skill pipeline (transcripts → atoms) here",
    )
    ap.add_argument(
        "--grace", type=float, default=10.0, help="seconds running agents get to finish on shutdown"
    )
    ap.add_argument("--log-level", default="INFO")
    ap.add_argument(
        "--log-format",
        choices=["text", "json"],
        default="text",
        help="json: one JSON object per log line",
    )
    ap.add_argument(
        "--metrics-port",
        metavar="PORT",
        help="serve Prometheus metrics on http://0.0.0.0:PORT/metrics (or HOST:PORT)",
    )
    args, unknown = ap.parse_known_args(argv)
    if unknown:  # said with the option it is a typo of, as starter.py does
        known = [o for a in ap._actions for o in a.option_strings]
        word = unknown[0].split("=", 1)[0]
        close = difflib.get_close_matches(word, known, n=1, cutoff=0.6)
        meant = f" — did you mean {close[0]}?" if close else " (`worker.py --help` lists them)"
        ap.exit(2, f"worker.py: error: unknown option {unknown[0]}{meant}\n")
    if not 0 <= args.grace <= 3600:
        ap.error(
            f"--grace {args.grace:g}: give the seconds running agents get to finish, 0 to 3600"
        )
    json_logs = args.log_format == "json"
    if json_logs:
        telemetry.use_json_logs(args.log_level.upper())
    else:
        logging.basicConfig(
            level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
        )
    # No log line carries a secret's value: the worker's own, or one an MCP server was given.
    secrets.install_log_filter()
    kinds = parse_kinds(args.kinds) if args.kinds is not None else list(TOOL_AGENT_KINDS)
    try:
        metrics = (
            telemetry.metrics_address(args.metrics_port) if args.metrics_port is not None else None
        )
        # Temporal core's own lines go through Python's logging, in the worker's format (JSON
        # or text; core's console wrote them with ANSI colours into the log file), its retries
        # while the server does not answer held back (activities/core_logs.py, below).
        core_logs = logging.getLogger("temporalio.core")
        rt = telemetry.runtime(metrics, core_logs)
    except telemetry.TelemetryError as e:
        print(f"worker.py: {e}", file=sys.stderr)
        return 2
    try:
        settings = load_settings()  # the configuration, once, passed down
    except UsageError as e:
        print(f"worker.py: {e}", file=sys.stderr)
        return 2
    for said in misspelt_settings():
        log.warning("%s", said)
    core_logs.addFilter(HeldRetries(settings.address))
    # A home the worker makes is its owner's alone, as `up` makes it (transcripts, the store,
    # command records); one that exists keeps its mode.
    with contextlib.suppress(OSError):
        settings.home.mkdir(mode=0o700, parents=True, exist_ok=True)
    headers = telemetry.otlp_headers(
        secrets.get("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
        or secrets.get("OTEL_EXPORTER_OTLP_HEADERS")
    )
    tracing = telemetry.start_tracing(settings.service_name, headers) if settings.tracing else None
    # What the worker loaded to start (its modules, their classes and tables: ~200,000
    # objects) lives as long as it does: out of the cycle collector's sight, each full
    # collection — which stops every workflow task of the process — walks only what runs made
    # (87 ms less per collection here; a large run's collections land inside its workflow
    # tasks, which the SDK fails after 2 s).
    gc.collect()
    gc.freeze()
    try:
        asyncio.run(
            serve(
                kinds,
                not args.no_leader,
                args.grace,
                serves_skills(settings, args.skills),
                rt,
                tracing,
                settings,
            )
        )
    except ConnectError as e:
        print(f"worker.py: {e}", file=sys.stderr)
        return 1
    except UsageError as e:  # e.g. the skills home is another host's
        print(f"worker.py: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    code = main()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # see starter.py: no finalization race with Temporal's native threads
