"""The skill pipeline's activities, bound to the worker's settings: a delta's steps, scan to route.

Each delta of a transcript is scanned, rendered, split into atoms by the TaskAgent and
committed; then its atoms are routed: new ones to the library (``SkillLibraryWorkflow``), the
UX scores of those that used a library skill to that skill's entity (``SkillEntityWorkflow``),
both by signal-with-start, so a library or an entity exists as soon as something is sent to it.

The worker reads its own settings files for the transcript sources (never the workflow
input), and the model for the TaskAgent from its environment (``XSKY_SKILLS_MODEL``, else
``XSKY_MODEL``; none: the offline splitter). File and database work runs in the worker's
thread pool; the TaskAgent's model calls are async.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities import llm
from activities.beat import FLOOR, heartbeating
from activities.skills.canary_use import scores_of
from activities.skills.render import render_delta
from activities.skills.scan import commit_delta, scan
from activities.skills.task_agent import split_delta
from xsky.config import Settings, load_settings
from xsky.settings_files import SettingsError, load_layers, skill_sources
from xsky.skills.models import (
    ClusterRequest,
    LibraryInput,
    RecordScores,
    RouteInput,
    SkillEntityInput,
    entity_workflow_id,
    library_workflow_id,
)
from xsky.skills.runs import (
    CommitResult,
    DeltaInput,
    RenderResult,
    ScanInput,
    ScanResult,
    SplitResult,
)
from xsky.skills.sources import Source, resolve

T = TypeVar("T")


def configured_sources() -> list[Source]:
    """The transcript sources the settings files register (the defaults when none do)."""
    # the environment as data: $HOME etc. in source paths
    return resolve(skill_sources(load_layers()), os.environ)


def skills_model() -> llm.LLMTarget | None:
    settings = load_settings()
    return llm.target(settings.skills_model, settings=settings)


class SkillActivities:
    def __init__(self, settings: Settings):
        self.settings = settings

    @property
    def home(self) -> Path:
        return self.settings.skills_home

    @activity.defn(name="scan_transcripts")
    def scan_transcripts(self, inp: ScanInput) -> ScanResult:
        activity.heartbeat("scanning")
        try:
            sources = configured_sources()
        except SettingsError as e:
            raise ApplicationError(
                f"cannot read the transcript sources: {e}", type="SettingsError", non_retryable=True
            ) from None
        return scan(self.home, sources, inp)

    @activity.defn(name="render_delta")
    def render_delta(self, inp: DeltaInput) -> RenderResult:
        activity.heartbeat("rendering")
        try:
            return render_delta(self.home, inp.delta)
        except LookupError as e:
            raise ApplicationError(str(e), type="UnknownTranscript", non_retryable=True) from None

    @activity.defn(name="split_delta")
    async def split_delta(self, inp: DeltaInput) -> SplitResult:
        target = skills_model()
        async with heartbeats():
            # Files, SQLite and the splitter block: all of it runs off the worker's event loop.
            result = await off_loop(split_delta, self.home, inp.delta, target, lambda note: None)
        if result.note:  # the model's closing words are about the transcript: not for a history
            result.note = f"the TaskAgent's note ({len(result.note)} characters) is not kept"
        return result

    @activity.defn(name="commit_delta")
    def commit_delta(self, inp: DeltaInput) -> CommitResult:
        activity.heartbeat("committing")
        try:
            return commit_delta(
                self.home, inp.delta, lambda: activity.heartbeat("waiting for the state database")
            )
        except FileNotFoundError as e:
            # The staged work is gone (cleaned after a day, or a different skills home): redo the delta.
            raise ApplicationError(
                f"{inp.delta.label()}: staged work missing ({e}); the next scan redoes it",
                type="StagingMissing",
                non_retryable=True,
            ) from None

    @activity.defn(name="route_atoms")
    async def route_atoms(self, inp: RouteInput) -> int:
        """New atoms to the library; UX scores of atoms that used a library skill to that skill."""
        client = activity.client()
        if inp.new_atoms:
            await client.start_workflow(
                "SkillLibraryWorkflow",
                LibraryInput(heartbeat_timeout=inp.heartbeat_timeout),
                id=library_workflow_id(self.settings.task_queue),
                task_queue=self.settings.skills_queue,
                start_signal="cluster",
                start_signal_args=[ClusterRequest(atoms=inp.new_atoms)],
                static_summary="skill library: TaskClusterAgent for every new atom",
            )
        scores = await asyncio.to_thread(scores_of, self.home, inp)
        for slug, items in scores.items():
            await client.start_workflow(
                "SkillEntityWorkflow",
                SkillEntityInput(slug=slug, heartbeat_timeout=inp.heartbeat_timeout),
                id=entity_workflow_id(self.settings.task_queue, slug),
                task_queue=self.settings.skills_queue,
                start_signal="record_scores",
                start_signal_args=[RecordScores(scores=items)],
            )
        return len(inp.new_atoms) + sum(len(v) for v in scores.values())

    def all(self) -> list[Callable[..., Any]]:
        return [
            self.scan_transcripts,
            self.render_delta,
            self.split_delta,
            self.commit_delta,
            self.route_atoms,
        ]


def _split_offline(home: Path, inp: DeltaInput) -> SplitResult:
    """The offline TaskAgent, synchronously (benchmarks and tools)."""
    return asyncio.run(split_delta(home, inp.delta, None, lambda note: None))


async def off_loop(fn: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
    """Run a coroutine that also does blocking work (files, SQLite, git) on a thread with its
    own event loop, so the worker's loop stays free to heartbeat and serve other activities."""
    return await asyncio.to_thread(lambda: asyncio.run(fn(*args)))


@contextlib.asynccontextmanager
async def heartbeats(every: float | None = None) -> AsyncIterator[None]:
    """Liveness while a model call or the offline splitter runs (a dead worker is noticed fast):
    a heartbeat at once, then one every ``every`` seconds (default: a quarter of the activity's
    heartbeat timeout, :func:`activities.beat.interval`)."""
    activity.heartbeat("splitting")
    async with heartbeating("splitting", every=None if every is None else max(FLOOR, every)):
        yield
